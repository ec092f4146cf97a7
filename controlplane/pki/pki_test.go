package pki

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

func TestCAIsCreatedOnceAndReused(t *testing.T) {
	dir := t.TempDir()
	ca1, err := LoadOrCreateCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	ca2, err := LoadOrCreateCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !ca1.Cert.Equal(ca2.Cert) {
		t.Fatal("second start made a new CA instead of reusing the first")
	}
	st, err := os.Stat(filepath.Join(dir, "pki", "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("ca.key mode = %v, want 0600", st.Mode().Perm())
	}
}

func TestIssuedCertificatesVerify(t *testing.T) {
	ca, err := LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		user   string
		groups []string
	}{
		{"admin", AdminUser, []string{AdminGroup}},
		{"node", "system:node:node-1", []string{"system:nodes"}},
		{"no groups", "alice", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kc, err := ca.Kubeconfig("https://127.0.0.1:6443", tt.user, tt.groups...)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := clientcmd.Load(kc)
			if err != nil {
				t.Fatal(err)
			}
			auth := cfg.AuthInfos[tt.user]
			if auth == nil {
				t.Fatalf("kubeconfig has no user %q", tt.user)
			}
			certPEM := auth.ClientCertificateData
			rc, err := ca.RESTConfig("https://127.0.0.1:6443", tt.user, tt.groups...)
			if err != nil {
				t.Fatal(err)
			}
			for _, pemBytes := range [][]byte{certPEM, rc.CertData} {
				cert := parse(t, pemBytes)
				if cert.Subject.CommonName != tt.user {
					t.Errorf("CN = %q, want %q", cert.Subject.CommonName, tt.user)
				}
				if len(cert.Subject.Organization) != len(tt.groups) {
					t.Errorf("O = %v, want %v", cert.Subject.Organization, tt.groups)
				}
				if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
					t.Errorf("client certificate does not verify against the CA: %v", err)
				}
			}
		})
	}
}

func TestServingCertificateNamesHosts(t *testing.T) {
	ca, err := LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.Serving("10.1.2.3", "api.example")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"127.0.0.1", "localhost", "10.1.2.3", "api.example"} {
		if err := cert.VerifyHostname(host); err != nil {
			t.Errorf("serving certificate does not cover %q: %v", host, err)
		}
	}
	if _, _, err := ca.Client(""); err == nil {
		t.Error("a client certificate without a user was issued")
	}
}

func parse(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatal("no PEM block in certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
