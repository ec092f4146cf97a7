package main

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestDashboardRefusesBadFlags: `glassplane dashboard` says what is wrong
// with its flags before it reaches any cluster.
func TestDashboardRefusesBadFlags(t *testing.T) {
	for _, tt := range []struct {
		name string
		o    dashboardOptions
		want string
	}{
		{"no kubeconfig", dashboardOptions{webListen: "127.0.0.1:0"}, "--kubeconfig (or $KUBECONFIG) is required"},
		{"beyond loopback without a token", dashboardOptions{kubeconfig: "k", webListen: "0.0.0.0:0"}, "is beyond loopback: give --web-login-token"},
		{"an audit webhook beyond loopback", dashboardOptions{kubeconfig: "k", webListen: "127.0.0.1:0", auditWebhookListen: "0.0.0.0:0"}, "the audit webhook is not authenticated"},
		{"a missing kubeconfig", dashboardOptions{kubeconfig: "/nonexistent/kubeconfig", webListen: "127.0.0.1:0"}, `failed to load kubeconfig "/nonexistent/kubeconfig"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := runDashboard(context.Background(), tt.o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("runDashboard = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// The header's runtime comes from the nodes: Glassplane's label, else the
// scheme of containerRuntimeVersion; several are joined, none is unknown.
func TestNodeRuntimes(t *testing.T) {
	node := func(label, version string) corev1.Node {
		n := corev1.Node{}
		if label != "" {
			n.Labels = map[string]string{"node.glassplane.io/runtime": label}
		}
		n.Status.NodeInfo.ContainerRuntimeVersion = version
		return n
	}
	for _, tc := range []struct {
		nodes []corev1.Node
		want  string
	}{
		{nil, ""},
		{[]corev1.Node{node("", "containerd://2.1.4"), node("", "containerd://2.1.4")}, "containerd"},
		{[]corev1.Node{node("simulated", "glassplane-simulated://0.1"), node("containerd", "containerd://1.6.20")}, "containerd+simulated"},
		{[]corev1.Node{node("", "cri-o://1.33.0"), node("", "")}, "cri-o"},
	} {
		if got := nodeRuntimes(tc.nodes); got != tc.want {
			t.Errorf("nodeRuntimes(%v) = %q, want %q", tc.nodes, got, tc.want)
		}
	}
}
