package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	// CAValidity is how long the cluster CA is valid.
	CAValidity = 10 * 365 * 24 * time.Hour
	// CertValidity is how long issued certificates are valid.
	CertValidity = 365 * 24 * time.Hour
	// ClusterName names the cluster in kubeconfigs.
	ClusterName = "glassplane"
)

// CA is the cluster certificate authority.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	key     crypto.Signer
}

// LoadOrCreateCA reads <dir>/pki/ca.crt and ca.key, creating them when absent.
func LoadOrCreateCA(dir string) (*CA, error) {
	return LoadOrCreateCAIn(filepath.Join(dir, "pki"), "glassplane-ca")
}

// LoadOrCreateCAIn reads <pkiDir>/ca.crt and ca.key, creating a CA named
// commonName there when they are absent. A second CA this way (etcd's, in
// <data-dir>/pki/etcd, as kubeadm keeps one) trusts none of the certificates
// the first one issued.
func LoadOrCreateCAIn(pkiDir, commonName string) (*CA, error) {
	certPath, keyPath := filepath.Join(pkiDir, "ca.crt"), filepath.Join(pkiDir, "ca.key")
	certPEM, cerr := os.ReadFile(certPath)
	keyPEM, kerr := os.ReadFile(keyPath)
	if cerr == nil && kerr == nil {
		return parseCA(certPEM, keyPEM)
	}
	if !errors.Is(cerr, os.ErrNotExist) && cerr != nil {
		return nil, fmt.Errorf("failed to read %q: %w", certPath, cerr)
	}
	if err := os.MkdirAll(pkiDir, 0o700); err != nil {
		return nil, fmt.Errorf("failed to create %q: %w", pkiDir, err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("failed to generate CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("failed to create CA certificate: %w", err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("failed to encode CA key: %w", err)
	}
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	if err := os.WriteFile(keyPath, keyPEM, 0o600); err != nil {
		return nil, fmt.Errorf("failed to write %q: %w", keyPath, err)
	}
	if err := os.WriteFile(certPath, certPEM, 0o644); err != nil {
		return nil, fmt.Errorf("failed to write %q: %w", certPath, err)
	}
	return parseCA(certPEM, keyPEM)
}

func parseCA(certPEM, keyPEM []byte) (*CA, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("failed to load the cluster CA: %w", err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("failed to parse the cluster CA: %w", err)
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, errors.New("the cluster CA key cannot sign")
	}
	return &CA{Cert: cert, CertPEM: certPEM, key: signer}, nil
}

// Pool returns a pool holding only the CA, for verifying client certificates.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Serving issues a serving certificate for the given host names and IPs
// (localhost and 127.0.0.1 are always included).
func (ca *CA) Serving(hosts ...string) (tls.Certificate, error) {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "glassplane-apiserver"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback},
	}
	for _, h := range hosts {
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	certPEM, keyPEM, err := ca.Issue(tmpl)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// Client issues a client certificate for user in groups, as PEM.
func (ca *CA) Client(user string, groups ...string) (certPEM, keyPEM []byte, err error) {
	if user == "" {
		return nil, nil, errors.New("a client certificate needs a user name")
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return ca.Issue(tmpl)
}

// Issue signs tmpl with a fresh P-256 key, setting its serial number and a
// validity of CertValidity, and returns the certificate and key as PEM.
func (ca *CA) Issue(tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to generate key: %w", err)
	}
	now := time.Now()
	tmpl.SerialNumber = serial()
	tmpl.NotBefore = now.Add(-5 * time.Minute)
	tmpl.NotAfter = now.Add(CertValidity)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to sign certificate for %q: %w", tmpl.Subject.CommonName, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// RESTConfig returns a client-go config that talks to server as user.
func (ca *CA) RESTConfig(server, user string, groups ...string) (*rest.Config, error) {
	certPEM, keyPEM, err := ca.Client(user, groups...)
	if err != nil {
		return nil, err
	}
	return &rest.Config{
		Host:      server,
		UserAgent: user,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   ca.CertPEM,
			CertData: certPEM,
			KeyData:  keyPEM,
		},
	}, nil
}

// Kubeconfig returns a kubeconfig for user in groups against server.
func (ca *CA) Kubeconfig(server, user string, groups ...string) ([]byte, error) {
	certPEM, keyPEM, err := ca.Client(user, groups...)
	if err != nil {
		return nil, err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[ClusterName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca.CertPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	ctxName := user + "@" + ClusterName
	if user == AdminUser {
		ctxName = ClusterName
	}
	cfg.Contexts[ctxName] = &clientcmdapi.Context{Cluster: ClusterName, AuthInfo: user, Namespace: "default"}
	cfg.CurrentContext = ctxName
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to write kubeconfig for %q: %w", user, err)
	}
	return out, nil
}

// AdminUser and AdminGroup are the identity of the admin kubeconfig.
const (
	AdminUser  = "glassplane-admin"
	AdminGroup = "system:masters"
)

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}
