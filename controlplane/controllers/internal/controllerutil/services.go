package controllerutil

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// FindPort resolves a service port's targetPort to a number on pod: a
// number as is, a name through the pod's container ports; no targetPort
// means the service port itself.
func FindPort(pod *v1.Pod, sp *v1.ServicePort) (int32, error) {
	switch sp.TargetPort.Type {
	case intstr.String:
		name := sp.TargetPort.StrVal
		for _, c := range pod.Spec.Containers {
			for _, p := range c.Ports {
				if p.Name == name && p.Protocol == sp.Protocol {
					return p.ContainerPort, nil
				}
			}
		}
		return 0, fmt.Errorf("no suitable port for manifest: %s", pod.UID)
	default:
		if sp.TargetPort.IntVal == 0 {
			return sp.Port, nil
		}
		return sp.TargetPort.IntVal, nil
	}
}

// ServicesForPod returns the services in pod's namespace whose selector
// selects it.
func ServicesForPod(lister corelisters.ServiceLister, pod *v1.Pod) []*v1.Service {
	svcs, err := lister.Services(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*v1.Service
	for _, s := range svcs {
		if s.Spec.Selector == nil {
			continue
		}
		if labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(pod.Labels)) {
			out = append(out, s)
		}
	}
	return out
}

// ShouldPodBeInEndpoints reports whether pod backs a service: it has an
// IP and has not finished; a pod being deleted counts only when the
// service publishes not-ready addresses.
func ShouldPodBeInEndpoints(pod *v1.Pod, includeTerminating bool) bool {
	if pod.Status.PodIP == "" {
		return false
	}
	if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		return false
	}
	return includeTerminating || pod.DeletionTimestamp == nil
}
