package node

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
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
