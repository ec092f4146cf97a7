package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// onContainerdNode is a pod pinned to the cluster's containerd node.
func onContainerdNode(name string, policy corev1.RestartPolicy, containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{"node.glassplane.io/runtime": "containerd"},
			RestartPolicy:                 policy,
			TerminationGracePeriodSeconds: new(int64),
			Containers:                    containers,
		},
	}
}

func createPod(t *testing.T, c *Cluster, pod *corev1.Pod) {
	t.Helper()
	if _, err := c.Client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", pod.Name, err)
	}
	t.Cleanup(func() {
		_ = c.Client.CoreV1().Pods(pod.Namespace).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	})
}

const demoImage = "glassplane.local/hello:latest"

// TestNodePodsReachEachOtherByPodIP: two pods on the containerd node get
// their own addresses from the pod CIDR and one fetches the other's page
// (busybox wget to httpd); the host reaches the pod too. A pod's
// /etc/hosts is the kubelet's: localhost, its own address under its
// hostname, and its hostAliases.
func TestNodePodsReachEachOtherByPodIP(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	c := SharedCluster(t)
	serverPod := onContainerdNode("ip-server", corev1.RestartPolicyAlways, corev1.Container{Name: "web", Image: demoImage})
	serverPod.Spec.HostAliases = []corev1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"foo.local", "bar.local"}}}
	createPod(t, c, serverPod)
	server := waitPodPhase(t, c, "default", "ip-server", corev1.PodRunning, 3*time.Minute)
	if server.Status.PodIP == "" || server.Status.PodIP == server.Status.HostIP {
		t.Fatalf("server pod IP = %q (host %q), want its own address", server.Status.PodIP, server.Status.HostIP)
	}
	hosts := c.MustKubectl(t, "", "exec", "ip-server", "--", "cat", "/etc/hosts")
	for _, line := range []string{"127.0.0.1\tlocalhost", server.Status.PodIP + "\tip-server", "10.1.2.3\tfoo.local\tbar.local"} {
		if !strings.Contains(hosts, line+"\n") {
			t.Errorf("the pod's /etc/hosts has no line %q:\n%s", line, hosts)
		}
	}
	if out := c.MustKubectl(t, "", "exec", "ip-server", "--", "wget", "-q", "-O", "-", "http://localhost:8080/"); !strings.Contains(out, "Hello from ip-server") {
		t.Errorf("the pod fetched %q from localhost, want its own page", out)
	}
	node, err := c.Client.CoreV1().Nodes().Get(context.Background(), server.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Spec.PodCIDR == "" || node.Annotations["node.glassplane.io/pod-network"] != "cni" {
		t.Fatalf("node podCIDR %q, pod network %q; want a CNI pod network", node.Spec.PodCIDR, node.Annotations["node.glassplane.io/pod-network"])
	}
	url := fmt.Sprintf("http://%s:8080/", server.Status.PodIP)
	createPod(t, c, onContainerdNode("ip-client", corev1.RestartPolicyNever, corev1.Container{Name: "wget", Image: demoImage,
		Command: []string{"wget", "-q", "-O", "-", url}}))
	client := waitPodPhase(t, c, "default", "ip-client", corev1.PodSucceeded, 3*time.Minute)
	if client.Status.PodIP == "" || client.Status.PodIP == server.Status.PodIP {
		t.Errorf("client pod IP = %q, want its own address", client.Status.PodIP)
	}
	out := c.MustKubectl(t, "", "logs", "ip-client")
	if !strings.Contains(out, "Hello from ip-server") {
		t.Errorf("client fetched %q, want the server's page", out)
	}
	Eventually(t, time.Minute, "the host reaches the pod", func() error {
		body, err := insecureGet(url)
		if err != nil {
			return err
		}
		if !strings.Contains(body, "Hello from ip-server") {
			return fmt.Errorf("got %q", body)
		}
		return nil
	})
}

// TestNodeTerminationMessage: a container's termination message (what it
// wrote to /dev/termination-log) is in its terminated state, as kubectl
// shows it; a failed container with FallbackToLogsOnError that wrote none
// gets the end of its log.
func TestNodeTerminationMessage(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	c := SharedCluster(t)
	createPod(t, c, onContainerdNode("last-words", corev1.RestartPolicyNever,
		corev1.Container{Name: "file", Image: demoImage, Command: []string{"sh", "-c", "printf 'bye from file' > /dev/termination-log"}},
		corev1.Container{Name: "logs", Image: demoImage, Command: []string{"sh", "-c", "echo first; echo last; exit 4"},
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError}))
	waitPodPhase(t, c, "default", "last-words", corev1.PodFailed, 3*time.Minute)
	for container, want := range map[string]string{"file": "bye from file", "logs": "first\nlast\n"} {
		got := c.MustKubectl(t, "", "get", "pod", "last-words", "-o", `jsonpath={.status.containerStatuses[?(@.name=="`+container+`")].state.terminated.message}`)
		if got != want {
			t.Errorf("container %s: termination message %q, want %q", container, got, want)
		}
	}
}

// TestNodeKubectlLogsAndExec: kubectl logs (whole, --tail, -f streaming)
// and kubectl exec (output, exit code, stdin) go through the API server to
// the node agent.
func TestNodeKubectlLogsAndExec(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	c := SharedCluster(t)
	createPod(t, c, onContainerdNode("talker", corev1.RestartPolicyAlways, corev1.Container{Name: "main", Image: demoImage,
		Env:     []corev1.EnvVar{{Name: "GREETING", Value: "hi there"}},
		Command: []string{"sh", "-c", "trap 'exit 0' TERM; i=0; while true; do i=$((i+1)); echo tick-$i; sleep 0.2; done"}}))
	waitPodPhase(t, c, "default", "talker", corev1.PodRunning, 3*time.Minute)

	t.Run("logs", func(t *testing.T) {
		Eventually(t, time.Minute, "three ticks logged", func() error {
			out, err := c.Kubectl(t, "", "logs", "talker")
			if err != nil || !strings.HasPrefix(out, "tick-1\ntick-2\ntick-3\n") {
				return fmt.Errorf("%v: %q", err, out)
			}
			return nil
		})
		out := c.MustKubectl(t, "", "logs", "talker", "--tail=1", "-c", "main")
		if !strings.HasPrefix(out, "tick-") || strings.Count(out, "\n") != 1 {
			t.Errorf("--tail=1 printed %q, want one tick line", out)
		}
		out = c.MustKubectl(t, "", "logs", "talker", "--tail=1", "--timestamps")
		ts, line, _ := strings.Cut(strings.TrimSpace(out), " ")
		if _, err := time.Parse(time.RFC3339Nano, ts); err != nil || !strings.HasPrefix(line, "tick-") {
			t.Errorf("--timestamps printed %q", out)
		}
	})
	t.Run("logs -f streams", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, kubectlPath(t), "logs", "-f", "--tail=1", "talker")
		cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cancel(); cmd.Wait() }()
		sc := bufio.NewScanner(stdout)
		var seen []string
		for len(seen) < 5 && sc.Scan() {
			seen = append(seen, sc.Text())
		}
		if len(seen) < 5 {
			t.Fatalf("kubectl logs -f printed only %q", seen)
		}
		for i := 1; i < len(seen); i++ {
			var a, b int
			fmt.Sscanf(seen[i-1], "tick-%d", &a)
			fmt.Sscanf(seen[i], "tick-%d", &b)
			if b != a+1 {
				t.Errorf("streamed lines %q are not consecutive ticks", seen)
				break
			}
		}
	})
	t.Run("exec", func(t *testing.T) {
		out := c.MustKubectl(t, "", "exec", "talker", "--", "sh", "-c", "echo $GREETING")
		if out != "hi there\n" {
			t.Errorf("exec printed %q, want %q", out, "hi there\n")
		}
		out = c.MustKubectl(t, "piped in\n", "exec", "-i", "talker", "--", "cat")
		if out != "piped in\n" {
			t.Errorf("exec -i cat printed %q, want %q", out, "piped in\n")
		}
		out, err := c.Kubectl(t, "", "exec", "talker", "--", "sh", "-c", "echo failing >&2; exit 3")
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) || exitErr.ExitCode() != 3 || !strings.Contains(out, "command terminated with exit code 3") || !strings.Contains(out, "failing") {
			t.Errorf("exec exit 3: err %v, output %q; want kubectl to exit 3 saying so", err, out)
		}
	})
}
