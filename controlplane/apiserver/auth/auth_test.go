package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/glassplane/glassplane/controlplane/pki"
)

func clientCert(t *testing.T, ca *pki.CA, user string, groups ...string) *x509.Certificate {
	t.Helper()
	certPEM, _, err := ca.Client(user, groups...)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestX509Authenticate(t *testing.T) {
	ca, err := pki.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other, err := pki.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	admin := clientCert(t, ca, "admin", "system:masters")
	foreign := clientCert(t, other, "mallory")
	tests := []struct {
		name       string
		state      *tls.ConnectionState
		wantUser   string
		wantGroups []string
		wantErr    error
	}{
		{"no TLS", nil, "", nil, ErrNoIdentity},
		{"no certificate", &tls.ConnectionState{}, "", nil, ErrNoIdentity},
		{"verified by TLS", &tls.ConnectionState{PeerCertificates: []*x509.Certificate{admin}, VerifiedChains: [][]*x509.Certificate{{admin}}}, "admin", []string{"system:masters", GroupAuthenticated}, nil},
		{"verified against ClientCA", &tls.ConnectionState{PeerCertificates: []*x509.Certificate{admin}}, "admin", []string{"system:masters", GroupAuthenticated}, nil},
		{"foreign certificate", &tls.ConnectionState{PeerCertificates: []*x509.Certificate{foreign}}, "", nil, errors.New("any")},
	}
	a := &X509{ClientCA: ca.Pool()}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api", nil)
			r.TLS = tc.state
			u, err := a.Authenticate(r)
			switch {
			case tc.wantErr == ErrNoIdentity:
				if !errors.Is(err, ErrNoIdentity) {
					t.Fatalf("err = %v, want ErrNoIdentity", err)
				}
			case tc.wantErr != nil:
				if err == nil || errors.Is(err, ErrNoIdentity) {
					t.Fatalf("err = %v, want a verification error", err)
				}
			case err != nil:
				t.Fatal(err)
			default:
				if u.Name != tc.wantUser || !slices.Equal(u.Groups, tc.wantGroups) || u.Authenticator != "x509" {
					t.Errorf("user %+v", u)
				}
			}
		})
	}
}

func TestAlwaysAllowAuthenticated(t *testing.T) {
	d, reason, err := AlwaysAllowAuthenticated{}.Authorize(context.Background(), Attributes{User: &User{Name: "u"}, Verb: "get"})
	if err != nil || d != DecisionAllow || reason == "" || d.String() != "allow" {
		t.Errorf("authenticated: %v %q %v", d, reason, err)
	}
	if d, _, _ := (AlwaysAllowAuthenticated{}).Authorize(context.Background(), Attributes{}); d == DecisionAllow {
		t.Error("allowed a request without a user")
	}
	ctx := WithUser(context.Background(), &User{Name: "u"})
	if u, ok := UserFrom(ctx); !ok || u.Name != "u" {
		t.Error("user not carried in the context")
	}
}
