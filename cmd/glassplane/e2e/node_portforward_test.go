package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestNodeKubectlPortForward: `kubectl port-forward` reaches a port of the
// pod through the API server and the node agent, including a server that
// listens only on the pod's localhost.
func TestNodeKubectlPortForward(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	c := SharedCluster(t)
	createPod(t, c, onContainerdNode("forwarded", corev1.RestartPolicyAlways, corev1.Container{Name: "web", Image: demoImage,
		Command: []string{"sh", "-c", `mkdir -p /www; echo "local only" > /www/index.html; httpd -f -p 127.0.0.1:9090 -h /www & ` +
			`mkdir -p /pub; echo "Hello from $(hostname)" > /pub/index.html; exec httpd -f -p 8080 -h /pub`}}))
	waitPodPhase(t, c, "default", "forwarded", corev1.PodRunning, 3*time.Minute)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlPath(t), "port-forward", "pod/forwarded", ":8080", ":9090")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	ports := map[string]string{}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	re := regexp.MustCompile(`^Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)$`)
	deadline := time.After(time.Minute)
	for len(ports) < 2 {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("kubectl port-forward ended: %s", stderr.String())
			}
			if m := re.FindStringSubmatch(l); m != nil {
				ports[m[2]] = m[1]
			}
		case <-deadline:
			t.Fatalf("kubectl port-forward printed no ports: %s", stderr.String())
		}
	}
	go func() {
		for range lines {
		}
	}()
	for remote, want := range map[string]string{"8080": "Hello from forwarded", "9090": "local only"} {
		for i := 0; i < 3; i++ {
			res, err := http.Get("http://127.0.0.1:" + ports[remote] + "/")
			if err != nil {
				t.Fatalf("GET through the forward of %s: %v (kubectl: %s)", remote, err, stderr.String())
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if !strings.Contains(string(body), want) {
				t.Errorf("port %s answered %q, want %q", remote, body, want)
			}
		}
	}
	res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%s/missing", ports["8080"]))
	if err != nil || res.StatusCode != http.StatusNotFound {
		t.Errorf("GET /missing: %v %v, want a 404 from the pod", res, err)
	}
	if res != nil {
		res.Body.Close()
	}
}
