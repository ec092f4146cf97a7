package apiserver_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/apiserver"
)

// TestServiceAccountIssuerDiscovery: the OpenID Provider configuration
// names the tokens' issuer and a key set under it, and a token the
// TokenRequest API issued verifies with that key set alone, as the
// upstream conformance spec's client does.
func TestServiceAccountIssuerDiscovery(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	env := newEnvWith(t, func(c *apiserver.Config) { c.ServiceAccountKey = key })
	ctx := ctxT(t)
	get := func(path string, into any) {
		t.Helper()
		resp, err := env.http.Get(env.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		if err := json.Unmarshal(b, into); err != nil {
			t.Fatalf("GET %s: %v: %s", path, err, b)
		}
	}
	var conf struct {
		Issuer  string   `json:"issuer"`
		JWKSURI string   `json:"jwks_uri"`
		Algs    []string `json:"id_token_signing_alg_values_supported"`
	}
	get("/.well-known/openid-configuration", &conf)
	if conf.Issuer != "https://kubernetes.default.svc.cluster.local" || conf.JWKSURI != conf.Issuer+"/openid/v1/jwks" || len(conf.Algs) != 1 || conf.Algs[0] != "ES256" {
		t.Fatalf("configuration %+v", conf)
	}
	var set struct {
		Keys []struct{ Kty, Kid, Crv, Alg, X, Y string } `json:"keys"`
	}
	get("/openid/v1/jwks", &set)
	if len(set.Keys) != 1 || set.Keys[0].Kty != "EC" || set.Keys[0].Crv != "P-256" || set.Keys[0].Kid == "" {
		t.Fatalf("key set %+v", set)
	}
	coord := func(s string) *big.Int {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return new(big.Int).SetBytes(b)
	}
	pub := &ecdsa.PublicKey{Curve: elliptic.P256(), X: coord(set.Keys[0].X), Y: coord(set.Keys[0].Y)}

	ns := env.namespace(t)
	if _, err := env.client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "oidc"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := env.client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "oidc", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"oidc-discovery-test"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token, err := jwt.Parse(tr.Status.Token, func(tok *jwt.Token) (any, error) {
		if tok.Header["kid"] != set.Keys[0].Kid {
			t.Errorf("token kid %v, key set kid %s", tok.Header["kid"], set.Keys[0].Kid)
		}
		return pub, nil
	}, jwt.WithValidMethods([]string{"ES256"}), jwt.WithIssuer(conf.Issuer), jwt.WithAudience("oidc-discovery-test"))
	if err != nil || !token.Valid {
		t.Errorf("the token does not verify with the published key: %v", err)
	}
}
