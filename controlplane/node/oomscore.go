package node

import (
	corev1 "k8s.io/api/core/v1"
)

// The oom_score_adj of the kubelet's QoS tiers (pkg/kubelet/qos).
const (
	guaranteedOOMScoreAdj = -997
	besteffortOOMScoreAdj = 1000
	// systemCriticalPriority is the least priority of a critical pod.
	systemCriticalPriority = 2000000000
)

// oomScoreAdj is the kubelet's GetContainerOOMScoreAdjust: node-critical
// and Guaranteed pods' containers are killed last (-997), BestEffort ones
// first (1000), and a Burstable container by how much of the node's memory
// it requests (1000 less its per-mille share, a sidecar no higher than the
// app container requesting least), between 3 and 999.
func oomScoreAdj(pod *corev1.Pod, c corev1.Container, memoryCapacity int64) int {
	if pod.Spec.PriorityClassName == "system-node-critical" && pod.Spec.Priority != nil && *pod.Spec.Priority >= systemCriticalPriority {
		return guaranteedOOMScoreAdj
	}
	// The API server sets a pod's QoS class when it is created.
	switch pod.Status.QOSClass {
	case corev1.PodQOSGuaranteed:
		return guaranteedOOMScoreAdj
	case corev1.PodQOSBestEffort:
		return besteffortOOMScoreAdj
	}
	if memoryCapacity <= 0 {
		return besteffortOOMScoreAdj - 1
	}
	adj := 1000 - 1000*c.Resources.Requests.Memory().Value()/memoryCapacity
	if isSidecar(c) && len(pod.Spec.Containers) > 0 {
		least := pod.Spec.Containers[0].Resources.Requests.Memory().Value()
		for _, app := range pod.Spec.Containers[1:] {
			least = min(least, app.Resources.Requests.Memory().Value())
		}
		adj = min(adj, 1000-1000*least/memoryCapacity)
	}
	switch {
	case adj < 1000+guaranteedOOMScoreAdj:
		return 1000 + guaranteedOOMScoreAdj
	case adj == besteffortOOMScoreAdj:
		return int(adj - 1)
	}
	return int(adj)
}
