package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestEtcdSecurity attacks the embedded etcd as a web page or a local
// process would (issue 21): plain HTTP, a text/plain POST to the JSON
// gateway with a foreign Origin, HTTPS and etcdctl without a client
// certificate all fail, and nothing is written. etcdctl with etcdctl.env
// reads the keys the API server wrote, and a restart keeps the certificates.
func TestEtcdSecurity(t *testing.T) {
	requireTool(t, "etcdctl", "the etcd security test")
	dir := t.TempDir()
	c, err := StartCluster(dir, "--node-runtime", "none")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)

	env := c.EtcdctlEnv(t)
	t.Run("etcdctl.env", func(t *testing.T) {
		var names []string
		for _, kv := range env {
			name, _, _ := strings.Cut(kv, "=")
			names = append(names, name)
		}
		want := "ETCDCTL_API ETCDCTL_ENDPOINTS ETCDCTL_CACERT ETCDCTL_CERT ETCDCTL_KEY"
		if got := strings.Join(names, " "); got != want {
			t.Errorf("variables %s, want %s", got, want)
		}
		if got := etcdctlVar(env, "ETCDCTL_ENDPOINTS"); got != c.EtcdURL {
			t.Errorf("ETCDCTL_ENDPOINTS=%s, want %s", got, c.EtcdURL)
		}
		for _, name := range []string{"ETCDCTL_CACERT", "ETCDCTL_CERT", "ETCDCTL_KEY"} {
			if p := etcdctlVar(env, name); !filepath.IsAbs(p) {
				t.Errorf("%s=%q is not an absolute path", name, p)
			}
		}
		for _, p := range []string{filepath.Join(c.DataDir, "etcdctl.env"), etcdctlVar(env, "ETCDCTL_KEY")} {
			if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: %v, %v; want mode 0600", p, fi, err)
			}
		}
	})

	host := strings.TrimPrefix(c.EtcdURL, "https://")
	attackKey := "/registry/attack"
	b64 := base64.StdEncoding.EncodeToString([]byte(attackKey))
	put := `{"key":"` + b64 + `","value":"` + b64 + `"}`
	caPEM, err := os.ReadFile(etcdctlVar(env, "ETCDCTL_CACERT"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	attacks := []struct {
		name   string
		method string
		url    string
		tls    *tls.Config
	}{
		{"plain http put from a web page", http.MethodPost, "http://" + host + "/v3/kv/put", nil},
		{"plain http get", http.MethodGet, "http://" + host + "/version", nil},
		{"https put without a client certificate", http.MethodPost, "https://" + host + "/v3/kv/put", &tls.Config{RootCAs: roots}},
		{"https get without a client certificate", http.MethodGet, "https://" + host + "/version", &tls.Config{InsecureSkipVerify: true}},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			req, err := http.NewRequest(a.method, a.url, strings.NewReader(put))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "text/plain")
			req.Header.Set("Origin", "http://evil.example")
			hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: a.tls}}
			resp, err := hc.Do(req)
			if err == nil {
				resp.Body.Close()
				t.Errorf("%s %s answered %s (Access-Control-Allow-Origin %q), want a failed connection",
					a.method, a.url, resp.Status, resp.Header.Get("Access-Control-Allow-Origin"))
			}
		})
	}

	t.Run("no CORS even for the admin", func(t *testing.T) {
		admin, err := tls.LoadX509KeyPair(etcdctlVar(env, "ETCDCTL_CERT"), etcdctlVar(env, "ETCDCTL_KEY"))
		if err != nil {
			t.Fatal(err)
		}
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{admin}},
		}}
		for _, method := range []string{http.MethodGet, http.MethodOptions} {
			req, err := http.NewRequest(method, "https://"+host+"/version", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Origin", "http://evil.example")
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "" {
				t.Errorf("%s /version: Access-Control-Allow-Origin %q, want none", method, got)
			}
		}
	})

	t.Run("etcdctl reads what the API wrote", func(t *testing.T) {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "etcd-security", Namespace: "default"},
			Data:       map[string]string{"motto": "only-with-a-certificate"},
		}
		if _, err := c.Client.CoreV1().ConfigMaps("default").Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for key, want := range map[string]string{
			"/registry/namespaces/default":               `"default"`,
			"/registry/configmaps/default/etcd-security": "only-with-a-certificate",
		} {
			out, err := c.Etcdctl(t, "get", key)
			if err != nil {
				t.Fatalf("etcdctl get %s: %v\n%s", key, err, out)
			}
			if !strings.HasPrefix(out, key+"\n") || !strings.Contains(out, want) {
				t.Errorf("etcdctl get %s printed %q, want the key and a value holding %s", key, out, want)
			}
		}
		out, err := c.Etcdctl(t, "get", attackKey)
		if err != nil || strings.TrimSpace(out) != "" {
			t.Errorf("etcdctl get %s: %v, %q; want no key", attackKey, err, out)
		}
	})

	t.Run("etcdctl without a client certificate", func(t *testing.T) {
		var noCert []string
		for _, kv := range env {
			if !strings.HasPrefix(kv, "ETCDCTL_CERT=") && !strings.HasPrefix(kv, "ETCDCTL_KEY=") {
				noCert = append(noCert, kv)
			}
		}
		out, err := runEtcdctl(t, noCert, "--dial-timeout=3s", "--command-timeout=5s", "get", "/registry/namespaces/default")
		if err == nil || strings.Contains(out, `"default"`) {
			t.Errorf("etcdctl without a client certificate: %v\n%s\nwant a failure", err, out)
		}
	})

	t.Run("a restart reuses the certificates", func(t *testing.T) {
		pkiDir := filepath.Join(c.DataDir, "pki", "etcd")
		files := []string{"ca.crt", "server.crt", "admin.crt", "admin.key"}
		before := map[string][]byte{}
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(pkiDir, f))
			if err != nil {
				t.Fatal(err)
			}
			before[f] = b
		}
		c.Stop()
		again, err := StartCluster(dir, "--node-runtime", "none")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(again.Stop)
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(pkiDir, f))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, before[f]) {
				t.Errorf("%s was issued again on restart", f)
			}
		}
		if out, err := again.Etcdctl(t, "get", "/registry/namespaces/default"); err != nil || !strings.Contains(out, `"default"`) {
			t.Errorf("etcdctl after the restart: %v\n%s", err, out)
		}
	})
}
