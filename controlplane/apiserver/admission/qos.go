package admission

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ComputePodQOS returns the QoS class of a pod by Kubernetes' rules: pod-level
// resources when set, otherwise the sum over init and regular containers of
// cpu and memory requests and limits. Guaranteed needs every container to
// have cpu and memory limits equal to its requests; BestEffort means no cpu
// or memory request or limit anywhere; everything else is Burstable.
func ComputePodQOS(pod *corev1.Pod) corev1.PodQOSClass {
	requests := corev1.ResourceList{}
	limits := corev1.ResourceList{}
	guaranteed := true
	if pod.Spec.Resources != nil && (len(pod.Spec.Resources.Requests) > 0 || len(pod.Spec.Resources.Limits) > 0) {
		addQOSResources(requests, pod.Spec.Resources.Requests)
		found := addQOSResources(limits, pod.Spec.Resources.Limits)
		guaranteed = found[corev1.ResourceCPU] && found[corev1.ResourceMemory]
	} else {
		containers := append(append([]corev1.Container{}, pod.Spec.Containers...), pod.Spec.InitContainers...)
		for _, c := range containers {
			addQOSResources(requests, c.Resources.Requests)
			found := addQOSResources(limits, c.Resources.Limits)
			if !found[corev1.ResourceCPU] || !found[corev1.ResourceMemory] {
				guaranteed = false
			}
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

// addQOSResources adds the positive cpu and memory quantities of list into
// sum and reports which of the two it found.
func addQOSResources(sum, list corev1.ResourceList) map[corev1.ResourceName]bool {
	found := map[corev1.ResourceName]bool{}
	zero := resource.Quantity{}
	for name, q := range list {
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
			continue
		}
		if q.Cmp(zero) <= 0 {
			continue
		}
		found[name] = true
		total := q.DeepCopy()
		if prev, ok := sum[name]; ok {
			total.Add(prev)
		}
		sum[name] = total
	}
	return found
}
