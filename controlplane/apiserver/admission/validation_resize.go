package admission

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validatePodResize is upstream's ValidatePodResize (pods/resize): the pod
// must stay valid and keep its QoS class, its containers keep their order
// and names, requests and limits may change but not go, and nothing but
// the cpu and memory of regular and sidecar containers changes. Pod-level
// resources cannot be resized (InPlacePodLevelResourcesVerticalScaling is
// not served), nor can non-sidecar init containers
// (InPlacePodVerticalScalingInitContainers).
func validatePodResize(pod, old *corev1.Pod) field.ErrorList {
	errs := validatePodMetadataAndSpec(pod, old)
	if _, ok := old.Annotations[mirrorPodAnnotation]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods cannot be resized")}
	}
	if old.Spec.OS != nil && old.Spec.OS.Name == corev1.Windows {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "windows pods cannot be resized")}
	}
	specPath := field.NewPath("spec")
	if oldQOS := qosOf(old); oldQOS != ComputePodQOS(pod) {
		errs = append(errs, field.Invalid(specPath, pod.Status.QOSClass, "Pod QOS Class may not change as a result of resizing"))
	}
	if !resizeSupported(old) {
		errs = append(errs, field.Forbidden(specPath, "Pod running on node without support for resize"))
	}
	podLevel := func(p *corev1.Pod) bool {
		return p.Spec.Resources != nil && len(p.Spec.Resources.Requests)+len(p.Spec.Resources.Limits) > 0
	}
	if podLevel(old) || podLevel(pod) {
		return append(errs, field.Forbidden(field.NewPath(""), "resize of pods with pod-level resources is forbidden when InPlacePodLevelResourcesVerticalScalingEnabled feature gate is disabled"))
	}
	if orderErrs := validateResizeOrdering(pod, old, specPath); len(orderErrs) > 0 {
		return append(errs, orderErrs...)
	}
	for i := range old.Spec.InitContainers {
		if isSidecar(&old.Spec.InitContainers[i]) {
			errs = append(errs, validateContainerResize(&pod.Spec.InitContainers[i].Resources, &old.Spec.InitContainers[i].Resources, specPath.Child("initContainers").Index(i).Child("resources"))...)
		}
	}
	for i := range old.Spec.Containers {
		errs = append(errs, validateContainerResize(&pod.Spec.Containers[i].Resources, &old.Spec.Containers[i].Resources, specPath.Child("containers").Index(i).Child("resources"))...)
	}
	rest := *pod.Spec.DeepCopy()
	for i := range rest.Containers {
		keepCPUMemoryOf(&rest.Containers[i], &old.Spec.Containers[i])
		if !equality.Semantic.DeepEqual(rest.Containers[i], old.Spec.Containers[i]) {
			errs = append(errs, field.Forbidden(specPath, "only cpu and memory resources are mutable"))
		}
	}
	for i := range rest.InitContainers {
		changed := !equality.Semantic.DeepEqual(rest.InitContainers[i], old.Spec.InitContainers[i])
		if !isSidecar(&rest.InitContainers[i]) {
			if changed {
				errs = append(errs, field.Forbidden(specPath, "resources for non-sidecar init containers are immutable"))
			}
			continue
		}
		keepCPUMemoryOf(&rest.InitContainers[i], &old.Spec.InitContainers[i])
		if !equality.Semantic.DeepEqual(rest.InitContainers[i], old.Spec.InitContainers[i]) {
			errs = append(errs, field.Forbidden(specPath.Child("initContainers").Index(i), "only cpu and memory resources for init or sidecar containers are mutable"))
		}
	}
	if !equality.Semantic.DeepEqual(pod.Spec.Volumes, old.Spec.Volumes) {
		errs = append(errs, field.Forbidden(specPath.Child("volumes"), "volumes are immutable on resize when InPlacePodVerticalScalingMemoryBackedVolumes feature gate is disabled"))
	}
	if len(errs) > 0 {
		return errs
	}
	rest.InitContainers, rest.Containers = old.Spec.InitContainers, old.Spec.Containers
	if !equality.Semantic.DeepEqual(rest, old.Spec) {
		errs = append(errs, field.Forbidden(specPath, "only cpu and memory resources are mutable"))
	}
	return errs
}

// qosOf is the QoS class a pod's status records, computed when it has none.
func qosOf(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	return ComputePodQOS(pod)
}

// resizeSupported is upstream's isPodResizeRequestSupported: a pod whose
// running container reports no resources runs on a node that cannot
// resize; with nothing running, it is assumed to.
func resizeSupported(pod *corev1.Pod) bool {
	for _, c := range pod.Status.ContainerStatuses {
		if c.State.Running != nil {
			return c.Resources != nil
		}
	}
	return true
}

func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// validateResizeOrdering refuses containers added, removed, renamed or
// reordered.
func validateResizeOrdering(pod, old *corev1.Pod, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(pod.Spec.Containers) != len(old.Spec.Containers) {
		errs = append(errs, field.Forbidden(specPath.Child("containers"), "containers may not be added or removed on resize"))
	} else {
		for i, c := range old.Spec.Containers {
			if pod.Spec.Containers[i].Name != c.Name {
				errs = append(errs, field.Forbidden(specPath.Child("containers").Index(i).Child("name"), "containers may not be renamed or reordered on resize"))
			}
		}
	}
	if len(pod.Spec.InitContainers) != len(old.Spec.InitContainers) {
		errs = append(errs, field.Forbidden(specPath.Child("initContainers"), "initContainers may not be added or removed on resize"))
	} else {
		for i, c := range old.Spec.InitContainers {
			if pod.Spec.InitContainers[i].Name != c.Name {
				errs = append(errs, field.Forbidden(specPath.Child("initContainers").Index(i).Child("name"), "initContainers may not be renamed or reordered on resize"))
			}
		}
	}
	return errs
}

// validateContainerResize refuses a resize that removes requests or
// limits.
func validateContainerResize(next, old *corev1.ResourceRequirements, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if resourcesRemoved(next.Requests, old.Requests) {
		errs = append(errs, field.Forbidden(fld.Child("requests"), "resource requests cannot be removed"))
	}
	if resourcesRemoved(next.Limits, old.Limits) {
		errs = append(errs, field.Forbidden(fld.Child("limits"), "resource limits cannot be removed"))
	}
	return errs
}

func resourcesRemoved(next, old corev1.ResourceList) bool {
	for name := range old {
		if _, ok := next[name]; !ok {
			return true
		}
	}
	return false
}

// keepCPUMemoryOf gives c old's cpu and memory requests and limits (the
// ones a resize may change), keeping its other resources.
func keepCPUMemoryOf(c, old *corev1.Container) {
	c.Resources.Limits = withCPUMemoryOf(c.Resources.Limits, old.Resources.Limits)
	c.Resources.Requests = withCPUMemoryOf(c.Resources.Requests, old.Resources.Requests)
}

func withCPUMemoryOf(list, old corev1.ResourceList) corev1.ResourceList {
	if list == nil && old == nil {
		return nil
	}
	out := corev1.ResourceList{}
	for name, q := range list {
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
			out[name] = q
		}
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := old[name]; ok {
			out[name] = q
		}
	}
	if len(out) == 0 && old == nil {
		return nil
	}
	return out
}
