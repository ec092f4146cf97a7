package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func getPod(t *testing.T, c *Cluster, name string) (*corev1.Pod, error) {
	t.Helper()
	return c.Client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
}

// TestNodeCrashLoopBacksOff: a crashing container is restarted at once,
// then after 10 s, then 20 s (kubelet's back-off), shows CrashLoopBackOff
// and keeps its last exit in lastState.
func TestNodeCrashLoopBacksOff(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	c := SharedCluster(t)
	createPod(t, c, onContainerdNode("crasher", corev1.RestartPolicyAlways, corev1.Container{Name: "main", Image: demoImage,
		Command: []string{"sh", "-c", "echo crashing; exit 2"}}))
	var seen []string
	Eventually(t, 3*time.Minute, "back-off growing to 20s", func() error {
		p, err := getPod(t, c, "crasher")
		if err != nil {
			return err
		}
		if len(p.Status.ContainerStatuses) == 0 {
			return fmt.Errorf("no container status")
		}
		cs := p.Status.ContainerStatuses[0]
		if w := cs.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
			if len(seen) == 0 || seen[len(seen)-1] != w.Message {
				seen = append(seen, w.Message)
			}
			last := cs.LastTerminationState.Terminated
			if last == nil || last.ExitCode != 2 || last.Reason != "Error" {
				return fmt.Errorf("lastState = %+v, want exit 2 Error", cs.LastTerminationState)
			}
			if strings.Contains(w.Message, "back-off 20s restarting failed container=main pod=crasher_default") {
				return nil
			}
		}
		return fmt.Errorf("restartCount %d, state %+v", cs.RestartCount, cs.State)
	})
	if !strings.Contains(strings.Join(seen, "|"), "back-off 10s") {
		t.Errorf("waiting messages %q never showed the 10s back-off", seen)
	}
	out := c.MustKubectl(t, "", "get", "pod", "crasher")
	if !strings.Contains(out, "CrashLoopBackOff") {
		t.Errorf("kubectl get pod shows %q, want CrashLoopBackOff", out)
	}
	out = c.MustKubectl(t, "", "logs", "crasher", "--previous")
	if strings.TrimSpace(out) != "crashing" {
		t.Errorf("logs --previous = %q", out)
	}
	events := c.MustKubectl(t, "", "get", "events", "--field-selector", "involvedObject.name=crasher")
	if !strings.Contains(events, "Back-off restarting failed container main in pod crasher_default") {
		t.Errorf("events lack the BackOff event:\n%s", events)
	}
}

// TestNodeReportsOOMKilled: a container over its memory limit is killed by
// the kernel and reported as OOMKilled with exit code 137.
func TestNodeReportsOOMKilled(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	c := SharedCluster(t)
	createPod(t, c, onContainerdNode("hog", corev1.RestartPolicyNever, corev1.Container{Name: "main", Image: demoImage,
		Command:   []string{"sh", "-c", "x=0123456789abcdef; while true; do x=$x$x; done"},
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Mi")}}}))
	p := waitPodPhase(t, c, "default", "hog", corev1.PodFailed, 3*time.Minute)
	term := p.Status.ContainerStatuses[0].State.Terminated
	if term == nil || term.Reason != "OOMKilled" || term.ExitCode != 137 {
		t.Errorf("terminated state = %+v, want OOMKilled 137", p.Status.ContainerStatuses[0].State)
	}
}

// TestNodeRestartKeepsPods: stopping and starting `glassplane up` on the
// same data directory leaves running pods Running with the same container
// IDs (re-adopted from containerd) and cleans up pods deleted meanwhile.
func TestNodeRestartKeepsPods(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	// Not t.TempDir: the shims of just-removed containers may still be
	// cleaning their bundles when the test ends.
	dir, err := os.MkdirTemp("", "gp-restart-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	c, err := StartCluster(dir, "--node-runtime", "containerd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop() })
	for _, name := range []string{"keep-1", "keep-2"} {
		createPod(t, c, onContainerdNode(name, corev1.RestartPolicyAlways, corev1.Container{Name: "web", Image: demoImage}))
	}
	ids := map[string]string{}
	ips := map[string]string{}
	for _, name := range []string{"keep-1", "keep-2"} {
		p := waitPodPhase(t, c, "default", name, corev1.PodRunning, 3*time.Minute)
		ids[name] = p.Status.ContainerStatuses[0].ContainerID
		ips[name] = p.Status.PodIP
	}
	c.Stop()
	// The kubeconfig still names the stopped API server's port until the
	// new one writes its own.
	if err := os.Remove(filepath.Join(c.DataDir, "kubeconfig")); err != nil {
		t.Fatal(err)
	}

	c2, err := StartCluster(dir, "--node-runtime", "containerd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("restarted cluster's log:\n%s", tail(c2.Log(), 60))
		}
		// Containers outlive the cluster by design: remove them first.
		for _, name := range []string{"keep-1", "keep-2"} {
			_ = c2.Client.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(1))})
		}
		for _, name := range []string{"keep-1", "keep-2"} {
			waitPodGone(t, c2, "default", name, time.Minute)
		}
		c2.Stop()
	})
	for _, name := range []string{"keep-1", "keep-2"} {
		Eventually(t, 2*time.Minute, name+" running with the same container", func() error {
			p, err := getPod(t, c2, name)
			if err != nil {
				return err
			}
			if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) == 0 {
				return fmt.Errorf("phase %s", p.Status.Phase)
			}
			cs := p.Status.ContainerStatuses[0]
			if cs.ContainerID != ids[name] || cs.RestartCount != 0 || cs.State.Running == nil || p.Status.PodIP != ips[name] {
				return fmt.Errorf("container %s (was %s), restarts %d, IP %s (was %s)", cs.ContainerID, ids[name], cs.RestartCount, p.Status.PodIP, ips[name])
			}
			return nil
		})
	}
	body, err := insecureGet(fmt.Sprintf("http://%s:8080/", ips["keep-1"]))
	if err != nil || !strings.Contains(body, "Hello from keep-1") {
		t.Errorf("keep-1 after the restart answered %q, %v", body, err)
	}
}
