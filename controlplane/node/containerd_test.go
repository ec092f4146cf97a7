package node

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/glassplane/glassplane/controlplane/node/runtime"
)

// containerdRuntime starts a managed containerd for the test, or fails in
// CI (CI=true) and skips elsewhere when the host cannot run one.
func containerdRuntime(t *testing.T) (*runtime.Containerd, string) {
	t.Helper()
	if ok, why := runtime.CanRunContainerd(); !ok {
		if os.Getenv("CI") == "true" {
			t.Fatalf("containerd is required in CI: %s", why)
		}
		t.Skipf("skipping containerd test: %s (set CI=true to make this a failure)", why)
	}
	dir, err := os.MkdirTemp("", "gp-node-")
	if err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(context.Background())
	m, err := runtime.StartManagedContainerd(mctx, dir)
	if err != nil {
		cancel()
		t.Fatalf("StartManagedContainerd: %v", err)
	}
	rt, err := runtime.NewContainerd(context.Background(), runtime.ContainerdConfig{
		Address: m.Address(), Namespace: "glassplane-node-test", StateDir: dir + "/pods", PullTimeout: 30 * time.Second,
	})
	if err != nil {
		cancel()
		t.Fatalf("NewContainerd: %v", err)
	}
	t.Cleanup(func() {
		ctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
		defer ccancel()
		if uids, err := rt.ListPods(ctx); err == nil {
			for _, uid := range uids {
				_ = rt.RemovePod(ctx, uid)
			}
		}
		rt.Close()
		cancel()
		if err := m.Wait(); err != nil {
			t.Errorf("containerd: %v", err)
		}
		os.RemoveAll(dir)
	})
	return rt, dir
}

func TestContainerdNodeRunsAndDeletesDemoPod(t *testing.T) {
	rt, dir := containerdRuntime(t)
	h := startAgent(t, rt, func(c *Config) {
		c.Simulated = false
		c.DataDir = dir
	})
	node, err := h.client.CoreV1().Nodes().Get(context.Background(), testNode, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Labels[LabelRuntime] != "containerd" || !strings.HasPrefix(node.Status.NodeInfo.ContainerRuntimeVersion, "containerd://1.") {
		t.Errorf("node runtime label %q, version %q", node.Labels[LabelRuntime], node.Status.NodeInfo.ContainerRuntimeVersion)
	}

	pod := newPod("hello", corev1.RestartPolicyAlways, runtime.DemoImage)
	pod.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways
	h.createPod(t, pod)
	var got *corev1.Pod
	eventually(t, "demo pod Running", func() (bool, string) {
		got = h.getPod(t, "hello")
		return got.Status.Phase == corev1.PodRunning, string(got.Status.Phase)
	})
	cs := got.Status.ContainerStatuses[0]
	if !strings.HasPrefix(cs.ContainerID, "containerd://") || !strings.HasPrefix(cs.ImageID, "glassplane.local/hello@sha256:") || !cs.Ready {
		t.Errorf("container status = %+v", cs)
	}
	eventually(t, "events", func() (bool, string) {
		ev := h.eventMessages(t, "hello")
		return hasAll(ev,
			`Pulled: Container image "glassplane.local/hello:latest" already present on machine`,
			"Created: Created container: c0",
			"Started: Started container c0",
		), strings.Join(ev, " | ")
	})

	start := time.Now()
	cur := h.getPod(t, "hello")
	now := metav1.Now()
	cur.DeletionTimestamp = &now
	cur.DeletionGracePeriodSeconds = ptr.To[int64](30)
	if _, err := h.client.CoreV1().Pods("default").Update(context.Background(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the final delete with grace 0", func() (bool, string) {
		for _, a := range h.client.Actions() {
			if del, ok := a.(k8stesting.DeleteActionImpl); ok && del.GetResource().Resource == "pods" && del.GetName() == "hello" {
				return ptr.Deref(del.GetDeleteOptions().GracePeriodSeconds, -1) == 0, ""
			}
		}
		return false, "no delete"
	})
	if took := time.Since(start); took > 25*time.Second {
		t.Errorf("deletion took %s; the demo container should exit on SIGTERM", took)
	}
	list, err := rt.ListContainers(context.Background(), "uid-hello")
	if err != nil || len(list) != 0 {
		t.Errorf("containers after deletion = %v, %v", list, err)
	}
	if _, err := os.Stat(runtime.NetnsPath("uid-hello")); !os.IsNotExist(err) {
		t.Errorf("network namespace left behind: %v", err)
	}
}

func TestContainerdNodeReportsFailures(t *testing.T) {
	rt, dir := containerdRuntime(t)
	h := startAgent(t, rt, func(c *Config) {
		c.Simulated = false
		c.DataDir = dir
	})
	tests := []struct {
		name  string
		pod   func() *corev1.Pod
		check func(p *corev1.Pod) (bool, string)
	}{
		{
			name: "unknown image",
			pod: func() *corev1.Pod {
				return newPod("noimage", corev1.RestartPolicyAlways, "glassplane.invalid/nothing:1")
			},
			check: func(p *corev1.Pod) (bool, string) {
				if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
					return false, "no waiting state"
				}
				w := p.Status.ContainerStatuses[0].State.Waiting
				return w.Reason == "ImagePullBackOff" && strings.Contains(w.Message, "failed to pull and unpack image"), w.Reason + ": " + w.Message
			},
		},
		{
			name: "crashing container restarts",
			pod: func() *corev1.Pod {
				p := newPod("crasher", corev1.RestartPolicyAlways, runtime.DemoImage)
				p.Spec.Containers[0].Command = []string{"sh", "-c", "exit 3"}
				return p
			},
			check: func(p *corev1.Pod) (bool, string) {
				if len(p.Status.ContainerStatuses) == 0 {
					return false, "no status"
				}
				cs := p.Status.ContainerStatuses[0]
				last := cs.LastTerminationState.Terminated
				ok := cs.RestartCount >= 1 && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" &&
					last != nil && last.ExitCode == 3 && last.Reason == "Error" && p.Status.Phase == corev1.PodRunning
				return ok, cs.String()
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.pod()
			h.createPod(t, p)
			eventually(t, tc.name, func() (bool, string) { return tc.check(h.getPod(t, p.Name)) })
		})
	}
}
