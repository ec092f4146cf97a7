package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	waitMountsGone(t, p, "the tmpfs")
}

// TestNodeImageVolume: an image volume (the demo image) shows the image's
// files inside the container, read-only and not executable; an image
// volume without a reference is refused with its field path; and the
// mount is gone from the host once the pod is deleted.
func TestNodeImageVolume(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	c := SharedCluster(t)
	pod := onContainerdNode("image-volume", corev1.RestartPolicyAlways, corev1.Container{Name: "main", Image: demoImage,
		Command:      []string{"sleep", "3600"},
		VolumeMounts: []corev1.VolumeMount{{Name: "img", MountPath: "/volume"}}})
	pod.Spec.Volumes = []corev1.Volume{{Name: "img", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: demoImage}}}}
	createPod(t, c, pod)
	p := waitPodPhase(t, c, "default", "image-volume", corev1.PodRunning, 3*time.Minute)
	if got := p.Spec.Volumes[0].Image.PullPolicy; got != corev1.PullAlways {
		t.Errorf("the image volume's pull policy defaulted to %q, want Always (a :latest reference)", got)
	}

	if out, err := c.Kubectl(t, "", "exec", "image-volume", "--", "ls", "/volume/bin/busybox"); err != nil || !strings.Contains(out, "/volume/bin/busybox") {
		t.Errorf("the image's busybox in the volume: %v %s", err, out)
	}
	if out, err := c.Kubectl(t, "", "exec", "image-volume", "--", "sh", "-c", "echo x > /volume/written"); err == nil || !strings.Contains(out, "Read-only file system") {
		t.Errorf("a write into the image volume: %v %s, want Read-only file system", err, out)
	}
	if out, err := c.Kubectl(t, "", "exec", "image-volume", "--", "/volume/bin/busybox", "true"); err == nil {
		t.Errorf("running a program from the image volume succeeded (want noexec): %s", out)
	}

	bad := onContainerdNode("image-volume-bad", corev1.RestartPolicyAlways, corev1.Container{Name: "main", Image: demoImage})
	bad.Spec.Volumes = []corev1.Volume{{Name: "img", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{}}}}
	if _, err := c.Client.CoreV1().Pods("default").Create(t.Context(), bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.volumes[0].image.reference: Required value") {
		t.Errorf("an image volume without a reference: %v, want 422 spec.volumes[0].image.reference: Required value", err)
	}

	c.MustKubectl(t, "", "delete", "pod", "image-volume", "--wait=true")
	waitMountsGone(t, p, "the image volume")
}

// waitMountsGone waits until the host has no mount of the deleted pod p
// left (what names the volume).
func waitMountsGone(t *testing.T, p *corev1.Pod, what string) {
	t.Helper()
	Eventually(t, time.Minute, what+" is unmounted from the host", func() error {
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
