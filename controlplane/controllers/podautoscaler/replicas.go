package podautoscaler

import (
	"fmt"
	"math"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Defaults of kube-controller-manager's HPA flags.
const (
	// DefaultTolerance is --horizontal-pod-autoscaler-tolerance: usage
	// within 10% of the target does not rescale.
	DefaultTolerance = 0.1
	// DefaultCPUInitializationPeriod is
	// --horizontal-pod-autoscaler-cpu-initialization-period.
	DefaultCPUInitializationPeriod = 5 * time.Minute
	// DefaultInitialReadinessDelay is
	// --horizontal-pod-autoscaler-initial-readiness-delay.
	DefaultInitialReadinessDelay = 30 * time.Second
	// DefaultDownscaleStabilization is
	// --horizontal-pod-autoscaler-downscale-stabilization.
	DefaultDownscaleStabilization = 5 * time.Minute
	// DefaultSyncPeriod is --horizontal-pod-autoscaler-sync-period.
	DefaultSyncPeriod = 15 * time.Second
)

// podMetric is one pod's usage (millicores or bytes) and when and over
// which window it was measured.
type podMetric struct {
	value     int64
	timestamp time.Time
	window    time.Duration
}

// podMetrics are the usage of pods by name.
type podMetrics map[string]podMetric

// calculator is upstream's ReplicaCalculator without its listers: it is
// handed the target's pods and their metrics.
type calculator struct {
	tolerance               float64
	cpuInitializationPeriod time.Duration
	initialReadinessDelay   time.Duration
	now                     func() time.Time
}

func newCalculator() *calculator {
	return &calculator{tolerance: DefaultTolerance, cpuInitializationPeriod: DefaultCPUInitializationPeriod,
		initialReadinessDelay: DefaultInitialReadinessDelay, now: time.Now}
}

// resourceReplicas is GetResourceReplicas: the replicas that bring the
// pods' average utilization of their requests of resource (of container,
// when set) to targetUtilization, with the current utilization and raw
// average.
func (c *calculator) resourceReplicas(currentReplicas, targetUtilization int32, resource v1.ResourceName, container string, pods []*v1.Pod, metrics podMetrics) (int32, int32, int64, error) {
	if len(pods) == 0 {
		return 0, 0, 0, fmt.Errorf("no pods returned by selector while calculating replica count")
	}
	readyPodCount, unready, missing, ignored := c.groupPods(pods, metrics, resource)
	removeMetrics(metrics, ignored)
	removeMetrics(metrics, unready)
	requests, err := podRequests(pods, container, resource)
	if err != nil {
		return 0, 0, 0, err
	}
	if len(metrics) == 0 {
		return 0, 0, 0, fmt.Errorf("did not receive metrics for targeted pods (pods might be unready)")
	}
	ratio, utilization, raw, err := utilizationRatio(metrics, requests, targetUtilization)
	if err != nil {
		return 0, 0, 0, err
	}
	scaleUpWithUnready := unready.Len() > 0 && ratio > 1.0
	if !scaleUpWithUnready && missing.Len() == 0 {
		if math.Abs(1.0-ratio) <= c.tolerance {
			return currentReplicas, utilization, raw, nil
		}
		return int32(math.Ceil(ratio * float64(readyPodCount))), utilization, raw, nil
	}
	if missing.Len() > 0 {
		if ratio < 1.0 {
			// On a scale-down, missing pods count as using their whole
			// request (or the target, above 100%).
			fallback := int64(max(100, targetUtilization))
			for name := range missing {
				metrics[name] = podMetric{value: requests[name] * fallback / 100}
			}
		} else if ratio > 1.0 {
			for name := range missing {
				metrics[name] = podMetric{value: 0}
			}
		}
	}
	if scaleUpWithUnready {
		for name := range unready {
			metrics[name] = podMetric{value: 0}
		}
	}
	newRatio, _, _, err := utilizationRatio(metrics, requests, targetUtilization)
	if err != nil {
		return 0, 0, 0, err
	}
	if math.Abs(1.0-newRatio) <= c.tolerance || (ratio < 1.0 && newRatio > 1.0) || (ratio > 1.0 && newRatio < 1.0) {
		return currentReplicas, utilization, raw, nil
	}
	newReplicas := int32(math.Ceil(newRatio * float64(len(metrics))))
	if (newRatio < 1.0 && newReplicas > currentReplicas) || (newRatio > 1.0 && newReplicas < currentReplicas) {
		return currentReplicas, utilization, raw, nil
	}
	return newReplicas, utilization, raw, nil
}

// averageValueReplicas is GetRawResourceReplicas (calcPlainMetricReplicas):
// the replicas that bring the pods' average usage to targetAverage.
func (c *calculator) averageValueReplicas(currentReplicas int32, targetAverage int64, resource v1.ResourceName, pods []*v1.Pod, metrics podMetrics) (int32, int64, error) {
	if len(pods) == 0 {
		return 0, 0, fmt.Errorf("no pods returned by selector while calculating replica count")
	}
	readyPodCount, unready, missing, ignored := c.groupPods(pods, metrics, resource)
	removeMetrics(metrics, ignored)
	removeMetrics(metrics, unready)
	if len(metrics) == 0 {
		return 0, 0, fmt.Errorf("did not receive metrics for targeted pods (pods might be unready)")
	}
	ratio, usage := usageRatio(metrics, targetAverage)
	scaleUpWithUnready := unready.Len() > 0 && ratio > 1.0
	if !scaleUpWithUnready && missing.Len() == 0 {
		if math.Abs(1.0-ratio) <= c.tolerance {
			return currentReplicas, usage, nil
		}
		return int32(math.Ceil(ratio * float64(readyPodCount))), usage, nil
	}
	if missing.Len() > 0 {
		if ratio < 1.0 {
			for name := range missing {
				metrics[name] = podMetric{value: targetAverage}
			}
		} else {
			for name := range missing {
				metrics[name] = podMetric{value: 0}
			}
		}
	}
	if scaleUpWithUnready {
		for name := range unready {
			metrics[name] = podMetric{value: 0}
		}
	}
	newRatio, _ := usageRatio(metrics, targetAverage)
	if math.Abs(1.0-newRatio) <= c.tolerance || (ratio < 1.0 && newRatio > 1.0) || (ratio > 1.0 && newRatio < 1.0) {
		return currentReplicas, usage, nil
	}
	newReplicas := int32(math.Ceil(newRatio * float64(len(metrics))))
	if (newRatio < 1.0 && newReplicas > currentReplicas) || (newRatio > 1.0 && newReplicas < currentReplicas) {
		return currentReplicas, usage, nil
	}
	return newReplicas, usage, nil
}

// groupPods sorts the target's pods as upstream's groupPods: deleted and
// failed pods are ignored, pending ones unready, pods without metrics
// missing, and for CPU pods not ready yet (or measured before they were
// ready, during their initialization period) unready.
func (c *calculator) groupPods(pods []*v1.Pod, metrics podMetrics, resource v1.ResourceName) (ready int, unready, missing, ignored sets.Set[string]) {
	unready, missing, ignored = sets.New[string](), sets.New[string](), sets.New[string]()
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil || pod.Status.Phase == v1.PodFailed {
			ignored.Insert(pod.Name)
			continue
		}
		if pod.Status.Phase == v1.PodPending {
			unready.Insert(pod.Name)
			continue
		}
		metric, found := metrics[pod.Name]
		if !found {
			missing.Insert(pod.Name)
			continue
		}
		if resource == v1.ResourceCPU {
			cond := readyCondition(pod)
			notReady := false
			switch {
			case cond == nil || pod.Status.StartTime == nil:
				notReady = true
			case pod.Status.StartTime.Add(c.cpuInitializationPeriod).After(c.now()):
				notReady = cond.Status == v1.ConditionFalse || metric.timestamp.Before(cond.LastTransitionTime.Add(metric.window))
			default:
				notReady = cond.Status == v1.ConditionFalse && pod.Status.StartTime.Add(c.initialReadinessDelay).After(cond.LastTransitionTime.Time)
			}
			if notReady {
				unready.Insert(pod.Name)
				continue
			}
		}
		ready++
	}
	return ready, unready, missing, ignored
}

func readyCondition(pod *v1.Pod) *v1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == v1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func removeMetrics(metrics podMetrics, pods sets.Set[string]) {
	for name := range pods {
		delete(metrics, name)
	}
}

// podRequests sums each pod's requests of resource (of container, when
// set), in milli-units; a container without the request is an error, as
// upstream's calculatePodRequests.
func podRequests(pods []*v1.Pod, container string, resource v1.ResourceName) (map[string]int64, error) {
	out := make(map[string]int64, len(pods))
	for _, pod := range pods {
		var sum int64
		for _, c := range pod.Spec.Containers {
			if container != "" && c.Name != container {
				continue
			}
			q, ok := c.Resources.Requests[resource]
			if !ok {
				return nil, fmt.Errorf("missing request for %s in container %s of Pod %s", resource, c.Name, pod.ObjectMeta.Name)
			}
			sum += q.MilliValue()
		}
		out[pod.Name] = sum
	}
	return out, nil
}

// utilizationRatio is GetResourceUtilizationRatio: usage over requests of
// the pods that have both, as a percentage and as a ratio to the target,
// and the raw average usage.
func utilizationRatio(metrics podMetrics, requests map[string]int64, target int32) (float64, int32, int64, error) {
	var usage, requested int64
	entries := 0
	for name, m := range metrics {
		r, ok := requests[name]
		if !ok {
			continue
		}
		usage += m.value
		requested += r
		entries++
	}
	if requested == 0 {
		return 0, 0, 0, fmt.Errorf("no metrics returned matched known pods")
	}
	utilization := int32(usage * 100 / requested)
	return float64(utilization) / float64(target), utilization, usage / int64(entries), nil
}

// usageRatio is GetMetricUsageRatio: the average usage and its ratio to
// the target.
func usageRatio(metrics podMetrics, target int64) (float64, int64) {
	var total int64
	for _, m := range metrics {
		total += m.value
	}
	average := total / int64(len(metrics))
	return float64(average) / float64(target), average
}
