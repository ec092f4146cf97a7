package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// EtcdctlEnv returns the variables of <data-dir>/etcdctl.env, the file
// `glassplane up` writes for etcdctl, in their order as NAME=value.
func (c *Cluster) EtcdctlEnv(t testing.TB) []string {
	t.Helper()
	path := filepath.Join(c.DataDir, "etcdctl.env")
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("failed to open %s: %v", path, err)
	}
	defer f.Close()
	var env []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			t.Fatalf("%s: line %q is not NAME=value", path, sc.Text())
		}
		if len(value) >= 2 && strings.HasPrefix(value, "'") && strings.HasSuffix(value, "'") {
			value = strings.ReplaceAll(value[1:len(value)-1], `'\''`, "'")
		}
		env = append(env, name+"="+value)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return env
}

// etcdctlVar returns the value of name in env (NAME=value entries).
func etcdctlVar(env []string, name string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// Etcdctl runs etcdctl with the variables of etcdctl.env and returns its
// combined output.
func (c *Cluster) Etcdctl(t testing.TB, args ...string) (string, error) {
	t.Helper()
	return runEtcdctl(t, c.EtcdctlEnv(t), args...)
}

// runEtcdctl runs etcdctl with env added to this process's environment.
func runEtcdctl(t testing.TB, env []string, args ...string) (string, error) {
	t.Helper()
	bin := requireTool(t, "etcdctl", "reading etcd as its admin")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// EtcdClient returns a client of the cluster's etcd with the endpoint, CA and
// client certificate of etcdctl.env, closed when the test ends.
func (c *Cluster) EtcdClient(t testing.TB) *clientv3.Client {
	t.Helper()
	env := c.EtcdctlEnv(t)
	info := transport.TLSInfo{
		TrustedCAFile: etcdctlVar(env, "ETCDCTL_CACERT"),
		CertFile:      etcdctlVar(env, "ETCDCTL_CERT"),
		KeyFile:       etcdctlVar(env, "ETCDCTL_KEY"),
	}
	tlsConfig, err := info.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   strings.Split(etcdctlVar(env, "ETCDCTL_ENDPOINTS"), ","),
		TLS:         tlsConfig,
		DialTimeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}
