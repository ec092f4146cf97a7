package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math/rand/v2"
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

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// binary is the glassplane binary every test runs.
var binary string

func TestMain(m *testing.M) {
	binary = os.Getenv("GLASSPLANE_BIN")
	var cleanup func()
	if binary == "" {
		dir, err := os.MkdirTemp("", "glassplane-e2e-bin")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		cleanup = func() { os.RemoveAll(dir) }
		binary = filepath.Join(dir, "glassplane")
		build := exec.Command("go", "build", "-o", binary, "github.com/glassplane/glassplane/cmd/glassplane")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "failed to build glassplane:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	shared.stop()
	if cleanup != nil {
		cleanup()
	}
	os.Exit(code)
}

// Cluster is one running `glassplane up`.
type Cluster struct {
	DataDir    string
	Kubeconfig string
	APIURL     string
	WebURL     string
	EtcdURL    string
	Client     kubernetes.Interface
	Config     *rest.Config

	cmd  *exec.Cmd
	done chan struct{}
	log  *lockedBuffer
}

// sharedCluster is the default cluster most tests use: embedded etcd, the
// local node on containerd (auto), and two simulated nodes.
type sharedState struct {
	once    sync.Once
	cluster *Cluster
	err     error
}

var shared sharedState

func (s *sharedState) stop() {
	if s.cluster != nil {
		s.cluster.Stop()
	}
}

// SharedCluster starts (once) and returns the package's shared cluster.
func SharedCluster(t *testing.T) *Cluster {
	t.Helper()
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "glassplane-e2e")
		if err != nil {
			shared.err = err
			return
		}
		shared.cluster, shared.err = StartCluster(dir, "--simulated-nodes", "2")
	})
	if shared.err != nil {
		t.Fatalf("failed to start the shared cluster: %v", shared.err)
	}
	// A failed test shows what the cluster logged while it ran.
	from := shared.cluster.log.Len()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- shared glassplane log during the test (tail) ---\n%s", tail(shared.cluster.log.Since(from), 80))
		}
	})
	return shared.cluster
}

// NewCluster starts a cluster of the test's own, stopped when the test ends.
func NewCluster(t testing.TB, args ...string) *Cluster {
	t.Helper()
	c, err := StartCluster(t.TempDir(), args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Stop()
		if t.Failed() {
			t.Logf("--- glassplane log tail ---\n%s", tail(c.Log(), 60))
		}
	})
	return c
}

// StartCluster runs `glassplane up` in dir on free loopback ports and waits
// until its API answers /readyz.
func StartCluster(dir string, extra ...string) (*Cluster, error) {
	c := &Cluster{DataDir: filepath.Join(dir, "data"), done: make(chan struct{}), log: &lockedBuffer{}}
	api, web, etcdClient, etcdPeer := freeAddr(), freeAddr(), freeAddr(), freeAddr()
	args := []string{"up",
		"--data-dir", c.DataDir,
		"--api-listen", api,
		"--web-listen", web,
		"--etcd-listen", etcdClient,
		"--etcd-peer-listen", etcdPeer,
		"--simulated-start-delay", "200ms",
	}
	args = append(args, extra...)
	c.cmd = exec.Command(binary, args...)
	c.cmd.Stdout = c.log
	c.cmd.Stderr = c.log
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("failed to start %s: %w", binary, err)
	}
	go func() { c.cmd.Wait(); close(c.done) }()
	c.APIURL = "https://" + api
	c.WebURL = "http://" + web
	c.EtcdURL = "https://" + etcdClient
	c.Kubeconfig = filepath.Join(c.DataDir, "kubeconfig")

	deadline := time.Now().Add(3 * time.Minute)
	for {
		select {
		case <-c.done:
			return nil, fmt.Errorf("glassplane up exited early:\n%s", c.log.String())
		default:
		}
		if time.Now().After(deadline) {
			c.Stop()
			return nil, fmt.Errorf("glassplane up was not ready within 3 minutes:\n%s", c.log.String())
		}
		if err := c.connect(); err == nil {
			return c, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (c *Cluster) connect() error {
	if _, err := os.Stat(c.Kubeconfig); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return err
	}
	// A data directory used before holds the kubeconfig of the earlier
	// start until this one rewrites it: wait for this start's address.
	if strings.TrimSuffix(cfg.Host, "/") != c.APIURL {
		return fmt.Errorf("kubeconfig names %s, not yet this start's %s", cfg.Host, c.APIURL)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	resp, err := hc.Get(c.APIURL + "/readyz")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("readyz: %s", resp.Status)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	c.Config, c.Client = cfg, client
	return nil
}

// Stop ends the cluster with SIGTERM (SIGKILL after 30 s) and waits.
func (c *Cluster) Stop() {
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	select {
	case <-c.done:
		return
	default:
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.done
	}
}

// Log returns what the cluster printed so far.
func (c *Cluster) Log() string { return c.log.String() }

// Kubectl runs /usr/bin/kubectl against the cluster and returns its
// combined output.
func (c *Cluster) Kubectl(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlPath(t), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// MustKubectl is Kubectl that fails the test on a non-zero exit.
func (c *Cluster) MustKubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := c.Kubectl(t, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s\n--- glassplane log tail ---\n%s", strings.Join(args, " "), err, out, tail(c.Log(), 40))
	}
	return out
}

func kubectlPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatal("kubectl is not installed: it is part of this machine's image")
	}
	return p
}

// Eventually polls cond until it returns nil or timeout passes.
func Eventually(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = cond(); err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s: %v", what, timeout, err)
}

// requireTool fails in CI and skips elsewhere when a host tool is missing.
func requireTool(t testing.TB, name, why string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required for %s and is missing (scripts/install-deps.sh installs it)", name, why)
	}
	t.Skipf("%s not installed; needed for %s (run scripts/install-deps.sh)", name, why)
	return ""
}

// insecureGet fetches a URL of the cluster's dashboard.
func insecureGet(url string) (string, error) {
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := hc.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// freeAddr returns a loopback address whose port is free.
//
// The port comes from 20000–29999, below Linux's ephemeral range (32768 and
// up, where the kernel picks the local ports of outgoing connections and of
// listens on port 0) and below the NodePort range (30000–32767, which the
// service proxy claims on 127.0.0.1): a port picked there stays free until
// the server binds it, where one from the ephemeral range could be taken by
// any connection in between. A port is handed out once per test binary.
func freeAddr() string {
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 10000 {
		nextPort++
		if nextPort < 20000 || nextPort > 29999 {
			nextPort = 20000 + rand.IntN(10000)
		}
		if portsGiven[nextPort] {
			continue
		}
		portsGiven[nextPort] = true
		addr := fmt.Sprintf("127.0.0.1:%d", nextPort)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		l.Close()
		return addr
	}
	panic("no free loopback port in 20000-29999")
}

var (
	portsMu    sync.Mutex
	nextPort   int
	portsGiven = map[int]bool{}
)

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
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

// Len is how many bytes were written so far.
func (b *lockedBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

// Since is what was written after the first n bytes.
func (b *lockedBuffer) Since(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf.Bytes()[min(n, b.buf.Len()):])
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lines returns the lines of s that contain substr.
func lines(s, substr string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if strings.Contains(sc.Text(), substr) {
			out = append(out, sc.Text())
		}
	}
	return out
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
