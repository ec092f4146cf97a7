package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestExternalEtcd runs `glassplane up --etcd-endpoints` against Debian's
// etcd-server started by the test, and finds the pod under its Kubernetes key
// in that etcd.
func TestExternalEtcd(t *testing.T) {
	etcdBin := requireTool(t, "etcd", "the external etcd test")
	dir := t.TempDir()
	client, peer := freeAddr(), freeAddr()
	etcd := exec.Command(etcdBin,
		"--name", "external",
		"--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", "http://"+client,
		"--advertise-client-urls", "http://"+client,
		"--listen-peer-urls", "http://"+peer,
		"--initial-advertise-peer-urls", "http://"+peer,
		"--initial-cluster", "external=http://"+peer,
	)
	log := &lockedBuffer{}
	etcd.Stdout, etcd.Stderr = log, log
	if err := etcd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { etcd.Process.Kill(); etcd.Wait() })

	c := NewCluster(t, "--etcd-endpoints", "http://"+client, "--node-runtime", "simulated")
	if !strings.Contains(c.Log(), "external etcd") {
		t.Errorf("glassplane did not say it uses the external etcd:\n%s", c.Log())
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "on-external", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "glassplane.local/hello:latest"}}},
	}
	if _, err := c.Client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPodPhase(t, c, "default", "on-external", corev1.PodRunning, 2*time.Minute)

	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + client}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	resp, err := cli.Get(context.Background(), "/registry/pods/default/on-external")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || !strings.Contains(string(resp.Kvs[0].Value), `"on-external"`) {
		t.Fatalf("the pod is not stored in the external etcd: %v", resp.Kvs)
	}
	if _, err := os.Stat(filepath.Join(c.DataDir, "etcd")); err == nil {
		t.Fatal("an embedded etcd data dir was created although --etcd-endpoints was given")
	}
}
