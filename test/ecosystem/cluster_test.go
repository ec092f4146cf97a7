package ecosystem

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// cluster is the one `glassplane up` the package's tests share; each test
// works in namespaces and API groups of its own.
var cluster *Cluster

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "glassplane-ecosystem")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary := os.Getenv("GLASSPLANE_BIN")
	if binary == "" {
		binary = filepath.Join(dir, "glassplane")
		if err := goBuild("../..", binary, "./cmd/glassplane"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	cluster, err = startCluster(binary, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Operators and charts come to a cluster that is running: the tests
	// start once its controllers (the garbage collector last) are at work.
	if err := cluster.waitGarbageCollector(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		cluster.stop()
		return 1
	}
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "--- glassplane log: warnings and errors ---\n%s\n", cluster.log.grep(100, "level=WARN", "level=ERROR", " E1", " W1"))
		fmt.Fprintf(os.Stderr, "--- glassplane log tail ---\n%s\n", cluster.log.tail(60))
	}
	cluster.stop()
	return code
}

// goBuild runs `go build -o out pkg` in dir.
func goBuild(dir, out, pkg string) error {
	build := exec.Command("go", "build", "-o", out, pkg)
	build.Dir = dir
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("failed to build %s: %w", pkg, err)
	}
	return nil
}

// Cluster is one running `glassplane up` with two simulated nodes and no
// local node.
type Cluster struct {
	Kubeconfig string
	Config     *rest.Config
	Client     kubernetes.Interface
	Dynamic    dynamic.Interface

	cmd  *exec.Cmd
	done chan struct{}
	log  *lockedBuffer
}

// startCluster runs `glassplane up` in dir on free loopback ports and waits
// until its API answers /readyz.
func startCluster(binary, dir string) (*Cluster, error) {
	data := filepath.Join(dir, "data")
	c := &Cluster{Kubeconfig: filepath.Join(data, "kubeconfig"), done: make(chan struct{}), log: &lockedBuffer{}}
	api := freeAddr()
	c.cmd = exec.Command(binary, "up",
		"--data-dir", data,
		"--api-listen", api,
		"--web-listen", freeAddr(),
		"--etcd-listen", freeAddr(),
		"--etcd-peer-listen", freeAddr(),
		"--node-runtime", "none",
		"--simulated-nodes", "2",
		"--simulated-start-delay", "200ms",
	)
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("failed to start %s: %w", binary, err)
	}
	go func() { c.cmd.Wait(); close(c.done) }()
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		select {
		case <-c.done:
			return nil, fmt.Errorf("glassplane up exited early:\n%s", c.log)
		default:
		}
		if time.Now().After(deadline) {
			c.stop()
			return nil, fmt.Errorf("glassplane up was not ready within 3 minutes:\n%s", c.log)
		}
		if err := c.connect("https://" + api); err == nil {
			return c, nil
		}
	}
}

func (c *Cluster) connect(apiURL string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return err
	}
	if strings.TrimSuffix(cfg.Host, "/") != apiURL {
		return fmt.Errorf("kubeconfig names %s, not yet %s", cfg.Host, apiURL)
	}
	cfg.QPS, cfg.Burst = 100, 200
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	resp, err := hc.Get(apiURL + "/readyz")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("readyz: %s", resp.Status)
	}
	if c.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if c.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return err
	}
	c.Config = cfg
	return nil
}

// waitGarbageCollector waits until the garbage collector deletes a
// ConfigMap whose only owner never existed.
func (c *Cluster) waitGarbageCollector() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	orphan := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ecosystem-gc-probe", Namespace: "default",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "never-was", UID: "00000000-0000-0000-0000-00000000dead"}}}}
	cms := c.Client.CoreV1().ConfigMaps("default")
	if _, err := cms.Create(ctx, orphan, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("failed to create ConfigMap default/%s: %w", orphan.Name, err)
	}
	for {
		_, err := cms.Get(ctx, orphan.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the garbage collector did not delete ConfigMap default/%s, owned by a ConfigMap that never was: %w", orphan.Name, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stop ends the cluster with SIGTERM (SIGKILL to its group after 30 s).
func (c *Cluster) stop() {
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.done
	}
}

// eventually polls cond every 200 ms until it returns nil, failing the
// test with cond's last error when timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if err = cond(); err == nil {
			return
		}
	}
	t.Fatalf("%s: not within %s: %v", what, timeout, err)
}

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// lockedBuffer collects a process's output safely.
type lockedBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// grep returns the last n lines written that contain any of subs.
func (b *lockedBuffer) grep(n int, subs ...string) string {
	var out []string
	for _, line := range strings.Split(b.String(), "\n") {
		for _, sub := range subs {
			if strings.Contains(line, sub) {
				out = append(out, line)
				break
			}
		}
	}
	return strings.Join(out[max(0, len(out)-n):], "\n")
}

// tail returns the last n lines written.
func (b *lockedBuffer) tail(n int) string {
	lines := strings.Split(b.String(), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
