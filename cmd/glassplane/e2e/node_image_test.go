package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// startRegistry runs Debian's docker-registry on a free loopback port with
// a temporary config and storage, and returns its host:port.
func startRegistry(t *testing.T) string {
	t.Helper()
	bin := requireTool(t, "docker-registry", "the image pull test")
	dir := t.TempDir()
	addr := freeAddr()
	config := fmt.Sprintf("version: 0.1\nlog: {level: error}\nstorage: {filesystem: {rootdirectory: %s}, delete: {enabled: true}}\nhttp: {addr: %s}\n", filepath.Join(dir, "data"), addr)
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	log := &lockedBuffer{}
	cmd := exec.Command(bin, "serve", cfgPath)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start docker-registry: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("docker-registry output:\n%s", tail(log.String(), 30))
		}
	})
	Eventually(t, 30*time.Second, "the registry answers /v2/", func() error {
		res, err := http.Get("http://" + addr + "/v2/")
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", res.StatusCode)
		}
		return nil
	})
	return addr
}

// pushDemoImage pushes the node's demo image to the registry as ref, with
// containerd's client over plain HTTP.
func pushDemoImage(t *testing.T, c *Cluster, ref string) {
	t.Helper()
	cli, err := containerd.New(filepath.Join(c.DataDir, "containerd", "containerd.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := namespaces.WithNamespace(context.Background(), "glassplane")
	var img containerd.Image
	Eventually(t, 2*time.Minute, "the node has its demo image", func() error {
		img, err = cli.GetImage(ctx, demoImage)
		return err
	})
	resolver := docker.NewResolver(docker.ResolverOptions{PlainHTTP: true})
	if err := cli.Push(ctx, ref, img.Target(), containerd.WithResolver(resolver)); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
}

// TestNodePullsFromLocalRegistry: an image pushed to a plain-HTTP registry
// on loopback is pulled by the containerd node and runs; IfNotPresent
// reuses it, Always pulls it again though present, Never with a missing
// image gives ErrImageNeverPull; the node's status lists the image.
func TestNodePullsFromLocalRegistry(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	c := SharedCluster(t)
	registry := startRegistry(t)
	ref := registry + "/glassplane/hello:v1"
	pushDemoImage(t, c, ref)

	pod := func(name string, policy corev1.PullPolicy, image string) *corev1.Pod {
		p := onContainerdNode(name, corev1.RestartPolicyAlways, corev1.Container{Name: "main", Image: image, ImagePullPolicy: policy})
		return p
	}
	createPod(t, c, pod("pulled", corev1.PullIfNotPresent, ref))
	p := waitPodPhase(t, c, "default", "pulled", corev1.PodRunning, 3*time.Minute)
	waitEvent(t, c, "pulled", "Pulling", fmt.Sprintf("Pulling image %q", ref))
	waitEvent(t, c, "pulled", "Pulled", fmt.Sprintf("Successfully pulled image %q", ref))
	if id := p.Status.ContainerStatuses[0].ImageID; !strings.HasPrefix(id, registry+"/glassplane/hello@sha256:") {
		t.Errorf("imageID = %q, want the registry's digest reference", id)
	}

	createPod(t, c, pod("reused", corev1.PullIfNotPresent, ref))
	waitPodPhase(t, c, "default", "reused", corev1.PodRunning, 3*time.Minute)
	waitEvent(t, c, "reused", "Pulled", fmt.Sprintf("Container image %q already present on machine", ref))

	createPod(t, c, pod("always", corev1.PullAlways, ref))
	waitPodPhase(t, c, "default", "always", corev1.PodRunning, 3*time.Minute)
	waitEvent(t, c, "always", "Pulled", fmt.Sprintf("Successfully pulled image %q", ref))

	missing := registry + "/glassplane/hello:missing"
	createPod(t, c, pod("never", corev1.PullNever, missing))
	waitEvent(t, c, "never", "ErrImageNeverPull", fmt.Sprintf("Container image %q is not present with pull policy of Never", missing))
	Eventually(t, time.Minute, "the container waits with ErrImageNeverPull", func() error {
		p, err := getPod(t, c, "never")
		if err != nil {
			return err
		}
		if w := p.Status.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "ErrImageNeverPull" {
			return fmt.Errorf("state %+v", p.Status.ContainerStatuses[0].State)
		}
		return nil
	})

	Eventually(t, 2*time.Minute, "the node's status lists the pulled image", func() error {
		n, err := c.Client.CoreV1().Nodes().Get(context.Background(), p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, img := range n.Status.Images {
			if slices.Contains(img.Names, ref) {
				if img.SizeBytes <= 0 || !strings.Contains(strings.Join(img.Names, " "), "@sha256:") {
					return fmt.Errorf("image entry %+v lacks a size or a digest name", img)
				}
				return nil
			}
		}
		return fmt.Errorf("images %+v", n.Status.Images)
	})
}
