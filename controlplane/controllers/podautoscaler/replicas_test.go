package podautoscaler

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

// readyPod is a running pod requesting cpuRequest millicores, ready since
// long before t0 (past its CPU initialization period).
func readyPod(name string, cpuRequest int64) *v1.Pod {
	start := metav1.NewTime(t0.Add(-time.Hour))
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: *resource.NewMilliQuantity(cpuRequest, resource.DecimalSI)}}}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, StartTime: &start,
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: start}}},
	}
}

func metricsOf(values map[string]int64) podMetrics {
	m := podMetrics{}
	for name, v := range values {
		m[name] = podMetric{value: v, timestamp: t0, window: 15 * time.Second}
	}
	return m
}

func TestResourceReplicas(t *testing.T) {
	pending := readyPod("pending", 100)
	pending.Status.Phase = v1.PodPending
	deleted := readyPod("deleted", 100)
	deleted.DeletionTimestamp = &metav1.Time{Time: t0}
	fresh := readyPod("fresh", 100) // started a minute ago, ready 5 s ago: its sample predates readiness + window
	fresh.Status.StartTime = &metav1.Time{Time: t0.Add(-time.Minute)}
	fresh.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(-5 * time.Second))
	tests := []struct {
		name            string
		current, target int32
		pods            []*v1.Pod
		usage           map[string]int64
		want, wantUtil  int32
		wantErr         bool
	}{
		{"at target stays", 2, 50, []*v1.Pod{readyPod("a", 100), readyPod("b", 100)}, map[string]int64{"a": 50, "b": 50}, 2, 50, false},
		{"within tolerance stays", 2, 50, []*v1.Pod{readyPod("a", 100), readyPod("b", 100)}, map[string]int64{"a": 54, "b": 54}, 2, 54, false},
		{"twice the target doubles", 2, 50, []*v1.Pod{readyPod("a", 100), readyPod("b", 100)}, map[string]int64{"a": 100, "b": 100}, 4, 100, false},
		{"a busy loop on 100m asks for 10x at 50%", 1, 50, []*v1.Pod{readyPod("a", 100)}, map[string]int64{"a": 500}, 10, 500, false},
		{"idle halves", 4, 50, []*v1.Pod{readyPod("a", 100), readyPod("b", 100), readyPod("c", 100), readyPod("d", 100)},
			map[string]int64{"a": 20, "b": 20, "c": 20, "d": 20}, 2, 20, false},
		{"missing pod counts as its full request on scale-down", 3, 50, []*v1.Pod{readyPod("a", 100), readyPod("b", 100), readyPod("missing", 100)},
			map[string]int64{"a": 10, "b": 10}, 3, 10, false},
		{"missing pod counts as zero on scale-up", 2, 50, []*v1.Pod{readyPod("a", 100), readyPod("missing", 100)},
			map[string]int64{"a": 200}, 4, 200, false},
		{"pending pod holds back a scale-up as zero", 2, 50, []*v1.Pod{readyPod("a", 100), pending},
			map[string]int64{"a": 200}, 4, 200, false},
		{"deleted pods are ignored", 2, 50, []*v1.Pod{readyPod("a", 100), deleted}, map[string]int64{"a": 100, "deleted": 1000}, 2, 100, false},
		{"a pod measured before it was ready is unready", 2, 50, []*v1.Pod{readyPod("a", 100), fresh}, map[string]int64{"a": 50, "fresh": 1000}, 2, 50, false},
		{"no pods", 1, 50, nil, nil, 0, 0, true},
		{"no metrics", 1, 50, []*v1.Pod{pending}, map[string]int64{}, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCalculator()
			c.now = func() time.Time { return t0 }
			got, util, _, err := c.resourceReplicas(tt.current, tt.target, v1.ResourceCPU, "", tt.pods, metricsOf(tt.usage))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err == nil && (got != tt.want || util != tt.wantUtil) {
				t.Errorf("replicas %d at %d%%, want %d at %d%%", got, util, tt.want, tt.wantUtil)
			}
		})
	}
	t.Run("a container without a request is an error", func(t *testing.T) {
		p := readyPod("a", 100)
		p.Spec.Containers[0].Resources = v1.ResourceRequirements{}
		_, _, _, err := newCalculator().resourceReplicas(1, 50, v1.ResourceCPU, "", []*v1.Pod{p}, metricsOf(map[string]int64{"a": 1}))
		if err == nil || err.Error() != "missing request for cpu in container c of Pod a" {
			t.Errorf("err = %v", err)
		}
	})
}

func TestAverageValueReplicas(t *testing.T) {
	pods := []*v1.Pod{readyPod("a", 100), readyPod("b", 100)}
	c := newCalculator()
	c.now = func() time.Time { return t0 }
	got, usage, err := c.averageValueReplicas(2, 200, v1.ResourceCPU, pods, metricsOf(map[string]int64{"a": 300, "b": 500}))
	if err != nil || got != 4 || usage != 400 {
		t.Errorf("= %d, %d, %v; want 4 replicas at 400m", got, usage, err)
	}
}

func behavior(upWindow, downWindow int32) *autoscalingv2.HorizontalPodAutoscalerBehavior {
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp:   withDefaultRules(&autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(upWindow)}, true, 0),
		ScaleDown: withDefaultRules(&autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(downWindow)}, false, 0),
	}
}

func TestStabilizationWindow(t *testing.T) {
	m := newMemory()
	b := behavior(0, 60)
	step := func(at time.Duration, current, desired int32) int32 {
		a := normalization{key: "ns/h", scaleUp: b.ScaleUp, scaleDown: b.ScaleDown, minReplicas: 1, maxReplicas: 10, currentReplicas: current, desired: desired}
		got, _, _ := m.stabilizeWithBehaviors(a, t0.Add(at))
		return got
	}
	if got := step(0, 2, 5); got != 5 {
		t.Fatalf("scale-up without an up window = %d, want 5 at once", got)
	}
	if got := step(15*time.Second, 5, 1); got != 5 {
		t.Errorf("scale-down within the 60 s window of a 5 = %d, want 5 held", got)
	}
	if got := step(45*time.Second, 5, 1); got != 5 {
		t.Errorf("scale-down at 45 s = %d, want 5 held", got)
	}
	if got := step(61*time.Second, 5, 1); got != 1 {
		t.Errorf("scale-down after the window = %d, want 1", got)
	}
}

func TestDefaultDownscaleStabilization(t *testing.T) {
	m := newMemory()
	if got := m.stabilize("k", 6, DefaultDownscaleStabilization, t0); got != 6 {
		t.Fatalf("first = %d", got)
	}
	if got := m.stabilize("k", 2, DefaultDownscaleStabilization, t0.Add(299*time.Second)); got != 6 {
		t.Errorf("after 299 s = %d, want the highest recent 6", got)
	}
	if got := m.stabilize("k", 2, DefaultDownscaleStabilization, t0.Add(301*time.Second)); got != 2 {
		t.Errorf("after 301 s = %d, want 2", got)
	}
}

func TestScalingPolicies(t *testing.T) {
	m := newMemory()
	b := behavior(0, 0)
	limit := func(at time.Duration, current, desired, maxReplicas int32) (int32, string) {
		a := normalization{key: "k", scaleUp: b.ScaleUp, scaleDown: b.ScaleDown, minReplicas: 1, maxReplicas: maxReplicas, currentReplicas: current, desired: desired}
		got, reason, _ := m.limitWithBehaviors(a, t0.Add(at))
		return got, reason
	}
	// Default scale-up: max(+4 pods, +100%) per 15 s.
	if got, reason := limit(0, 1, 20, 50); got != 5 || reason != "ScaleUpLimit" {
		t.Errorf("1 → 20 = %d (%s), want 5 (ScaleUpLimit: +4 pods)", got, reason)
	}
	if got, reason := limit(0, 10, 40, 50); got != 20 || reason != "ScaleUpLimit" {
		t.Errorf("10 → 40 = %d (%s), want 20 (ScaleUpLimit: +100%%)", got, reason)
	}
	m.storeScaleEvent("k", b, 10, 20, t0)
	if got, _ := limit(5*time.Second, 20, 40, 50); got != 20 {
		t.Errorf("5 s after 10 → 20, 20 → 40 = %d, want 20 (the period's budget is spent)", got)
	}
	if got, _ := limit(16*time.Second, 20, 40, 50); got != 40 {
		t.Errorf("16 s after, 20 → 40 = %d, want 40", got)
	}
	if got, reason := limit(16*time.Second, 20, 40, 30); got != 30 || reason != "TooManyReplicas" {
		t.Errorf("max 30: %d (%s), want 30 (TooManyReplicas)", got, reason)
	}
	if got, reason := limit(16*time.Second, 5, 0, 30); got != 1 || reason != "TooFewReplicas" {
		t.Errorf("5 → 0 with min 1 = %d (%s), want 1 (TooFewReplicas)", got, reason)
	}
	disabled := autoscalingv2.DisabledPolicySelect
	b.ScaleDown.SelectPolicy = &disabled
	if got, reason := limit(16*time.Second, 5, 2, 30); got != 5 || reason != "ScaleDownLimit" {
		t.Errorf("scale-down disabled: %d (%s), want 5 (ScaleDownLimit)", got, reason)
	}
}

func TestLimitWithoutBehavior(t *testing.T) {
	for _, tt := range []struct {
		current, desired, min, max, want int32
		reason                           string
	}{
		{1, 10, 1, 10, 4, "ScaleUpLimit"},
		{3, 10, 1, 10, 6, "ScaleUpLimit"},
		{3, 10, 1, 5, 5, "TooManyReplicas"},
		{3, 0, 2, 5, 2, "TooFewReplicas"},
		{3, 4, 1, 5, 4, "DesiredWithinRange"},
	} {
		got, reason, _ := limitWithoutBehavior(tt.current, tt.desired, tt.min, tt.max)
		if got != tt.want || reason != tt.reason {
			t.Errorf("%d → %d in [%d,%d] = %d (%s), want %d (%s)", tt.current, tt.desired, tt.min, tt.max, got, reason, tt.want, tt.reason)
		}
	}
}
