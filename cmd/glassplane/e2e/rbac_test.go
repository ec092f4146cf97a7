package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// issueKubeconfig runs `glassplane kubeconfig --user` for user in groups and
// writes the kubeconfig to a file of the test's.
func issueKubeconfig(t testing.TB, c *Cluster, user string, groups ...string) string {
	t.Helper()
	args := []string{"kubeconfig", "--data-dir", c.DataDir, "--user", user}
	for _, g := range groups {
		args = append(args, "--group", g)
	}
	out, err := exec.Command(binary, args...).Output()
	if err != nil {
		t.Fatalf("glassplane %s: %v", strings.Join(args, " "), err)
	}
	path := filepath.Join(t.TempDir(), strings.ReplaceAll(user, ":", "_")+".kubeconfig")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// kubectlWith runs kubectl with the given kubeconfig and returns its
// combined output.
func kubectlWith(t *testing.T, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlPath(t), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// requireDenied fails unless kubectl failed with exactly Kubernetes' message.
func requireDenied(t *testing.T, out string, err error, message string) {
	t.Helper()
	want := "Error from server (Forbidden): " + message
	if err == nil || strings.TrimSpace(out) != want {
		t.Fatalf("kubectl output\n got: %s\nwant: %s", strings.TrimSpace(out), want)
	}
}

func TestRBACWithKubectl(t *testing.T) {
	c := SharedCluster(t)
	alice := issueKubeconfig(t, c, "alice")
	const ns = "rbac-team"
	c.MustKubectl(t, "", "create", "namespace", ns)
	c.MustKubectl(t, "", "create", "configmap", "settings", "-n", ns, "--from-literal=color=blue")

	out, err := kubectlWith(t, alice, "get", "pods", "-n", "default")
	requireDenied(t, out, err, `pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"`)
	out, err = kubectlWith(t, alice, "get", "configmaps", "-n", ns)
	requireDenied(t, out, err, `configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "rbac-team"`)
	out, err = kubectlWith(t, alice, "get", "nodes")
	requireDenied(t, out, err, `nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope`)

	c.MustKubectl(t, "", "create", "rolebinding", "alice-view", "--clusterrole=view", "--user=alice", "-n", ns)
	Eventually(t, time.Minute, "alice to read configmaps in "+ns, func() error {
		out, err := kubectlWith(t, alice, "get", "configmap", "settings", "-n", ns, "-o", "jsonpath={.data.color}")
		if err == nil && out != "blue" {
			t.Fatalf("alice read %q", out)
		}
		return err
	})
	out, err = kubectlWith(t, alice, "delete", "configmap", "settings", "-n", ns)
	requireDenied(t, out, err, `configmaps "settings" is forbidden: User "alice" cannot delete resource "configmaps" in API group "" in the namespace "rbac-team"`)
	out, err = kubectlWith(t, alice, "get", "secrets", "-n", ns)
	requireDenied(t, out, err, `secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" in the namespace "rbac-team"`)

	t.Run("auth can-i", func(t *testing.T) {
		tests := []struct {
			name       string
			kubeconfig string
			args       []string
			want       string
		}{
			{"alice gets pods", alice, []string{"get", "pods", "-n", ns}, "yes"},
			{"alice lists configmaps", alice, []string{"list", "configmaps", "-n", ns}, "yes"},
			{"alice reads pod logs", alice, []string{"get", "pods", "--subresource=log", "-n", ns}, "yes"},
			{"alice deletes pods", alice, []string{"delete", "pods", "-n", ns}, "no"},
			{"alice gets secrets", alice, []string{"get", "secrets", "-n", ns}, "no"},
			{"alice gets pods elsewhere", alice, []string{"get", "pods", "-n", "default"}, "no"},
			{"alice lists nodes", alice, []string{"list", "nodes"}, "no"},
			{"alice creates rolebindings", alice, []string{"create", "rolebindings", "-n", ns}, "no"},
			{"alice reads /api", alice, []string{"get", "/api"}, "yes"},
			{"admin does anything", c.Kubeconfig, []string{"*", "*"}, "yes"},
			{"admin as alice gets pods", c.Kubeconfig, []string{"get", "pods", "-n", ns, "--as", "alice"}, "yes"},
			{"admin as alice deletes pods", c.Kubeconfig, []string{"delete", "pods", "-n", ns, "--as", "alice"}, "no"},
			{"admin as a node updates pod status", c.Kubeconfig, []string{"update", "pods", "--subresource=status", "-n", ns, "--as", "system:node:sim-1", "--as-group", "system:nodes"}, "yes"},
			{"the scheduler binds pods", c.Kubeconfig, []string{"create", "pods", "--subresource=binding", "-n", ns, "--as", "system:kube-scheduler"}, "yes"},
			{"the scheduler deletes nodes", c.Kubeconfig, []string{"delete", "nodes", "--as", "system:kube-scheduler"}, "no"},
			{"alice impersonates", alice, []string{"impersonate", "users"}, "no"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				out, _ := kubectlWith(t, tc.kubeconfig, append([]string{"auth", "can-i"}, tc.args...)...)
				// kubectl may warn first (cluster-scoped resources); the answer is the last line.
				lines := strings.Split(strings.TrimSpace(out), "\n")
				if got := lines[len(lines)-1]; got != tc.want {
					t.Errorf("kubectl auth can-i %s = %q, want %q", strings.Join(tc.args, " "), got, tc.want)
				}
			})
		}
		out, err := kubectlWith(t, alice, "auth", "can-i", "--list", "-n", ns)
		if err != nil || !strings.Contains(out, "configmaps ") || !strings.Contains(out, "[get list watch]") || !strings.Contains(out, "selfsubjectaccessreviews.authorization.k8s.io") {
			t.Errorf("kubectl auth can-i --list: %v\n%s", err, out)
		}
		out, err = kubectlWith(t, c.Kubeconfig, "auth", "can-i", "--list", "--as", "alice", "-n", "default")
		if err != nil || strings.Contains(out, "configmaps ") {
			t.Errorf("kubectl auth can-i --list --as alice in default should not list configmaps: %v\n%s", err, out)
		}
	})

	t.Run("auth whoami", func(t *testing.T) {
		out, err := kubectlWith(t, alice, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}")
		if err != nil || out != `alice ["system:authenticated"]` {
			t.Errorf("kubectl auth whoami: %v: %q", err, out)
		}
		out, err = kubectlWith(t, c.Kubeconfig, "auth", "whoami", "--as", "alice", "-o", "jsonpath={.status.userInfo.username}")
		if err != nil || out != "alice" {
			t.Errorf("kubectl auth whoami --as alice: %v: %q", err, out)
		}
	})
}

func TestNodeIdentityIsRestricted(t *testing.T) {
	c := SharedCluster(t)
	node := issueKubeconfig(t, c, "system:node:sim-1", "system:nodes")
	const ns = "rbac-nodes"
	c.MustKubectl(t, "", "create", "namespace", ns)
	c.MustKubectl(t, "", "run", "elsewhere", "-n", ns, "--image=busybox", "--restart=Never",
		`--overrides={"apiVersion":"v1","spec":{"nodeName":"sim-2"}}`, "--", "sleep", "3600")

	out, err := kubectlWith(t, node, "label", "node", "sim-2", "hijacked=true")
	requireDenied(t, out, err, `nodes "sim-2" is forbidden: node "sim-1" is not allowed to modify node "sim-2"`)
	out, err = kubectlWith(t, node, "delete", "pod", "elsewhere", "-n", ns)
	requireDenied(t, out, err, `pods "elsewhere" is forbidden: node "sim-1" can only delete pods with spec.nodeName set to itself`)
	podJSON := c.MustKubectl(t, "", "get", "pod", "elsewhere", "-n", ns, "-o", "json")
	podFile := filepath.Join(t.TempDir(), "pod.json")
	var pod map[string]any
	if err := json.Unmarshal([]byte(podJSON), &pod); err != nil {
		t.Fatal(err)
	}
	pod["status"].(map[string]any)["phase"] = "Failed"
	// An unconditional update: sim-2 may be writing the pod's status
	// meanwhile, and a stale resourceVersion would be refused with 409
	// before admission (as kube-apiserver does) could refuse the node.
	delete(pod["metadata"].(map[string]any), "resourceVersion")
	failed, _ := json.Marshal(pod)
	if err := os.WriteFile(podFile, failed, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = kubectlWith(t, node, "replace", "--subresource=status", "-f", podFile)
	if want := `pods "elsewhere" is forbidden: node "sim-1" can only update pod status for pods with spec.nodeName set to itself`; err == nil || !strings.Contains(out, want) {
		t.Errorf("replacing another node's pod status: %v\n%s", err, out)
	}
	out, err = kubectlWith(t, node, "annotate", "pod", "elsewhere", "-n", ns, "touched=yes")
	requireDenied(t, out, err, `pods "elsewhere" is forbidden: User "system:node:sim-1" cannot patch resource "pods" in API group "" in the namespace "rbac-nodes"`)
	out, err = kubectlWith(t, node, "get", "secrets", "-n", ns)
	requireDenied(t, out, err, `secrets is forbidden: User "system:node:sim-1" cannot list resource "secrets" in API group "" in the namespace "rbac-nodes": No Object name found`)

	if out, err := kubectlWith(t, node, "label", "node", "sim-1", "--overwrite", "glassplane.io/e2e=own"); err != nil {
		t.Errorf("a node labelling its own Node: %v\n%s", err, out)
	}
	if out, err := kubectlWith(t, node, "get", "pod", "elsewhere", "-n", ns); err != nil {
		t.Errorf("nodes may read pods: %v\n%s", err, out)
	}
}
