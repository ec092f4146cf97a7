package node

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestForbiddenSysctl: the kubelet's default allowlist admits the safe
// namespaced sysctls (dotted or slashed), refuses the others and net. ones
// with the host's network, with the kubelet's message.
func TestForbiddenSysctl(t *testing.T) {
	pod := func(host bool, names ...string) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{HostNetwork: host, SecurityContext: &corev1.PodSecurityContext{}}}
		for _, n := range names {
			p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, corev1.Sysctl{Name: n, Value: "1"})
		}
		return p
	}
	for _, tc := range []struct {
		pod  *corev1.Pod
		want string
	}{
		{&corev1.Pod{}, ""},
		{pod(false, "kernel.shm_rmid_forced", "net/ipv4/tcp_syncookies"), ""},
		{pod(false, "kernel.shm_rmid_forced", "kernel.msgmax"), `forbidden sysctl: "kernel.msgmax" not allowlisted`},
		{pod(true, "kernel.shm_rmid_forced"), ""},
		{pod(true, "net.ipv4.tcp_syncookies"), `forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host net enabled`},
	} {
		if got := forbiddenSysctl(tc.pod); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.pod.Spec.SecurityContext, got, tc.want)
		}
	}
}

// TestNodeAdmission: the node refuses, as the kubelet does, a pod asking
// for a host port an admitted pod holds (NodePorts) or a sysctl outside
// the allowlist (SysctlForbidden): Failed with "Pod was rejected: ..." and
// a Warning event; a free port is admitted, and the port is free again
// once its holder is gone.
func TestNodeAdmission(t *testing.T) {
	h := startAgent(t, simRuntime(), nil)
	withPort := func(name string, port int32) *corev1.Pod {
		p := newPod(name, corev1.RestartPolicyAlways, "nginx")
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: port}}
		return p
	}
	running := func(name string) {
		t.Helper()
		eventually(t, name+" Running", func() (bool, string) {
			p := h.getPod(t, name)
			return p.Status.Phase == corev1.PodRunning, string(p.Status.Phase)
		})
	}
	rejected := func(name, reason, message string) {
		t.Helper()
		eventually(t, name+" rejected", func() (bool, string) {
			p := h.getPod(t, name)
			return p.Status.Phase == corev1.PodFailed && p.Status.Reason == reason && p.Status.Message == "Pod was rejected: "+message,
				string(p.Status.Phase) + " " + p.Status.Reason + " " + p.Status.Message
		})
		eventually(t, name+"'s event", func() (bool, string) {
			got := h.eventMessages(t, name)
			return hasAll(got, reason+": "+message), strings.Join(got, " | ")
		})
	}
	h.createPod(t, withPort("holder", 8080))
	running("holder")
	h.createPod(t, withPort("late", 8080))
	rejected("late", "NodePorts", "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports")
	h.createPod(t, withPort("neighbour", 8081))
	running("neighbour")
	sys := newPod("tuned", corev1.RestartPolicyAlways, "nginx")
	sys.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "1"}, {Name: "kernel.msgmax", Value: "1"}}}
	h.createPod(t, sys)
	rejected("tuned", "SysctlForbidden", `forbidden sysctl: "kernel.msgmax" not allowlisted`)

	if err := h.client.CoreV1().Pods("default").Delete(context.Background(), "holder", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "holder gone", func() (bool, string) {
		_, err := h.client.CoreV1().Pods("default").Get(context.Background(), "holder", metav1.GetOptions{})
		return err != nil, ""
	})
	h.createPod(t, withPort("again", 8080))
	running("again")
}

// TestStatusKeepsOthersConditions: the agent's status write merges
// conditions by type, as the kubelet's strategic merge patch does: a
// DisruptionTarget condition an eviction added after the agent's copy of
// the pod stays (a job's podFailurePolicy matches on it).
func TestStatusKeepsOthersConditions(t *testing.T) {
	var injected atomic.Bool
	h := startAgentWith(t, simRuntime(), nil, func(client *fake.Clientset) {
		client.PrependReactor("patch", "pods", func(action k8stesting.Action) (bool, kruntime.Object, error) {
			if action.GetSubresource() != "status" || !injected.CompareAndSwap(false, true) {
				return false, nil, nil
			}
			// An eviction's write lands just before the agent's patch.
			obj, err := client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), "default", "evicted")
			if err != nil {
				return false, nil, nil
			}
			pod := obj.(*corev1.Pod).DeepCopy()
			pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI"})
			if err := client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), pod, "default"); err != nil {
				t.Errorf("inject the condition: %v", err)
			}
			return false, nil, nil
		})
	})
	h.createPod(t, newPod("evicted", corev1.RestartPolicyNever, "busybox"))
	eventually(t, "the pod's status with both the agent's and the eviction's conditions", func() (bool, string) {
		p := h.getPod(t, "evicted")
		var disruption, ready bool
		for _, c := range p.Status.Conditions {
			disruption = disruption || c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue
			ready = ready || c.Type == corev1.PodScheduled
		}
		return injected.Load() && disruption && ready, fmt.Sprintf("%+v", p.Status.Conditions)
	})
}

// TestNodeKeepsExtendedResources: an extended resource another client put
// in the node's capacity stays through the agent's status updates and is
// allocatable, as the kubelet keeps it (the scheduler's preemption specs
// give a node scheduling.k8s.io/foo this way).
func TestNodeKeepsExtendedResources(t *testing.T) {
	h := startAgent(t, simRuntime(), nil)
	ctx := context.Background()
	eventually(t, "the node registered", func() (bool, string) {
		_, err := h.client.CoreV1().Nodes().Get(ctx, testNode, metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	node, err := h.client.CoreV1().Nodes().Get(ctx, testNode, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Capacity["scheduling.k8s.io/foo"] = resource.MustParse("5")
	// The status the agent would write over this one.
	st, err := h.agent.nodeStatus(ctx, &node.Status)
	if err != nil {
		t.Fatal(err)
	}
	c, a := st.Capacity["scheduling.k8s.io/foo"], st.Allocatable["scheduling.k8s.io/foo"]
	if c.Value() != 5 || a.Value() != 5 || st.Allocatable.Cpu().Sign() <= 0 {
		t.Errorf("the agent's status: capacity %v allocatable %v", st.Capacity, st.Allocatable)
	}
	if !isExtendedResourceName("example.com/gpu") || isExtendedResourceName("cpu") || isExtendedResourceName("kubernetes.io/thing") || isExtendedResourceName("requests.example.com/gpu") {
		t.Error("isExtendedResourceName disagrees with Kubernetes' rule")
	}
}
