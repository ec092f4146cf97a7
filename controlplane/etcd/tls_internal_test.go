package etcd

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/glassplane/glassplane/controlplane/pki"
)

// A restart reuses the member's certificates, and reissues the serving and
// peer ones, and only those, when they do not cover a new listen host.
func TestLoadOrCreateMemberTLSReusesCertificates(t *testing.T) {
	dir := t.TempDir()
	first, err := loadOrCreateMemberTLS(dir, certHosts("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	read := func(path string) []byte {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	files := []string{first.admin.CAFile, first.admin.CertFile, first.admin.KeyFile, first.serverCert, first.serverKey, first.peerCert}
	before := map[string][]byte{}
	for _, f := range files {
		before[f] = read(f)
	}

	tests := []struct {
		name    string
		hosts   []string
		changed map[string]bool
	}{
		{"same hosts", certHosts("127.0.0.1"), nil},
		{"a new listen IP", certHosts("10.1.2.3"), map[string]bool{first.serverCert: true, first.serverKey: true, first.peerCert: true}},
		{"the new IP again", certHosts("10.1.2.3"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := loadOrCreateMemberTLS(dir, tt.hosts); err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				after := read(f)
				if changed := !bytes.Equal(before[f], after); changed != tt.changed[f] {
					t.Errorf("%s changed = %v, want %v", f, changed, tt.changed[f])
				}
				before[f] = after
			}
		})
	}
	if err := checkCert(mustCA(t, dir), first.serverCert, first.serverKey, []string{"10.1.2.3", "127.0.0.1", "localhost", "::1"}); err != nil {
		t.Errorf("the reissued serving certificate: %v", err)
	}
}

func mustCA(t *testing.T, dataDir string) *pki.CA {
	t.Helper()
	ca, err := pki.LoadOrCreateCAIn(filepath.Join(dataDir, "pki", "etcd"), CAName)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func TestShellQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/var/lib/glassplane/pki/etcd/ca.crt", "/var/lib/glassplane/pki/etcd/ca.crt"},
		{"https://127.0.0.1:2379,https://[::1]:2379", "https://127.0.0.1:2379,https://[::1]:2379"},
		{"/home/a b/ca.crt", "'/home/a b/ca.crt'"},
		{"/it's", `'/it'\''s'`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := shellQuote(tt.in); got != tt.want {
				t.Errorf("shellQuote(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
