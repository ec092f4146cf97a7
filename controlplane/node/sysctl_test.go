package node

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
