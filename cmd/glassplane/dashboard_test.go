package main

import (
	"context"
	"strings"
	"testing"
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
