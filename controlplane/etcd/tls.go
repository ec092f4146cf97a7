package etcd

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/glassplane/glassplane/controlplane/pki"
)

const (
	// CAName is the common name of the etcd CA.
	CAName = "glassplane-etcd-ca"
	// AdminCommonName is the common name of the admin's etcd client
	// certificate, the one etcdctl.env names.
	AdminCommonName = "glassplane-etcd-admin"
	// EtcdctlEnvFile is the file in the data directory that sets etcdctl's
	// endpoint, CA and client certificate: `set -a; . etcdctl.env; set +a`.
	EtcdctlEnvFile = "etcdctl.env"
	// renewBefore is how long before it expires a certificate is reissued on
	// start.
	renewBefore = 30 * 24 * time.Hour
)

// ClientTLS names the PEM files a client of etcd trusts and presents.
type ClientTLS struct {
	// CAFile verifies etcd's serving certificate.
	CAFile string
	// CertFile and KeyFile are the client certificate and its key.
	CertFile, KeyFile string
}

// memberTLS is the embedded member's TLS in <data-dir>/pki/etcd. The member
// has a CA of its own, apart from the cluster CA, as kubeadm's etcd does: the
// cluster CA signs every API user's and node's certificate, and none of those
// may open etcd. The serving and peer certificates cover the listen hosts;
// the admin's client certificate is what etcdctl.env names.
type memberTLS struct {
	admin                 ClientTLS
	serverCert, serverKey string
	peerCert, peerKey     string
}

// loadOrCreateMemberTLS reuses the certificates in <dataDir>/pki/etcd that
// are signed by the etcd CA, valid for more than renewBefore and, for the
// serving and peer certificates, cover hosts; it issues the others (keys
// 0600). The CA itself is created on first start and kept.
func loadOrCreateMemberTLS(dataDir string, hosts []string) (memberTLS, error) {
	dir := filepath.Join(dataDir, "pki", "etcd")
	ca, err := pki.LoadOrCreateCAIn(dir, CAName)
	if err != nil {
		return memberTLS{}, fmt.Errorf("failed to load the etcd CA in %q: %w", dir, err)
	}
	path := func(name string) string { return filepath.Join(dir, name) }
	m := memberTLS{
		admin:      ClientTLS{CAFile: path("ca.crt"), CertFile: path("admin.crt"), KeyFile: path("admin.key")},
		serverCert: path("server.crt"), serverKey: path("server.key"),
		peerCert: path("peer.crt"), peerKey: path("peer.key"),
	}
	// Server and peer certificates are also client certificates: a member
	// dials its peers with its peer certificate.
	hostCert := func(cn string) *x509.Certificate {
		t := &x509.Certificate{
			Subject:     pkix.Name{CommonName: cn},
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		}
		for _, h := range hosts {
			if ip := net.ParseIP(h); ip != nil {
				t.IPAddresses = append(t.IPAddresses, ip)
			} else {
				t.DNSNames = append(t.DNSNames, h)
			}
		}
		return t
	}
	certs := []struct {
		cert, key string
		hosts     []string
		tmpl      *x509.Certificate
	}{
		{m.serverCert, m.serverKey, hosts, hostCert("glassplane-etcd-server")},
		{m.peerCert, m.peerKey, hosts, hostCert("glassplane-etcd-peer")},
		{m.admin.CertFile, m.admin.KeyFile, nil, &x509.Certificate{
			Subject:     pkix.Name{CommonName: AdminCommonName},
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}},
	}
	for _, c := range certs {
		if err := ensureCert(ca, c.cert, c.key, c.hosts, c.tmpl); err != nil {
			return memberTLS{}, err
		}
	}
	return m, nil
}

// ensureCert keeps the certificate in certPath and keyPath when it is still
// good (see loadOrCreateMemberTLS) and issues tmpl in its place otherwise.
func ensureCert(ca *pki.CA, certPath, keyPath string, hosts []string, tmpl *x509.Certificate) error {
	if err := checkCert(ca, certPath, keyPath, hosts); err == nil {
		return nil
	}
	certPEM, keyPEM, err := ca.Issue(tmpl)
	if err != nil {
		return err
	}
	if err := writeFile(keyPath, keyPEM, 0o600); err != nil {
		return err
	}
	return writeFile(certPath, certPEM, 0o644)
}

func checkCert(ca *pki.CA, certPath, keyPath string, hosts []string) error {
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return err
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return err
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return err
	}
	if time.Until(leaf.NotAfter) < renewBefore {
		return errors.New("expires soon")
	}
	for _, h := range hosts {
		if err := leaf.VerifyHostname(h); err != nil {
			return err
		}
	}
	return nil
}

// certHosts returns the names the serving and peer certificates cover:
// localhost, the loopback addresses and the hosts of urls; an unspecified
// address (0.0.0.0, ::) adds the machine's host name.
func certHosts(urls ...string) []string {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	add := func(h string) {
		for _, seen := range hosts {
			if seen == h {
				return
			}
		}
		hosts = append(hosts, h)
	}
	for _, h := range urls {
		if ip := net.ParseIP(h); ip != nil && ip.IsUnspecified() {
			if name, err := os.Hostname(); err == nil {
				add(name)
			}
			continue
		}
		if h != "" {
			add(h)
		}
	}
	return hosts
}

// writeEtcdctlEnv writes path, 0600, with the variables etcdctl reads:
// ETCDCTL_API, ETCDCTL_ENDPOINTS and, when set, ETCDCTL_CACERT, ETCDCTL_CERT
// and ETCDCTL_KEY as absolute paths, one NAME=value a line, quoted for the
// shell only when a value needs it.
func writeEtcdctlEnv(path string, endpoints []string, t ClientTLS) error {
	var b strings.Builder
	fmt.Fprintf(&b, "ETCDCTL_API=3\nETCDCTL_ENDPOINTS=%s\n", shellQuote(strings.Join(endpoints, ",")))
	for _, v := range []struct{ name, file string }{
		{"ETCDCTL_CACERT", t.CAFile}, {"ETCDCTL_CERT", t.CertFile}, {"ETCDCTL_KEY", t.KeyFile},
	} {
		if v.file == "" {
			continue
		}
		abs, err := filepath.Abs(v.file)
		if err != nil {
			return fmt.Errorf("failed to resolve %q: %w", v.file, err)
		}
		fmt.Fprintf(&b, "%s=%s\n", v.name, shellQuote(abs))
	}
	return writeFile(path, []byte(b.String()), 0o600)
}

// shellQuote single-quotes s when it holds anything but letters, digits and
// the punctuation of paths and URLs.
func shellQuote(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-:,[]@+=%", r)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

// writeFile writes data to path and sets perm also on a file that existed.
func writeFile(path string, data []byte, perm os.FileMode) error {
	if err := os.WriteFile(path, data, perm); err != nil {
		return fmt.Errorf("failed to write %q: %w", path, err)
	}
	if err := os.Chmod(path, perm); err != nil {
		return fmt.Errorf("failed to set the mode of %q: %w", path, err)
	}
	return nil
}
