package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/web/demo"
)

// playDemo runs `glassplane demo run` with args and returns its output and
// whether it succeeded.
func playDemo(t *testing.T, c *Cluster, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	args = append([]string{"demo", "run", "--kubeconfig", c.Kubeconfig}, args...)
	out, err := exec.CommandContext(ctx, binary, args...).CombinedOutput()
	return string(out), err
}

// TestDemosLeaveTheUsersObjectsAlone follows the README's tour (mypod from
// examples/pod.yaml in default), then plays every demo with its default
// options: each runs in a namespace of its own and removes it, and mypod
// keeps its uid. A leftover demo namespace stops a run, and pod-lifecycle in
// default reports the clash and leaves mypod alone.
func TestDemosLeaveTheUsersObjectsAlone(t *testing.T) {
	c := NewCluster(t, "--node-runtime", "none", "--simulated-nodes", "2", "--node-monitor-grace-period", "15s")
	ctx := context.Background()
	manifest, err := filepath.Abs("../../../examples/pod.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c.MustKubectl(t, "", "apply", "-f", manifest)
	mypod, err := c.Client.CoreV1().Pods("default").Get(ctx, "mypod", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mypodKept := func(after string) {
		t.Helper()
		p, err := c.Client.CoreV1().Pods("default").Get(ctx, "mypod", metav1.GetOptions{})
		if err != nil || p.UID != mypod.UID || p.DeletionTimestamp != nil {
			t.Fatalf("after %s, mypod is not the user's any more: %v", after, err)
		}
	}

	list, err := exec.Command(binary, "demo", "list").CombinedOutput()
	if err != nil {
		t.Fatalf("glassplane demo list: %v\n%s", err, list)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(string(list)), "\n")[1:] {
		names = append(names, strings.Fields(line)[0])
	}
	if len(names) != len(demo.All()) {
		t.Fatalf("demo list names %v", names)
	}
	for _, name := range names {
		start := time.Now()
		out, err := playDemo(t, c, name)
		if err != nil {
			t.Fatalf("glassplane demo run %s: %v\n%s", name, err, out)
		}
		if !strings.Contains(out, "Runs in namespace "+demo.NamespacePrefix+name) {
			t.Errorf("%s does not say where it runs:\n%s", name, out)
		}
		t.Logf("%s: %v", name, time.Since(start).Round(time.Second))
		mypodKept("demo " + name)
	}

	namespaces, err := c.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range namespaces.Items {
		if strings.HasPrefix(ns.Name, demo.NamespacePrefix) {
			t.Errorf("namespace %s (%s) is left after the demos", ns.Name, ns.Status.Phase)
		}
	}
	if _, err := c.Client.CoreV1().Nodes().Get(ctx, demo.FailingNode, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("node-failure left its node: %v", err)
	}
	if _, err := c.Client.SchedulingV1().PriorityClasses().Get(ctx, demo.PriorityClassName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("preemption left its PriorityClass: %v", err)
	}

	t.Run("a leftover namespace stops the run", func(t *testing.T) {
		left := demo.NamespacePrefix + "unschedulable"
		createNamespace(t, c, left)
		out, err := playDemo(t, c, "unschedulable")
		if err == nil || !strings.Contains(out, "namespace "+left+" is left from another run") || !strings.Contains(out, "kubectl delete namespace "+left) {
			t.Errorf("run with a leftover namespace: %v\n%s", err, out)
		}
		ns, err := c.Client.CoreV1().Namespaces().Get(ctx, left, metav1.GetOptions{})
		if err != nil || ns.Status.Phase != corev1.NamespaceActive {
			t.Errorf("the leftover namespace after the refusal: %v", err)
		}
	})

	t.Run("pod-lifecycle in default", func(t *testing.T) {
		out, err := playDemo(t, c, "pod-lifecycle", "-n", "default", "--lang", "ko")
		if err == nil || !strings.Contains(out, `pods "mypod" already exists`) || !strings.Contains(out, "건드리지 않습니다") {
			t.Errorf("pod-lifecycle in default: %v\n%s", err, out)
		}
		mypodKept("pod-lifecycle in default")
	})
}
