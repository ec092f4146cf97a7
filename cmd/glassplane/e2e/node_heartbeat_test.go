package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNodeAgentStopsHeartbeating runs a real node agent (`glassplane node`)
// as its own process, puts a Deployment's pods on it, then kills it: past
// the grace period its node turns Ready=Unknown with the unreachable
// NoExecute taint, the pods are evicted when their 5 second toleration runs
// out, and the ReplicaSet recreates them on the node that is still alive.
func TestNodeAgentStopsHeartbeating(t *testing.T) {
	c := NewCluster(t, "--node-runtime", "none", "--simulated-nodes", "1", "--node-monitor-grace-period", "15s")
	ctx := context.Background()
	kubeconfig := filepath.Join(t.TempDir(), "node.kubeconfig")
	kc, err := exec.Command(binary, "kubeconfig", "--data-dir", c.DataDir, "--user", "system:node:lost", "--group", "system:nodes").Output()
	if err != nil {
		t.Fatalf("glassplane kubeconfig: %v", err)
	}
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	agent := exec.Command(binary, "node", "--kubeconfig", kubeconfig, "--node-name", "lost", "--runtime", "simulated",
		"--simulated-start-delay", "200ms", "--data-dir", t.TempDir())
	var log lockedBuffer
	agent.Stdout, agent.Stderr = &log, &log
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			agent.Process.Kill()
			agent.Wait()
		}
		if t.Failed() {
			t.Logf("node agent's log:\n%s", tail(log.String(), 40))
		}
	})
	Eventually(t, 2*time.Minute, "node lost Ready", func() error {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, "lost", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if readyStatus(n) != corev1.ConditionTrue {
			return fmt.Errorf("Ready %s", readyStatus(n))
		}
		return nil
	})

	// Both replicas go to "lost" while sim-1 is cordoned.
	c.MustKubectl(t, "", "cordon", "sim-1")
	c.MustKubectl(t, `apiVersion: apps/v1
kind: Deployment
metadata: {name: survivor}
spec:
  replicas: 2
  selector: {matchLabels: {app: survivor}}
  template:
    metadata: {labels: {app: survivor}}
    spec:
      terminationGracePeriodSeconds: 0
      tolerations:
      - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 5}
      - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 5}
      containers: [{name: main, image: "glassplane.local/hello:latest"}]
`, "apply", "-f", "-")
	waitDeploymentAvailable(t, c.Client, "default", "survivor", 2)
	if on := survivorNodes(t, c); on["lost"] != 2 {
		t.Fatalf("pods by node = %v, want both on lost", on)
	}
	c.MustKubectl(t, "", "uncordon", "sim-1")

	// The agent dies without a word: no more Lease renewals, no status.
	if err := agent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	agent.Wait()
	killed = true

	Eventually(t, 2*time.Minute, "node lost Unknown with the unreachable NoExecute taint", func() error {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, "lost", metav1.GetOptions{})
		if err != nil {
			return err
		}
		tainted := false
		for _, taint := range n.Spec.Taints {
			tainted = tainted || (taint.Key == corev1.TaintNodeUnreachable && taint.Effect == corev1.TaintEffectNoExecute)
		}
		if readyStatus(n) != corev1.ConditionUnknown || !tainted {
			return fmt.Errorf("Ready %s, taints %v", readyStatus(n), n.Spec.Taints)
		}
		return nil
	})
	Eventually(t, 2*time.Minute, "both replicas recreated on sim-1", func() error {
		if on := survivorNodes(t, c); on["sim-1"] != 2 {
			return fmt.Errorf("running pods by node = %v", on)
		}
		return nil
	})
	evicted := c.MustKubectl(t, "", "get", "events", "--field-selector", "reason=TaintManagerEviction", "-o", "name")
	if evicted == "" {
		t.Error("no TaintManagerEviction event for the evicted pods")
	}
}

// survivorNodes counts the survivor Deployment's running, not terminating
// pods by node.
func survivorNodes(t *testing.T, c *Cluster) map[string]int {
	t.Helper()
	list, err := c.Client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=survivor"})
	if err != nil {
		t.Fatal(err)
	}
	on := map[string]int{}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			on[p.Spec.NodeName]++
		}
	}
	return on
}

func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status
		}
	}
	return ""
}
