package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/node/runtime"
)

// TestDown stops a running `glassplane up` with `glassplane down`, says
// so when none runs, and with --purge removes the pod containers it left
// (they outlive a plain down, as after Ctrl-C), their network namespaces
// and the data directory.
func TestDown(t *testing.T) {
	requireTool(t, "containerd", "real containers for down --purge")
	requireTool(t, "runc", "real containers for down --purge")
	c := NewCluster(t, "--node-runtime", "containerd")
	ctx := context.Background()

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "left-behind", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: runtime.DemoImage}}},
	}
	if _, err := c.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	running := waitPodPhase(t, c, "default", pod.Name, corev1.PodRunning, 3*time.Minute)
	id, ok := strings.CutPrefix(running.Status.ContainerStatuses[0].ContainerID, "containerd://")
	if !ok {
		t.Fatalf("container ID %q", running.Status.ContainerStatuses[0].ContainerID)
	}
	if _, err := os.Stat(filepath.Join(c.DataDir, "glassplane.pid")); err != nil {
		t.Fatalf("glassplane up wrote no pid file: %v", err)
	}
	if out, err := exec.Command(binary, "up", "--data-dir", c.DataDir).CombinedOutput(); err == nil || !strings.Contains(string(out), "already runs") {
		t.Errorf("a second up on the same data directory: %v\n%s", err, out)
	}

	out := run(t, "down", "--data-dir", c.DataDir)
	if !strings.Contains(out, "stopped") {
		t.Errorf("down printed %q", out)
	}
	// down returns once up has released the data directory; the process
	// itself may take a moment more to exit and be reaped.
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("glassplane up still runs 30 s after down returned:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(c.DataDir, "glassplane.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pid file after a clean exit: %v", err)
	}
	if !shimRuns(id) {
		t.Errorf("container %s stopped with glassplane up; it should keep running until down --purge", id)
	}

	if out := run(t, "down", "--data-dir", c.DataDir); !strings.Contains(out, "no glassplane up runs with data directory "+c.DataDir) {
		t.Errorf("down with nothing running printed %q", out)
	}
	missing := filepath.Join(t.TempDir(), "none")
	if out, err := exec.Command(binary, "down", "--data-dir", missing).CombinedOutput(); err == nil || !strings.Contains(string(out), missing) || !strings.Contains(string(out), "--data-dir") {
		t.Errorf("down of a missing data directory: %v\n%s", err, out)
	}

	out = run(t, "down", "--purge", "--data-dir", c.DataDir)
	if !strings.Contains(out, "removed 1 pods") || !strings.Contains(out, "removed data directory") {
		t.Errorf("down --purge printed %q", out)
	}
	if _, err := os.Stat(c.DataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("data directory after down --purge: %v", err)
	}
	if shimRuns(id) {
		t.Errorf("container %s still runs after down --purge", id)
	}
	if _, err := os.Stat(runtime.NetnsPath(string(running.UID))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("network namespace of the pod after down --purge: %v", err)
	}
}

// shimRuns says whether a containerd shim of container id runs (its
// command line names the container; a task ends with its shim).
func shimRuns(id string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), "containerd-shim") && strings.Contains(string(b), id) {
			return true
		}
	}
	return false
}
