package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func examplePath(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "examples", name)
}

func waitPodPhase(t *testing.T, c *Cluster, ns, name string, phase corev1.PodPhase, timeout time.Duration) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	Eventually(t, timeout, fmt.Sprintf("pod %s/%s %s", ns, name, phase), func() error {
		p, err := c.Client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pod = p
		if p.Status.Phase != phase {
			return fmt.Errorf("phase %q (node %q)", p.Status.Phase, p.Spec.NodeName)
		}
		return nil
	})
	return pod
}

func waitPodGone(t *testing.T, c *Cluster, ns, name string, timeout time.Duration) {
	t.Helper()
	Eventually(t, timeout, fmt.Sprintf("pod %s/%s deleted", ns, name), func() error {
		_, err := c.Client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("still there")
	})
}

func TestKubectlSeedPodLifecycle(t *testing.T) {
	c := SharedCluster(t)
	manifest := examplePath("pod.yaml")

	if out := c.MustKubectl(t, "", "apply", "-f", manifest); !strings.Contains(out, "pod/mypod created") {
		t.Fatalf("first apply: %q, want pod/mypod created", out)
	}
	if out := c.MustKubectl(t, "", "apply", "-f", manifest); !strings.Contains(out, "pod/mypod unchanged") {
		t.Fatalf("second apply: %q, want pod/mypod unchanged", out)
	}
	pod := waitPodPhase(t, c, "default", "mypod", corev1.PodRunning, 2*time.Minute)

	out := c.MustKubectl(t, "", "get", "pod", "mypod")
	if !strings.Contains(out, "mypod") || !strings.Contains(out, "Running") {
		t.Fatalf("kubectl get pod mypod:\n%s", out)
	}
	Eventually(t, time.Minute, "describe shows the Scheduled event", func() error {
		out := c.MustKubectl(t, "", "describe", "pod", "mypod")
		want := "Successfully assigned default/mypod to " + pod.Spec.NodeName
		if !strings.Contains(out, "Scheduled") || !strings.Contains(out, want) {
			return fmt.Errorf("describe lacks %q:\n%s", want, out)
		}
		return nil
	})

	// The etcd key exists where Kubernetes keeps it, and its mod revision is
	// the pod's resourceVersion.
	etcd := c.EtcdClient(t)
	Eventually(t, 30*time.Second, "etcd mod revision equals resourceVersion", func() error {
		p, err := c.Client.CoreV1().Pods("default").Get(context.Background(), "mypod", metav1.GetOptions{})
		if err != nil {
			return err
		}
		resp, err := etcd.Get(context.Background(), "/registry/pods/default/mypod")
		if err != nil {
			return err
		}
		if len(resp.Kvs) != 1 {
			return fmt.Errorf("key /registry/pods/default/mypod not in etcd")
		}
		if got := fmt.Sprint(resp.Kvs[0].ModRevision); got != p.ResourceVersion {
			return fmt.Errorf("mod revision %s, resourceVersion %s", got, p.ResourceVersion)
		}
		return nil
	})

	// kubectl get -w sees a change made by another kubectl.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	watch := exec.CommandContext(ctx, kubectlPath(t), "get", "pod", "mypod", "-w", "--output-watch-events")
	watch.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	stdout, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); watch.Wait() }()
	seen := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			seen <- sc.Text()
		}
		close(seen)
	}()
	expectLine(t, seen, "ADDED")
	if out := c.MustKubectl(t, "", "label", "pod", "mypod", "tier=demo"); !strings.Contains(out, "pod/mypod labeled") {
		t.Fatalf("kubectl label: %q", out)
	}
	expectLine(t, seen, "MODIFIED")

	if out := c.MustKubectl(t, "", "delete", "pod", "mypod"); !strings.Contains(out, `pod "mypod" deleted`) {
		t.Fatalf("kubectl delete: %q", out)
	}
	expectLine(t, seen, "DELETED")
	waitPodGone(t, c, "default", "mypod", time.Minute)
	resp, err := etcd.Get(context.Background(), "/registry/pods/default/mypod")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 0 {
		t.Fatal("the etcd key is still there after delete")
	}
}

func expectLine(t *testing.T, lines <-chan string, substr string) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("kubectl get -w ended before a %s line", substr)
			}
			if strings.Contains(l, substr) {
				return
			}
		case <-deadline:
			t.Fatalf("kubectl get -w printed no %s line within a minute", substr)
		}
	}
}

func TestKubectlRunCreateLabelDelete(t *testing.T) {
	c := SharedCluster(t)
	if out := c.MustKubectl(t, "", "run", "runpod", "--image=glassplane.local/hello:latest", "--labels=app=run"); !strings.Contains(out, "pod/runpod created") {
		t.Fatalf("kubectl run: %q", out)
	}
	if out := c.MustKubectl(t, "", "create", "namespace", "team-a"); !strings.Contains(out, "namespace/team-a created") {
		t.Fatalf("kubectl create namespace: %q", out)
	}
	if out := c.MustKubectl(t, "", "create", "configmap", "settings", "-n", "team-a", "--from-literal=color=blue"); !strings.Contains(out, "configmap/settings created") {
		t.Fatalf("kubectl create configmap: %q", out)
	}
	out := c.MustKubectl(t, "", "get", "configmap", "settings", "-n", "team-a", "-o", "jsonpath={.data.color}")
	if out != "blue" {
		t.Fatalf("configmap data = %q, want blue", out)
	}
	out = c.MustKubectl(t, "", "get", "pods", "-l", "app=run", "-o", "name")
	if strings.TrimSpace(out) != "pod/runpod" {
		t.Fatalf("label selector list = %q", out)
	}
	out = c.MustKubectl(t, "", "api-resources")
	for _, want := range []string{"pods", "deployments", "replicasets", "leases", "events", "configmaps"} {
		if !strings.Contains(out, want) {
			t.Errorf("api-resources lacks %s", want)
		}
	}
	if out := c.MustKubectl(t, "", "delete", "pod", "runpod"); !strings.Contains(out, `pod "runpod" deleted`) {
		t.Fatalf("kubectl delete: %q", out)
	}
	waitPodGone(t, c, "default", "runpod", time.Minute)
}

func TestKubectlInvalidNameStoresNothing(t *testing.T) {
	c := SharedCluster(t)
	manifest := `apiVersion: v1
kind: Pod
metadata:
  name: My_Pod
spec:
  containers:
  - name: c
    image: glassplane.local/hello:latest
`
	out, err := c.Kubectl(t, manifest, "apply", "-f", "-")
	if err == nil {
		t.Fatalf("apply of an invalid name succeeded: %s", out)
	}
	if !strings.Contains(out, `Invalid value: "My_Pod"`) {
		t.Fatalf("error does not name the invalid value: %s", out)
	}
	etcd := c.EtcdClient(t)
	resp, err := etcd.Get(context.Background(), "/registry/pods/default/My_Pod")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 0 {
		t.Fatal("a refused pod was written to etcd")
	}
}
