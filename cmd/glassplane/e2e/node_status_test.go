package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNodeStatusOfContainerdNode: the containerd node reports the host as
// kubelet does: nodeInfo from /etc/os-release and the kernel, the
// containerd version, pressure conditions with kubelet's reasons, and its
// images (the demo image at least).
func TestNodeStatusOfContainerdNode(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	c := SharedCluster(t)
	var n *corev1.Node
	Eventually(t, time.Minute, "the containerd node registered", func() error {
		list, err := c.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: "node.glassplane.io/runtime=containerd"})
		if err != nil {
			return err
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("%d containerd nodes", len(list.Items))
		}
		n = &list.Items[0]
		return nil
	})
	info := n.Status.NodeInfo
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	if info.KernelVersion != strings.TrimSpace(string(kernel)) {
		t.Errorf("kernelVersion = %q, want %q", info.KernelVersion, strings.TrimSpace(string(kernel)))
	}
	osRelease, _ := os.ReadFile("/etc/os-release")
	if info.OSImage == "" || !strings.Contains(string(osRelease), `PRETTY_NAME="`+info.OSImage+`"`) {
		t.Errorf("osImage = %q, want PRETTY_NAME of /etc/os-release", info.OSImage)
	}
	if v, ok := strings.CutPrefix(info.ContainerRuntimeVersion, "containerd://"); !ok || v == "" || strings.ContainsAny(v, "~+") {
		t.Errorf("containerRuntimeVersion = %q, want containerd://<version>", info.ContainerRuntimeVersion)
	}
	want := map[corev1.NodeConditionType]string{
		corev1.NodeMemoryPressure: "KubeletHasSufficientMemory",
		corev1.NodeDiskPressure:   "KubeletHasNoDiskPressure",
		corev1.NodePIDPressure:    "KubeletHasSufficientPID",
		corev1.NodeReady:          "KubeletReady",
	}
	for _, cond := range n.Status.Conditions {
		if reason, ok := want[cond.Type]; ok {
			if cond.Reason != reason {
				t.Errorf("condition %s: reason %q, want %q (this host is not short of anything)", cond.Type, cond.Reason, reason)
			}
			delete(want, cond.Type)
		}
	}
	if len(want) > 0 {
		t.Errorf("conditions missing: %v", want)
	}
	found := false
	for _, img := range n.Status.Images {
		for _, name := range img.Names {
			found = found || name == demoImage && img.SizeBytes > 0
		}
	}
	if !found {
		t.Errorf("images %+v lack the demo image with its size", n.Status.Images)
	}
}

// TestNodeSystemReserved: `glassplane node --system-reserved` takes the
// reservation off the capacity in allocatable.
func TestNodeSystemReserved(t *testing.T) {
	c := SharedCluster(t)
	startNodeProcess(t, c, "reserved-node", "--capacity", "cpu=4,memory=8Gi,pods=50", "--system-reserved", "cpu=500m,memory=1Gi")
	t.Cleanup(func() {
		_ = c.Client.CoreV1().Nodes().Delete(context.Background(), "reserved-node", metav1.DeleteOptions{})
	})
	Eventually(t, time.Minute, "allocatable is capacity minus the reservation", func() error {
		n, err := c.Client.CoreV1().Nodes().Get(context.Background(), "reserved-node", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for name, want := range map[corev1.ResourceName][2]string{
			corev1.ResourceCPU:    {"4", "3500m"},
			corev1.ResourceMemory: {"8Gi", "7Gi"},
			corev1.ResourcePods:   {"50", "50"},
		} {
			capacity, alloc := n.Status.Capacity[name], n.Status.Allocatable[name]
			if capacity.Cmp(resource.MustParse(want[0])) != 0 || alloc.Cmp(resource.MustParse(want[1])) != 0 {
				return fmt.Errorf("%s: capacity %s allocatable %s, want %s and %s", name, capacity.String(), alloc.String(), want[0], want[1])
			}
		}
		return nil
	})
	out, err := exec.Command(binary, "node", "--kubeconfig", c.Kubeconfig, "--node-name", "bad-reserve", "--system-reserved", "gpu=1").CombinedOutput()
	if err == nil || !strings.Contains(string(out), `invalid --system-reserved`) {
		t.Errorf("a bad --system-reserved gave %v: %s", err, out)
	}
}
