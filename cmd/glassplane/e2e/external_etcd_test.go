package e2e

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/pki"
)

// TestExternalEtcd runs `glassplane up --etcd-endpoints` against Debian's
// etcd-server started by the test, in plain HTTP and in TLS with client
// certificates (--etcd-cafile, --etcd-certfile, --etcd-keyfile), and finds
// the pod under its Kubernetes key in that etcd.
func TestExternalEtcd(t *testing.T) {
	etcdBin := requireTool(t, "etcd", "the external etcd test")
	tests := []struct {
		name string
		tls  bool
	}{
		{"http", false},
		{"tls with client certificates", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			client, peer := freeAddr(), freeAddr()
			scheme, etcdArgs, upArgs := "http", []string(nil), []string(nil)
			var files externalEtcdTLS
			if tt.tls {
				files = newExternalEtcdTLS(t, filepath.Join(dir, "pki"))
				scheme = "https"
				etcdArgs = []string{"--cert-file", files.serverCert, "--key-file", files.serverKey,
					"--trusted-ca-file", files.ca, "--client-cert-auth"}
				upArgs = []string{"--etcd-cafile", files.ca, "--etcd-certfile", files.clientCert, "--etcd-keyfile", files.clientKey}
			}
			endpoint := scheme + "://" + client
			etcd := exec.Command(etcdBin, append([]string{
				"--name", "external",
				"--data-dir", filepath.Join(dir, "etcd"),
				"--listen-client-urls", endpoint,
				"--advertise-client-urls", endpoint,
				"--listen-peer-urls", "http://" + peer,
				"--initial-advertise-peer-urls", "http://" + peer,
				"--initial-cluster", "external=http://" + peer,
			}, etcdArgs...)...)
			log := &lockedBuffer{}
			etcd.Stdout, etcd.Stderr = log, log
			if err := etcd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { etcd.Process.Kill(); etcd.Wait() })

			if tt.tls {
				// Without its client certificate glassplane cannot reach the
				// cluster and says so.
				_, err := StartCluster(t.TempDir(), "--etcd-endpoints", endpoint, "--etcd-cafile", files.ca, "--node-runtime", "none")
				if err == nil || !strings.Contains(err.Error(), "failed to reach etcd") {
					t.Fatalf("glassplane up without an etcd client certificate: %v, want it to fail reaching etcd", err)
				}
			}
			c := NewCluster(t, append([]string{"--etcd-endpoints", endpoint, "--node-runtime", "simulated"}, upArgs...)...)
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

			// etcdctl.env names the external cluster and the files given.
			env := c.EtcdctlEnv(t)
			if got := etcdctlVar(env, "ETCDCTL_ENDPOINTS"); got != endpoint {
				t.Errorf("ETCDCTL_ENDPOINTS=%s, want %s", got, endpoint)
			}
			if got := etcdctlVar(env, "ETCDCTL_CERT"); got != files.clientCert {
				t.Errorf("ETCDCTL_CERT=%s, want %q", got, files.clientCert)
			}
			resp, err := c.EtcdClient(t).Get(context.Background(), "/registry/pods/default/on-external")
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Kvs) != 1 || !strings.Contains(string(resp.Kvs[0].Value), `"on-external"`) {
				t.Fatalf("the pod is not stored in the external etcd: %v", resp.Kvs)
			}
			if _, err := os.Stat(filepath.Join(c.DataDir, "etcd")); err == nil {
				t.Fatal("an embedded etcd data dir was created although --etcd-endpoints was given")
			}
		})
	}
}

// externalEtcdTLS are the PEM files of an external etcd with client
// certificates.
type externalEtcdTLS struct {
	ca, serverCert, serverKey, clientCert, clientKey string
}

// newExternalEtcdTLS writes a CA, a serving certificate for 127.0.0.1 and a
// client certificate into dir.
func newExternalEtcdTLS(t *testing.T, dir string) externalEtcdTLS {
	t.Helper()
	ca, err := pki.LoadOrCreateCAIn(dir, "external-etcd-ca")
	if err != nil {
		t.Fatal(err)
	}
	files := externalEtcdTLS{
		ca:         filepath.Join(dir, "ca.crt"),
		serverCert: filepath.Join(dir, "server.crt"), serverKey: filepath.Join(dir, "server.key"),
		clientCert: filepath.Join(dir, "client.crt"), clientKey: filepath.Join(dir, "client.key"),
	}
	for _, c := range []struct {
		cert, key string
		tmpl      *x509.Certificate
	}{
		{files.serverCert, files.serverKey, &x509.Certificate{
			Subject:     pkix.Name{CommonName: "external-etcd"},
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
			DNSNames:    []string{"localhost"},
		}},
		{files.clientCert, files.clientKey, &x509.Certificate{
			Subject:     pkix.Name{CommonName: "glassplane"},
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}},
	} {
		certPEM, keyPEM, err := ca.Issue(c.tmpl)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(c.cert, certPEM, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(c.key, keyPEM, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return files
}
