package podautoscaler

import (
	"math"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// recommendation is one desired replica count the controller computed.
type recommendation struct {
	replicas int32
	at       time.Time
}

// scaleEvent is one change of the target's replicas the controller made.
type scaleEvent struct {
	change   int32
	at       time.Time
	outdated bool
}

// memory is what the controller remembers per HPA between syncs, as
// upstream's recommendations, scaleUpEvents and scaleDownEvents.
type memory struct {
	mu              sync.Mutex
	recommendations map[string][]recommendation
	scaleUps        map[string][]scaleEvent
	scaleDowns      map[string][]scaleEvent
}

func newMemory() *memory {
	return &memory{recommendations: map[string][]recommendation{}, scaleUps: map[string][]scaleEvent{}, scaleDowns: map[string][]scaleEvent{}}
}

func (m *memory) forget(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.recommendations, key)
	delete(m.scaleUps, key)
	delete(m.scaleDowns, key)
}

// normalization is upstream's NormalizationArg.
type normalization struct {
	key                      string
	scaleUp, scaleDown       *autoscalingv2.HPAScalingRules
	minReplicas, maxReplicas int32
	currentReplicas, desired int32
}

// stabilize is stabilizeRecommendation, for HPAs without behavior: the
// highest recommendation of the downscale window.
func (m *memory) stabilize(key string, desired int32, window time.Duration, now time.Time) int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	highest := desired
	old := -1
	cutoff := now.Add(-window)
	for i, r := range m.recommendations[key] {
		if r.at.Before(cutoff) {
			old = i
		} else if r.replicas > highest {
			highest = r.replicas
		}
	}
	m.record(key, desired, old, now)
	return highest
}

func (m *memory) record(key string, desired int32, old int, now time.Time) {
	if old >= 0 {
		m.recommendations[key][old] = recommendation{desired, now}
	} else {
		m.recommendations[key] = append(m.recommendations[key], recommendation{desired, now})
	}
}

// stabilizeWithBehaviors is stabilizeRecommendationWithBehaviors: the
// recommendation held between the lowest of the scale-up window and the
// highest of the scale-down window, with the reason and message of the
// AbleToScale condition when it differs.
func (m *memory) stabilizeWithBehaviors(a normalization, now time.Time) (int32, string, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	up, down := a.desired, a.desired
	upCutoff := now.Add(-time.Duration(*a.scaleUp.StabilizationWindowSeconds) * time.Second)
	downCutoff := now.Add(-time.Duration(*a.scaleDown.StabilizationWindowSeconds) * time.Second)
	old := -1
	for i, r := range m.recommendations[a.key] {
		if r.at.After(upCutoff) {
			up = min(r.replicas, up)
		}
		if r.at.After(downCutoff) {
			down = max(r.replicas, down)
		}
		if r.at.Before(upCutoff) && r.at.Before(downCutoff) {
			old = i
		}
	}
	rec := a.currentReplicas
	if rec < up {
		rec = up
	}
	if rec > down {
		rec = down
	}
	m.record(a.key, a.desired, old, now)
	if a.desired >= a.currentReplicas {
		return rec, "ScaleUpStabilized", "recent recommendations were lower than current one, applying the lowest recent recommendation"
	}
	return rec, "ScaleDownStabilized", "recent recommendations were higher than current one, applying the highest recent recommendation"
}

// limitWithBehaviors is convertDesiredReplicasWithBehaviorRate: the
// desired count held to the scaling policies' rates and min/max, with the
// ScalingLimited reason and message.
func (m *memory) limitWithBehaviors(a normalization, now time.Time) (int32, string, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case a.desired > a.currentReplicas:
		limit := scaleUpLimit(a.currentReplicas, m.scaleUps[a.key], m.scaleDowns[a.key], a.scaleUp, now)
		limit = max(limit, a.currentReplicas)
		allowed, reason, msg := a.maxReplicas, "TooManyReplicas", "the desired replica count is more than the maximum replica count"
		if allowed > limit {
			allowed, reason, msg = limit, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"
		}
		if a.desired > allowed {
			return allowed, reason, msg
		}
	case a.desired < a.currentReplicas:
		limit := scaleDownLimit(a.currentReplicas, m.scaleUps[a.key], m.scaleDowns[a.key], a.scaleDown, now)
		limit = min(limit, a.currentReplicas)
		allowed, reason, msg := a.minReplicas, "TooFewReplicas", "the desired replica count is less than the minimum replica count"
		if allowed < limit {
			allowed, reason, msg = limit, "ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate"
		}
		if a.desired < allowed {
			return allowed, reason, msg
		}
	}
	return a.desired, "DesiredWithinRange", "the desired count is within the acceptable range"
}

// limitWithoutBehavior is convertDesiredReplicasWithRules, for HPAs
// without behavior: at most max(2×current, 4) at once, within min/max.
func limitWithoutBehavior(current, desired, minReplicas, maxReplicas int32) (int32, string, string) {
	allowed, reason, msg := maxReplicas, "TooManyReplicas", "the desired replica count is more than the maximum replica count"
	if limit := max(2*current, 4); maxReplicas > limit {
		allowed, reason, msg = limit, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"
	}
	switch {
	case desired < minReplicas:
		return minReplicas, "TooFewReplicas", "the desired replica count is less than the minimum replica count"
	case desired > allowed:
		return allowed, reason, msg
	}
	return desired, "DesiredWithinRange", "the desired count is within the acceptable range"
}

// storeScaleEvent is storeScaleEvent: it records a rescale so the policies'
// periods count it, reusing an entry older than every period.
func (m *memory) storeScaleEvent(key string, behavior *autoscalingv2.HorizontalPodAutoscalerBehavior, prev, next int32, now time.Time) {
	if behavior == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	events, rules, change := m.scaleUps, behavior.ScaleUp, next-prev
	if next < prev {
		events, rules, change = m.scaleDowns, behavior.ScaleDown, prev-next
	}
	longest := longestPeriod(rules)
	list := events[key]
	for i := range list {
		if list[i].at.Add(longest).Before(now) {
			list[i].outdated = true
		}
	}
	ev := scaleEvent{change: change, at: now}
	for i := range list {
		if list[i].outdated {
			list[i] = ev
			events[key] = list
			return
		}
	}
	events[key] = append(list, ev)
}

func longestPeriod(rules *autoscalingv2.HPAScalingRules) time.Duration {
	var longest int32
	if rules != nil {
		for _, p := range rules.Policies {
			longest = max(longest, p.PeriodSeconds)
		}
	}
	return time.Duration(longest) * time.Second
}

// changeInPeriod is getReplicasChangePerPeriod.
func changeInPeriod(periodSeconds int32, events []scaleEvent, now time.Time) int32 {
	cutoff := now.Add(-time.Duration(periodSeconds) * time.Second)
	var n int32
	for _, e := range events {
		if e.at.After(cutoff) {
			n += e.change
		}
	}
	return n
}

// scaleUpLimit is calculateScaleUpLimitWithScalingRules.
func scaleUpLimit(current int32, ups, downs []scaleEvent, rules *autoscalingv2.HPAScalingRules, now time.Time) int32 {
	if *rules.SelectPolicy == autoscalingv2.DisabledPolicySelect {
		return current
	}
	result, pick := int32(math.MinInt32), func(a, b int32) int32 { return max(a, b) }
	if *rules.SelectPolicy == autoscalingv2.MinChangePolicySelect {
		result, pick = math.MaxInt32, func(a, b int32) int32 { return min(a, b) }
	}
	for _, p := range rules.Policies {
		start := current - changeInPeriod(p.PeriodSeconds, ups, now) + changeInPeriod(p.PeriodSeconds, downs, now)
		var proposed int32
		switch p.Type {
		case autoscalingv2.PodsScalingPolicy:
			proposed = start + p.Value
		case autoscalingv2.PercentScalingPolicy:
			proposed = int32(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
		}
		result = pick(result, proposed)
	}
	return result
}

// scaleDownLimit is calculateScaleDownLimitWithBehaviors.
func scaleDownLimit(current int32, ups, downs []scaleEvent, rules *autoscalingv2.HPAScalingRules, now time.Time) int32 {
	if *rules.SelectPolicy == autoscalingv2.DisabledPolicySelect {
		return current
	}
	result, pick := int32(math.MaxInt32), func(a, b int32) int32 { return min(a, b) }
	if *rules.SelectPolicy == autoscalingv2.MinChangePolicySelect {
		result, pick = math.MinInt32, func(a, b int32) int32 { return max(a, b) }
	}
	for _, p := range rules.Policies {
		start := current - changeInPeriod(p.PeriodSeconds, ups, now) + changeInPeriod(p.PeriodSeconds, downs, now)
		var proposed int32
		switch p.Type {
		case autoscalingv2.PodsScalingPolicy:
			proposed = start - p.Value
		case autoscalingv2.PercentScalingPolicy:
			proposed = int32(float64(start) * (1 - float64(p.Value)/100))
		}
		result = pick(result, proposed)
	}
	return result
}
