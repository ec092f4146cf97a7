package node

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// TestOOMScoreAdj: the kubelet's oom_score_adj for each QoS tier, the
// Burstable formula at its bounds, a sidecar held to the app container
// requesting least, and a node-critical pod.
func TestOOMScoreAdj(t *testing.T) {
	const capacity = 10 << 30
	withMem := func(req string) corev1.Container {
		c := corev1.Container{Name: "c"}
		if req != "" {
			c.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(req)}
		}
		return c
	}
	pod := func(qos corev1.PodQOSClass, containers ...corev1.Container) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: containers}, Status: corev1.PodStatus{QOSClass: qos}}
	}
	sidecar := withMem("")
	sidecar.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	critical := pod(corev1.PodQOSBurstable, withMem("1Gi"))
	critical.Spec.PriorityClassName, critical.Spec.Priority = "system-node-critical", ptr.To[int32](2000001000)
	withSidecar := pod(corev1.PodQOSBurstable, withMem("2Gi"), withMem("4Gi"))
	withSidecar.Spec.InitContainers = []corev1.Container{sidecar}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		c    corev1.Container
		want int
	}{
		{"guaranteed", pod(corev1.PodQOSGuaranteed, withMem("1Gi")), withMem("1Gi"), -997},
		{"best effort", pod(corev1.PodQOSBestEffort, withMem("")), withMem(""), 1000},
		{"burstable, a tenth of the memory", pod(corev1.PodQOSBurstable, withMem("1Gi")), withMem("1Gi"), 900},
		{"burstable without a memory request", pod(corev1.PodQOSBurstable, withMem("")), withMem(""), 999},
		{"burstable, all the memory", pod(corev1.PodQOSBurstable, withMem("10Gi")), withMem("10Gi"), 3},
		{"sidecar held to the least app container", withSidecar, sidecar, 800},
		{"node-critical", critical, withMem("1Gi"), -997},
	} {
		if got := oomScoreAdj(tc.pod, tc.c, capacity); got != tc.want {
			t.Errorf("%s: oom_score_adj %d, want %d", tc.name, got, tc.want)
		}
	}
}
