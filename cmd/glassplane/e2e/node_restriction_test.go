package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNodeRestrictionOfItsOwnNode drives kubectl as the node sim-1
// (system:node:sim-1 in system:nodes): NodeRestriction refuses it the
// labels reserved to admins and any change of its taints, as
// kube-apiserver's does, and lets it set a label of its own domain.
func TestNodeRestrictionOfItsOwnNode(t *testing.T) {
	c := SharedCluster(t)
	kubeconfig := filepath.Join(t.TempDir(), "sim-1")
	if err := os.WriteFile(kubeconfig, []byte(run(t, "kubeconfig", "--data-dir", c.DataDir, "--user", "system:node:sim-1", "--group", "system:nodes")), 0o600); err != nil {
		t.Fatal(err)
	}
	asNode := func(args ...string) (string, error) {
		out, err := exec.Command(kubectlPath(t), append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
		return string(out), err
	}
	refused := []struct {
		name string
		args []string
		want string
	}{
		{"node-restriction label", []string{"label", "node", "sim-1", "node-restriction.kubernetes.io/foo=bar"},
			`nodes "sim-1" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/foo`},
		{"control-plane role", []string{"label", "node", "sim-1", "node-role.kubernetes.io/control-plane="},
			`nodes "sim-1" is forbidden: is not allowed to modify labels: node-role.kubernetes.io/control-plane`},
		{"add a taint", []string{"taint", "node", "sim-1", "dedicated=gpu:NoSchedule"},
			`nodes "sim-1" is forbidden: node "sim-1" is not allowed to modify taints`},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			out, err := asNode(tc.args...)
			if err == nil || !strings.Contains(out, tc.want) {
				t.Fatalf("kubectl %s: %v\n%s\nwant %s", strings.Join(tc.args, " "), err, out, tc.want)
			}
		})
	}
	t.Run("remove a taint an admin set", func(t *testing.T) {
		c.MustKubectl(t, "", "taint", "node", "sim-1", "e2e-restriction=x:NoSchedule")
		t.Cleanup(func() { c.Kubectl(t, "", "taint", "node", "sim-1", "e2e-restriction-") })
		out, err := asNode("taint", "node", "sim-1", "e2e-restriction-")
		if err == nil || !strings.Contains(out, `node "sim-1" is not allowed to modify taints`) {
			t.Fatalf("kubectl taint ...-: %v\n%s", err, out)
		}
	})
	t.Run("a label of its own domain", func(t *testing.T) {
		t.Cleanup(func() { c.Kubectl(t, "", "label", "node", "sim-1", "example.com/foo-") })
		if out, err := asNode("label", "node", "sim-1", "example.com/foo=bar"); err != nil {
			t.Fatalf("kubectl label: %v\n%s", err, out)
		}
		if out := c.MustKubectl(t, "", "get", "node", "sim-1", "-o", "jsonpath={.metadata.labels.example\\.com/foo}"); out != "bar" {
			t.Fatalf("label = %q", out)
		}
	})
	t.Run("another node", func(t *testing.T) {
		out, err := asNode("label", "node", "sim-2", "example.com/foo=bar")
		if err == nil || !strings.Contains(out, `node "sim-1" is not allowed to modify node "sim-2"`) {
			t.Fatalf("kubectl label node sim-2: %v\n%s", err, out)
		}
	})
}
