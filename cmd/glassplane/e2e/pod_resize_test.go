package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodResizeOnContainerd: `kubectl patch --subresource resize` changes
// a running container's cpu and memory in place on the containerd node:
// its cgroup (read from inside the container at /sys/fs/cgroup, as the
// upstream specs read it) gets the new shares, CFS quota and memory limit
// without a restart, and the pod's status reports the new resources; a
// container whose resize policy says RestartContainer for memory is
// restarted with its new limit. The containers' oom_score_adj is the
// kubelet's for their QoS class.
func TestPodResizeOnContainerd(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	c := SharedCluster(t)
	res := func(cpuReq, cpuLim, memLim string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuReq), corev1.ResourceMemory: resource.MustParse("32Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuLim), corev1.ResourceMemory: resource.MustParse(memLim)},
		}
	}
	sleeper := []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"}
	pod := onContainerdNode("resized", corev1.RestartPolicyAlways,
		corev1.Container{Name: "inplace", Image: demoImage, Command: sleeper, Resources: res("100m", "200m", "64Mi")},
		corev1.Container{Name: "restarts", Image: demoImage, Command: sleeper, Resources: res("100m", "200m", "64Mi"),
			ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}})
	createPod(t, c, pod)
	waitPodPhase(t, c, "default", "resized", corev1.PodRunning, 3*time.Minute)
	cgroup := func(container string) string {
		out, err := c.Kubectl(t, "", "exec", "resized", "-c", container, "--", "sh", "-c",
			"echo $(cat /sys/fs/cgroup/cpu/cpu.shares /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/memory/memory.limit_in_bytes)")
		if err != nil {
			return fmt.Sprintf("exec: %v: %s", err, out)
		}
		return strings.TrimSpace(out)
	}
	// 100m → 102 shares, 200m → quota 20000 of 100000, 64Mi.
	Eventually(t, time.Minute, "the cgroups as created", func() error {
		for _, name := range []string{"inplace", "restarts"} {
			if got := cgroup(name); got != "102 20000 67108864" {
				return fmt.Errorf("%s: cpu.shares, cfs_quota_us, memory limit %q", name, got)
			}
		}
		return nil
	})

	// Burstable: the kubelet's oom_score_adj, 1000 less the container's
	// per-mille of the node's memory (32Mi here), at most 999.
	p, err := c.Client.CoreV1().Pods("default").Get(t.Context(), "resized", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node, err := c.Client.CoreV1().Nodes().Get(t.Context(), p.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := min(1000-1000*(32<<20)/node.Status.Capacity.Memory().Value(), 999)
	if out, err := c.Kubectl(t, "", "exec", "resized", "-c", "inplace", "--", "cat", "/proc/1/oom_score_adj"); err != nil || strings.TrimSpace(out) != fmt.Sprint(want) {
		t.Errorf("oom_score_adj %q (%v), want %d", out, err, want)
	}

	c.MustKubectl(t, "", "patch", "pod", "resized", "--subresource", "resize", "--type", "strategic", "-p",
		`{"spec":{"containers":[{"name":"inplace","resources":{"requests":{"cpu":"250m"},"limits":{"cpu":"500m","memory":"128Mi"}}},{"name":"restarts","resources":{"limits":{"memory":"96Mi"}}}]}}`)
	Eventually(t, 2*time.Minute, "the resize actuated", func() error {
		p, err := c.Client.CoreV1().Pods("default").Get(t.Context(), "resized", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.ObservedGeneration != p.Generation {
			return fmt.Errorf("observedGeneration %d of %d", p.Status.ObservedGeneration, p.Generation)
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodResizePending || cond.Type == corev1.PodResizeInProgress {
				return fmt.Errorf("condition %s %s: %s", cond.Type, cond.Reason, cond.Message)
			}
		}
		st := p.Status.ContainerStatuses
		if len(st) != 2 || st[0].Resources == nil || st[1].Resources == nil || st[0].State.Running == nil || st[1].State.Running == nil {
			return fmt.Errorf("container statuses %+v", st)
		}
		if got := st[0].Resources.Limits.Cpu().MilliValue(); got != 500 || st[0].RestartCount != 0 {
			return fmt.Errorf("inplace: status cpu limit %dm, restarts %d; want 500m and none", got, st[0].RestartCount)
		}
		if got := st[1].Resources.Limits.Memory().Value(); got != 96<<20 || st[1].RestartCount != 1 {
			return fmt.Errorf("restarts: status memory limit %d, restarts %d; want 96Mi and one", got, st[1].RestartCount)
		}
		if got := cgroup("inplace"); got != "256 50000 134217728" {
			return fmt.Errorf("inplace: cgroup %q, want 256 shares, quota 50000, 128Mi", got)
		}
		if got := cgroup("restarts"); got != "102 20000 100663296" {
			return fmt.Errorf("restarts: cgroup %q, want 102 shares, quota 20000, 96Mi", got)
		}
		return nil
	})
}
