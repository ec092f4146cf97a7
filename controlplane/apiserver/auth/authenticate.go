package auth

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"slices"
)

// ErrNoIdentity means the request carried no credentials an authenticator
// recognises.
var ErrNoIdentity = errors.New("no credentials")

// Authenticator finds the user behind a request. It returns ErrNoIdentity
// when the request carries no credentials it understands, and another error
// when credentials were present but invalid.
type Authenticator interface {
	Authenticate(r *http.Request) (*User, error)
}

// AuthenticatorFunc adapts a function to Authenticator.
type AuthenticatorFunc func(r *http.Request) (*User, error)

// Authenticate calls f(r).
func (f AuthenticatorFunc) Authenticate(r *http.Request) (*User, error) { return f(r) }

// X509 authenticates TLS client certificates: the user is the certificate's
// Common Name and the groups its Organizations, plus system:authenticated.
type X509 struct {
	// ClientCA verifies certificates the TLS layer did not verify itself
	// (a server configured with tls.RequestClientCert). When the TLS layer
	// verified the chain (tls.VerifyClientCertIfGiven), that chain is used.
	ClientCA *x509.CertPool
}

// Authenticate implements Authenticator.
func (a *X509) Authenticate(r *http.Request) (*User, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, ErrNoIdentity
	}
	var leaf *x509.Certificate
	switch {
	case len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0:
		leaf = r.TLS.VerifiedChains[0][0]
	case a.ClientCA != nil:
		leaf = r.TLS.PeerCertificates[0]
		inter := x509.NewCertPool()
		for _, c := range r.TLS.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: a.ClientCA, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			return nil, fmt.Errorf("failed to verify client certificate %q: %w", leaf.Subject.CommonName, err)
		}
	default:
		return nil, ErrNoIdentity
	}
	if leaf.Subject.CommonName == "" {
		return nil, errors.New("client certificate has no common name")
	}
	groups := slices.Clone(leaf.Subject.Organization)
	if !slices.Contains(groups, GroupAuthenticated) {
		groups = append(groups, GroupAuthenticated)
	}
	return &User{Name: leaf.Subject.CommonName, Groups: groups, Authenticator: "x509"}, nil
}
