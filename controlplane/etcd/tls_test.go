package etcd_test

import (
	"bufio"
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

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/glassplane/glassplane/controlplane/etcd"
	"github.com/glassplane/glassplane/controlplane/etcd/etcdtest"
)

// The embedded member serves only TLS and only to clients with a
// certificate of its CA: plain HTTP and HTTPS without a client certificate
// fail, the admin's certificate works, and neither the JSON gateway nor CORS
// answers.
func TestEmbeddedMemberRequiresClientCertificate(t *testing.T) {
	dataDir := t.TempDir()
	srv, err := etcdtest.StartOnFreePorts(context.Background(), etcd.Config{DataDir: dataDir})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	endpoint := srv.Endpoints[0]
	if !strings.HasPrefix(endpoint, "https://") {
		t.Fatalf("endpoint %q is not https", endpoint)
	}
	caPEM, err := os.ReadFile(srv.AdminTLS.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	admin, err := tls.LoadX509KeyPair(srv.AdminTLS.CertFile, srv.AdminTLS.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	key := base64.StdEncoding.EncodeToString([]byte("/registry/attack"))
	put := `{"key":"` + key + `","value":"` + key + `"}`

	tests := []struct {
		name     string
		url      string
		body     string
		tls      *tls.Config
		wantCode int // 0: the request fails
	}{
		{"plain http put", strings.Replace(endpoint, "https://", "http://", 1) + "/v3/kv/put", put, nil, 0},
		{"https without a client certificate", endpoint + "/version", "", &tls.Config{RootCAs: roots}, 0},
		{"https put without a client certificate", endpoint + "/v3/kv/put", put, &tls.Config{RootCAs: roots}, 0},
		{"https with the admin certificate", endpoint + "/version", "", &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{admin}}, http.StatusOK},
		{"no JSON gateway", endpoint + "/v3/kv/put", put, &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{admin}}, http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tt.tls}}
			method := http.MethodGet
			if tt.body != "" {
				method = http.MethodPost
			}
			req, err := http.NewRequest(method, tt.url, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "text/plain")
			req.Header.Set("Origin", "http://evil.example")
			resp, err := hc.Do(req)
			if tt.wantCode == 0 {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("%s %s answered %s, want a failed connection", method, tt.url, resp.Status)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.wantCode {
				t.Errorf("status %s, want %d", resp.Status, tt.wantCode)
			}
			if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "" {
				t.Errorf("Access-Control-Allow-Origin: %q, want none", got)
			}
		})
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if resp, err := srv.Client().Get(ctx, "/registry/attack"); err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("the attack key: %v, %v; want no key", resp, err)
	}

	t.Run("clientv3 with the admin certificate", func(t *testing.T) {
		cli := newClient(t, endpoint, transport.TLSInfo{TrustedCAFile: srv.AdminTLS.CAFile, CertFile: srv.AdminTLS.CertFile, KeyFile: srv.AdminTLS.KeyFile})
		if _, err := cli.Put(ctx, "/registry/ok", "v"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("clientv3 without a client certificate", func(t *testing.T) {
		cli := newClient(t, endpoint, transport.TLSInfo{TrustedCAFile: srv.AdminTLS.CAFile})
		short, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if _, err := cli.Put(short, "/registry/attack", "v"); err == nil {
			t.Fatal("a put without a client certificate succeeded")
		}
	})

	t.Run("etcdctl.env", func(t *testing.T) {
		path := filepath.Join(dataDir, "etcd-1", etcd.EtcdctlEnvFile)
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("mode %v, want 0600", fi.Mode().Perm())
		}
		got := readEnv(t, path)
		want := map[string]string{
			"ETCDCTL_API":       "3",
			"ETCDCTL_ENDPOINTS": endpoint,
			"ETCDCTL_CACERT":    srv.AdminTLS.CAFile,
			"ETCDCTL_CERT":      srv.AdminTLS.CertFile,
			"ETCDCTL_KEY":       srv.AdminTLS.KeyFile,
		}
		if len(got) != len(want) {
			t.Errorf("variables %v, want %v", got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s=%q, want %q", k, got[k], v)
			}
		}
		for _, k := range []string{"ETCDCTL_CACERT", "ETCDCTL_CERT", "ETCDCTL_KEY"} {
			if !filepath.IsAbs(got[k]) {
				t.Errorf("%s=%q is not absolute", k, got[k])
			}
		}
		if fi, err := os.Stat(srv.AdminTLS.KeyFile); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("admin key: %v, %v; want mode 0600", fi, err)
		}
	})
}

// An embedded member on an http URL does not start.
func TestEmbeddedMemberRefusesPlainHTTP(t *testing.T) {
	srv, err := etcd.Start(context.Background(), etcd.Config{DataDir: t.TempDir(), ClientURL: "http://127.0.0.1:0"})
	if err == nil {
		srv.Close()
		t.Fatal("the embedded etcd started on an http URL")
	}
	if !strings.Contains(err.Error(), "only https") {
		t.Errorf("error = %v, want one that says only https", err)
	}
}

func newClient(t *testing.T, endpoint string, info transport.TLSInfo) *clientv3.Client {
	t.Helper()
	tlsConfig, err := info.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, TLS: tlsConfig, DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func readEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			t.Fatalf("line %q is not NAME=value", sc.Text())
		}
		env[name] = value
	}
	return env
}
