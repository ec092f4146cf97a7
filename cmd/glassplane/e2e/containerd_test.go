package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"golang.org/x/net/websocket"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// TestContainerdPodRunsAndIsRemoved needs real containerd: a pod with the
// demo image, pinned to the containerd node, runs in a real container, and
// deleting it stops and removes the container.
func TestContainerdPodRunsAndIsRemoved(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	requireTool(t, "runc", "real containers")
	c := SharedCluster(t)
	// The API answers before the node agents have registered.
	ctx := context.Background()
	var nodes *corev1.NodeList
	Eventually(t, time.Minute, "the shared cluster registers one containerd node", func() error {
		var err error
		nodes, err = c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "node.glassplane.io/runtime=containerd"})
		if err != nil {
			return err
		}
		if len(nodes.Items) != 1 {
			return fmt.Errorf("%d containerd nodes:\n%s", len(nodes.Items), tail(c.Log(), 20))
		}
		return nil
	})
	node := nodes.Items[0].Name
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "real", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"node.glassplane.io/runtime": "containerd"},
			Containers:   []corev1.Container{{Name: "web", Image: "glassplane.local/hello:latest"}},
		},
	}
	if _, err := c.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	running := waitPodPhase(t, c, "default", "real", corev1.PodRunning, 3*time.Minute)
	if running.Spec.NodeName != node {
		t.Fatalf("pod ran on %q, want the containerd node %q", running.Spec.NodeName, node)
	}
	if len(running.Status.ContainerStatuses) != 1 {
		t.Fatalf("container statuses: %+v", running.Status.ContainerStatuses)
	}
	cs := running.Status.ContainerStatuses[0]
	id, ok := strings.CutPrefix(cs.ContainerID, "containerd://")
	if !ok || cs.State.Running == nil {
		t.Fatalf("container status = %+v, want running with a containerd:// ID", cs)
	}

	cli, err := containerd.New(filepath.Join(c.DataDir, "containerd", "containerd.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	cctx := namespaces.WithNamespace(ctx, "glassplane")
	ctr, err := cli.LoadContainer(cctx, id)
	if err != nil {
		t.Fatalf("container %s is not in containerd: %v", id, err)
	}
	task, err := ctr.Task(cctx, nil)
	if err != nil {
		t.Fatalf("container %s has no task: %v", id, err)
	}
	st, err := task.Status(cctx)
	if err != nil || st.Status != containerd.Running {
		t.Fatalf("task status = %v, %v; want running", st.Status, err)
	}

	// The demo's httpd logs each request, so kubectl logs shows a wget's.
	c.MustKubectl(t, "", "exec", "real", "--", "wget", "-q", "-O", "-", "http://127.0.0.1:8080/")
	Eventually(t, 30*time.Second, "the request in kubectl logs", func() error {
		out, err := c.Kubectl(t, "", "logs", "real")
		if err != nil || !strings.Contains(out, "url:/") || !strings.Contains(out, "response:200") {
			return fmt.Errorf("kubectl logs: %v\n%s", err, out)
		}
		return nil
	})
	// The same log read over a WebSocket (binary.k8s.io), as the upstream
	// e2e framework and browser clients read it: one message per chunk,
	// closed at the end of the log.
	Eventually(t, 30*time.Second, "the request in the log over a WebSocket", func() error {
		got, err := logOverWebSocket(c, "default", "real")
		if err != nil || !strings.Contains(got, "url:/") {
			return fmt.Errorf("websocket log: %v\n%s", err, got)
		}
		return nil
	})
	// kubectl cp runs tar in the container, both ways.
	src, back := filepath.Join(t.TempDir(), "note.txt"), filepath.Join(t.TempDir(), "back.txt")
	if err := os.WriteFile(src, []byte("copied in\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.MustKubectl(t, "", "cp", src, "default/real:/tmp/note.txt")
	c.MustKubectl(t, "", "cp", "default/real:/tmp/note.txt", back)
	if b, err := os.ReadFile(back); err != nil || string(b) != "copied in\n" {
		t.Errorf("kubectl cp out of the pod = %q, %v; want what was copied in", b, err)
	}

	if err := c.Client.CoreV1().Pods("default").Delete(ctx, "real", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPodGone(t, c, "default", "real", 2*time.Minute)
	Eventually(t, time.Minute, "container removed from containerd", func() error {
		if _, err := cli.LoadContainer(cctx, id); err == nil {
			return fmt.Errorf("container %s still exists", id)
		}
		return nil
	})
}

// TestContainerdMissingImage shows ErrImagePull/ImagePullBackOff with the
// reason in the pod's events, as Kubernetes does offline.
func TestContainerdMissingImage(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	c := SharedCluster(t)
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "no-image", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"node.glassplane.io/runtime": "containerd"},
			Containers:   []corev1.Container{{Name: "c", Image: "registry.invalid/nothing:1"}},
		},
	}
	if _, err := c.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 2*time.Minute, "ErrImagePull or ImagePullBackOff", func() error {
		p, err := c.Client.CoreV1().Pods("default").Get(ctx, "no-image", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") {
				return nil
			}
		}
		return fmt.Errorf("container statuses %+v", p.Status.ContainerStatuses)
	})
	Eventually(t, time.Minute, "a Failed event names the image", func() error {
		evs, err := c.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=no-image"})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Reason == "Failed" && strings.Contains(e.Message, "registry.invalid/nothing:1") {
				return nil
			}
		}
		return fmt.Errorf("events: %+v", evs.Items)
	})
	if err := c.Client.CoreV1().Pods("default").Delete(ctx, "no-image", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPodGone(t, c, "default", "no-image", 2*time.Minute)
}

// logOverWebSocket reads a pod's log through pods/log upgraded to a
// WebSocket with the binary.k8s.io protocol, until the server closes it.
func logOverWebSocket(c *Cluster, namespace, pod string) (string, error) {
	tlsCfg, err := rest.TLSConfigFor(c.Config)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(c.Config.Host)
	if err != nil {
		return "", err
	}
	u.Scheme = "wss"
	u.Path = "/api/v1/namespaces/" + namespace + "/pods/" + pod + "/log"
	cfg, err := websocket.NewConfig(u.String(), "https://"+u.Host)
	if err != nil {
		return "", err
	}
	cfg.TlsConfig, cfg.Protocol = tlsCfg, []string{"binary.k8s.io"}
	ws, err := websocket.DialConfig(cfg)
	if err != nil {
		return "", err
	}
	defer ws.Close()
	var b strings.Builder
	for {
		var msg []byte
		if err := websocket.Message.Receive(ws, &msg); err != nil {
			if errors.Is(err, io.EOF) {
				return b.String(), nil
			}
			return b.String(), err
		}
		b.Write(msg)
	}
}
