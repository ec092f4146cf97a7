package node

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestResourceFieldValueDefaultsToAllocatable: a limit the container does
// not set reads as the node's allocatable, as the kubelet's downward API
// gives it; a request it does not set reads 0.
func TestResourceFieldValueDefaultsToAllocatable(t *testing.T) {
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	c := corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}
	for _, tc := range []struct {
		ref  corev1.ResourceFieldSelector
		want string
	}{
		{corev1.ResourceFieldSelector{Resource: "limits.cpu"}, "2"},
		{corev1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("1m")}, "2000"},
		{corev1.ResourceFieldSelector{Resource: "limits.memory"}, "67108864"},
		{corev1.ResourceFieldSelector{Resource: "requests.cpu"}, "0"},
	} {
		if got := resourceFieldValue(pod, c, &tc.ref, alloc); got != tc.want {
			t.Errorf("%s (divisor %s) = %s, want %s", tc.ref.Resource, tc.ref.Divisor.String(), got, tc.want)
		}
	}
}
