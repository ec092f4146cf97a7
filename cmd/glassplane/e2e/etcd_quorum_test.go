package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// etcdMember is one member of a test etcd cluster on loopback ports.
type etcdMember struct {
	name, client, peer, dataDir string
	cmd                         *exec.Cmd
	log                         *lockedBuffer
}

// startEtcdCluster starts n members of Debian's etcd as one cluster over
// plain http and stops them when the test ends.
func startEtcdCluster(t *testing.T, etcdBin string, n int) []*etcdMember {
	t.Helper()
	dir := t.TempDir()
	members := make([]*etcdMember, n)
	var initial []string
	for i := range members {
		m := &etcdMember{name: fmt.Sprintf("m%d", i), client: freeAddr(), peer: freeAddr()}
		m.dataDir = filepath.Join(dir, m.name)
		members[i] = m
		initial = append(initial, m.name+"=http://"+m.peer)
	}
	for _, m := range members {
		m.start(t, etcdBin, strings.Join(initial, ","))
	}
	t.Cleanup(func() {
		for _, m := range members {
			m.stop()
		}
	})
	return members
}

func (m *etcdMember) start(t *testing.T, etcdBin, initialCluster string) {
	t.Helper()
	m.cmd = exec.Command(etcdBin,
		"--name", m.name,
		"--data-dir", m.dataDir,
		"--listen-client-urls", "http://"+m.client,
		"--advertise-client-urls", "http://"+m.client,
		"--listen-peer-urls", "http://"+m.peer,
		"--initial-advertise-peer-urls", "http://"+m.peer,
		"--initial-cluster", initialCluster,
		"--initial-cluster-state", "new",
	)
	m.log = &lockedBuffer{}
	m.cmd.Stdout, m.cmd.Stderr = m.log, m.log
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
}

func (m *etcdMember) stop() {
	if m.cmd != nil && m.cmd.Process != nil {
		m.cmd.Process.Kill()
		m.cmd.Wait()
		m.cmd = nil
	}
}

// TestHealthFollowsEtcdQuorum runs glassplane on an external three-member
// etcd cluster: /readyz answers 200 while the cluster has a quorum, 500
// with "[-]etcd failed" once two members are stopped (as does /livez/etcd),
// and 200 again once they are back.
func TestHealthFollowsEtcdQuorum(t *testing.T) {
	etcdBin := requireTool(t, "etcd", "the etcd quorum health test")
	members := startEtcdCluster(t, etcdBin, 3)
	var endpoints []string
	initial := make([]string, len(members))
	for i, m := range members {
		endpoints = append(endpoints, "http://"+m.client)
		initial[i] = m.name + "=http://" + m.peer
	}
	c := NewCluster(t, "--etcd-endpoints", strings.Join(endpoints, ","), "--node-runtime", "simulated")
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(path string) (int, string, error) {
		resp, err := hc.Get(c.APIURL + path)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	expect := func(path string, wantCode int, wantText string) func() error {
		return func() error {
			code, body, err := get(path)
			if err != nil {
				return err
			}
			if code != wantCode || !strings.Contains(body, wantText) {
				return fmt.Errorf("%s: %d %q", path, code, body)
			}
			return nil
		}
	}
	Eventually(t, 30*time.Second, "/readyz passes with the quorum", expect("/readyz?verbose", 200, "[+]etcd ok\n[+]etcd-readiness ok\n"))

	members[1].stop()
	members[2].stop()
	Eventually(t, 30*time.Second, "/readyz fails without the quorum", expect("/readyz?verbose", 500, "[-]etcd failed: reason withheld\n[-]etcd-readiness failed: reason withheld\n"))
	Eventually(t, 30*time.Second, "/livez/etcd fails without the quorum", expect("/livez/etcd", 500, "internal server error: "))
	Eventually(t, 30*time.Second, "/readyz?exclude passes without the quorum", expect("/livez?exclude=etcd", 200, "ok"))

	members[1].start(t, etcdBin, strings.Join(initial, ","))
	members[2].start(t, etcdBin, strings.Join(initial, ","))
	Eventually(t, 60*time.Second, "/readyz recovers with the quorum", expect("/readyz", 200, "ok"))
	Eventually(t, 30*time.Second, "/livez/etcd recovers", expect("/livez/etcd", 200, "ok"))
	// Parts that write at start (the DNS add-on's Service and slice) wait
	// out the lost quorum instead of ending the process.
	Eventually(t, 2*time.Minute, "the kube-dns EndpointSlice is written", func() error {
		_, err := c.Client.DiscoveryV1().EndpointSlices("kube-system").Get(context.Background(), "kube-dns", metav1.GetOptions{})
		return err
	})
}
