package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestNodeMemoryEmptyDir: an emptyDir with medium Memory is a tmpfs of
// its sizeLimit inside the container, writes beyond it fail, and the mount
// is gone from the host once the pod is deleted.
func TestNodeMemoryEmptyDir(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	c := SharedCluster(t)
	limit := resource.MustParse("8Mi")
	pod := onContainerdNode("ram-disk", corev1.RestartPolicyAlways, corev1.Container{Name: "main", Image: demoImage,
		Command:      []string{"sleep", "3600"},
		VolumeMounts: []corev1.VolumeMount{{Name: "cache", MountPath: "/cache"}}})
	pod.Spec.Volumes = []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &limit}}}}
	createPod(t, c, pod)
	p := waitPodPhase(t, c, "default", "ram-disk", corev1.PodRunning, 3*time.Minute)

	mounts := c.MustKubectl(t, "", "exec", "ram-disk", "--", "cat", "/proc/mounts")
	var line string
	for _, l := range strings.Split(mounts, "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[1] == "/cache" {
			line = l
		}
	}
	if !strings.HasPrefix(line, "tmpfs /cache tmpfs ") || !strings.Contains(line, "size=8192k") {
		t.Errorf("/cache is mounted as %q, want a tmpfs of 8192k", line)
	}
	if out, err := c.Kubectl(t, "", "exec", "ram-disk", "--", "sh", "-c", "head -c 4194304 /dev/zero > /cache/small && echo ok"); err != nil || !strings.Contains(out, "ok") {
		t.Errorf("writing 4 MiB: %v %s", err, out)
	}
	if out, err := c.Kubectl(t, "", "exec", "ram-disk", "--", "sh", "-c", "head -c 16777216 /dev/zero > /cache/big"); err == nil {
		t.Errorf("writing 16 MiB into an 8 MiB tmpfs succeeded: %s", out)
	}

	c.MustKubectl(t, "", "delete", "pod", "ram-disk", "--wait=true")
	Eventually(t, time.Minute, "the tmpfs is unmounted from the host", func() error {
		b, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			return err
		}
		if strings.Contains(string(b), string(p.UID)) {
			return fmt.Errorf("a mount of pod %s remains", p.UID)
		}
		return nil
	})
}
