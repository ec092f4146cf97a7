package apiserver

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// prepareServiceForUpdate drops the fields a Service's new type no longer
// uses when the user left them as they were, as upstream's
// dropTypeDependentFields: switching to ExternalName wipes the cluster IPs
// and IP families (freed by the allocator), leaving NodePort and
// LoadBalancer wipes node ports, health-check node port and
// externalTrafficPolicy. A value the user also changed is kept, for
// validation to refuse.
func prepareServiceForUpdate(_ context.Context, oldObj, nextObj runtime.Object) {
	old, next := oldObj.(*corev1.Service), nextObj.(*corev1.Service)
	if typeNeedsClusterIP(old) && !typeNeedsClusterIP(next) {
		if old.Spec.ClusterIP == next.Spec.ClusterIP && slices.Equal(old.Spec.ClusterIPs, next.Spec.ClusterIPs) {
			next.Spec.ClusterIP, next.Spec.ClusterIPs = "", nil
		}
		if slices.Equal(old.Spec.IPFamilies, next.Spec.IPFamilies) {
			next.Spec.IPFamilies = nil
		}
		if equalPtr(old.Spec.IPFamilyPolicy, next.Spec.IPFamilyPolicy) {
			next.Spec.IPFamilyPolicy = nil
		}
	}
	if typeNeedsNodePort(old) && !typeNeedsNodePort(next) && sameNodePorts(old, next) {
		for i := range next.Spec.Ports {
			next.Spec.Ports[i].NodePort = 0
		}
	}
	if needsHealthCheckNodePort(old) && !needsHealthCheckNodePort(next) && old.Spec.HealthCheckNodePort == next.Spec.HealthCheckNodePort {
		next.Spec.HealthCheckNodePort = 0
	}
	if old.Spec.Type == corev1.ServiceTypeLoadBalancer && next.Spec.Type != corev1.ServiceTypeLoadBalancer {
		if equalPtr(old.Spec.AllocateLoadBalancerNodePorts, next.Spec.AllocateLoadBalancerNodePorts) {
			next.Spec.AllocateLoadBalancerNodePorts = nil
		}
		if equalPtr(old.Spec.LoadBalancerClass, next.Spec.LoadBalancerClass) {
			next.Spec.LoadBalancerClass = nil
		}
	}
	if externallyAccessible(old) && !externallyAccessible(next) && old.Spec.ExternalTrafficPolicy == next.Spec.ExternalTrafficPolicy {
		next.Spec.ExternalTrafficPolicy = ""
	}
	if next.Spec.Type != corev1.ServiceTypeLoadBalancer {
		next.Status.LoadBalancer = corev1.LoadBalancerStatus{}
	}
}

func typeNeedsClusterIP(svc *corev1.Service) bool {
	return svc.Spec.Type != corev1.ServiceTypeExternalName
}

func typeNeedsNodePort(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer
}

func needsHealthCheckNodePort(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

func externallyAccessible(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer || svc.Spec.Type == corev1.ServiceTypeNodePort ||
		(svc.Spec.Type == corev1.ServiceTypeClusterIP && len(svc.Spec.ExternalIPs) > 0)
}

func sameNodePorts(a, b *corev1.Service) bool {
	if len(a.Spec.Ports) != len(b.Spec.Ports) {
		return false
	}
	for i := range a.Spec.Ports {
		if a.Spec.Ports[i].NodePort != b.Spec.Ports[i].NodePort {
			return false
		}
	}
	return true
}

func equalPtr[T comparable](a, b *T) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}
