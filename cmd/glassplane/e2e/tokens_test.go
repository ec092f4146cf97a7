package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/apiserver/auth"
	"github.com/glassplane/glassplane/controlplane/pki"
)

// kubectlWithToken runs kubectl against c with only a bearer token (no
// client certificate).
func kubectlWithToken(t *testing.T, c *Cluster, token string, args ...string) (string, error) {
	t.Helper()
	empty := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	full := append([]string{"--server", c.APIURL, "--certificate-authority", filepath.Join(c.DataDir, "pki", "ca.crt"), "--token", token}, args...)
	cmd := exec.CommandContext(ctx, kubectlPath(t), full...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+empty)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// apiGet sends GET path to c's API with the cluster CA trusted, an optional
// bearer token and optional client certificate.
func apiGet(t *testing.T, c *Cluster, path, token string, cert *tls.Certificate) (int, string, error) {
	t.Helper()
	caPEM, err := os.ReadFile(filepath.Join(c.DataDir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	tlsCfg := &tls.Config{RootCAs: pool}
	if cert != nil {
		tlsCfg.Certificates = []tls.Certificate{*cert}
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	req, err := http.NewRequest("GET", c.APIURL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// jwtClaims decodes a token's payload without verifying it.
func jwtClaims(t *testing.T, token string) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", token)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(b, &claims); err != nil {
		t.Fatal(err)
	}
	return claims
}

const unauthorized = "You must be logged in to the server (Unauthorized)"

func TestServiceAccountTokens(t *testing.T) {
	c := SharedCluster(t)
	const ns = "tokens-e2e"
	user := "system:serviceaccount:" + ns + ":robot"
	c.MustKubectl(t, "", "create", "namespace", ns)
	c.MustKubectl(t, "", "-n", ns, "create", "serviceaccount", "robot")
	c.MustKubectl(t, "", "-n", ns, "create", "configmap", "settings", "--from-literal=a=b")

	token := strings.TrimSpace(c.MustKubectl(t, "", "-n", ns, "create", "token", "robot", "--duration=10m"))
	claims := jwtClaims(t, token)
	k8s, _ := claims["kubernetes.io"].(map[string]any)
	sa, _ := k8s["serviceaccount"].(map[string]any)
	if claims["sub"] != user || claims["iss"] != auth.DefaultServiceAccountIssuer || k8s["namespace"] != ns || sa["name"] != "robot" || sa["uid"] == "" {
		t.Fatalf("claims %v", claims)
	}
	if exp, iat := claims["exp"].(float64), claims["iat"].(float64); exp-iat != 600 {
		t.Errorf("token lives %vs, want 600s", exp-iat)
	}

	// Authenticated, but RBAC grants a ServiceAccount nothing yet: 403, not 401.
	out, err := kubectlWithToken(t, c, token, "-n", ns, "get", "configmaps")
	rbacOn := err != nil
	if rbacOn {
		want := fmt.Sprintf(`configmaps is forbidden: User %q cannot list resource "configmaps" in API group "" in the namespace %q`, user, ns)
		if !strings.Contains(out, want) {
			t.Fatalf("before the binding: %v\n%s\nwant %q", err, out, want)
		}
	} else {
		t.Log("RBAC is off in this build: asserting authentication only")
	}

	c.MustKubectl(t, "", "-n", ns, "create", "role", "cm-reader", "--verb=get,list", "--resource=configmaps")
	c.MustKubectl(t, "", "-n", ns, "create", "rolebinding", "robot-reads", "--role=cm-reader", "--serviceaccount="+ns+":robot")
	Eventually(t, 30*time.Second, "the token lists configmaps", func() error {
		out, err := kubectlWithToken(t, c, token, "-n", ns, "get", "configmaps", "-o", "name")
		if err != nil || !strings.Contains(out, "configmap/settings") {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	if rbacOn {
		out, err := kubectlWithToken(t, c, token, "-n", ns, "delete", "configmap", "settings")
		want := fmt.Sprintf(`configmaps "settings" is forbidden: User %q cannot delete resource "configmaps" in API group "" in the namespace %q`, user, ns)
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("delete with a read-only role: %v\n%s\nwant %q", err, out, want)
		}
		out, err = kubectlWithToken(t, c, token, "-n", "default", "get", "configmaps")
		if err == nil || !strings.Contains(out, "forbidden") {
			t.Errorf("read in another namespace: %v\n%s", err, out)
		}
	}

	t.Run("forged signature", func(t *testing.T) {
		parts := strings.Split(token, ".")
		sig := []byte(parts[2])
		sig[len(sig)/2] ^= 0x01
		if sig[len(sig)/2] == '-' || sig[len(sig)/2] == '_' {
			sig[len(sig)/2] = 'A'
		}
		forged := parts[0] + "." + parts[1] + "." + string(sig)
		out, err := kubectlWithToken(t, c, forged, "-n", ns, "get", "configmaps")
		if err == nil || !strings.Contains(out, unauthorized) {
			t.Errorf("forged token: %v\n%s", err, out)
		}
	})

	t.Run("signed directly: valid now, expired in the past", func(t *testing.T) {
		key, err := auth.LoadOrCreateServiceAccountKey(filepath.Join(c.DataDir, "pki", "sa.key"))
		if err != nil {
			t.Fatal(err)
		}
		sign := func(iat time.Time, life time.Duration) string {
			cl := auth.ServiceAccountClaims{
				RegisteredClaims: jwt.RegisteredClaims{
					Issuer: auth.DefaultServiceAccountIssuer, Subject: user, Audience: jwt.ClaimStrings{auth.DefaultServiceAccountIssuer},
					IssuedAt: jwt.NewNumericDate(iat), NotBefore: jwt.NewNumericDate(iat), ExpiresAt: jwt.NewNumericDate(iat.Add(life)),
				},
				Kubernetes: auth.KubernetesClaims{Namespace: ns, ServiceAccount: auth.ClaimsObject{Name: "robot", UID: sa["uid"].(string)}},
			}
			s, err := jwt.NewWithClaims(jwt.SigningMethodES256, cl).SignedString(key)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		if out, err := kubectlWithToken(t, c, sign(time.Now(), 10*time.Minute), "-n", ns, "get", "configmaps"); err != nil {
			t.Fatalf("a token signed now: %v\n%s", err, out)
		}
		out, err := kubectlWithToken(t, c, sign(time.Now().Add(-2*time.Hour), time.Hour), "-n", ns, "get", "configmaps")
		if err == nil || !strings.Contains(out, unauthorized) {
			t.Errorf("expired token: %v\n%s", err, out)
		}
	})

	t.Run("service account deleted, then recreated", func(t *testing.T) {
		c.MustKubectl(t, "", "-n", ns, "delete", "serviceaccount", "robot")
		out, err := kubectlWithToken(t, c, token, "-n", ns, "get", "configmaps")
		if err == nil || !strings.Contains(out, unauthorized) {
			t.Errorf("token of a deleted account: %v\n%s", err, out)
		}
		c.MustKubectl(t, "", "-n", ns, "create", "serviceaccount", "robot")
		out, err = kubectlWithToken(t, c, token, "-n", ns, "get", "configmaps")
		if err == nil || !strings.Contains(out, unauthorized) {
			t.Errorf("token of a recreated account (new uid): %v\n%s", err, out)
		}
	})

	t.Run("TokenReview", func(t *testing.T) {
		ctx := context.Background()
		reviews := c.Client.AuthenticationV1().TokenReviews()
		// The account was made again above: a token of the current one.
		token := strings.TrimSpace(c.MustKubectl(t, "", "-n", ns, "create", "token", "robot"))
		r, err := reviews.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !r.Status.Authenticated || r.Status.Error != "" || r.Status.User.Username != user || len(r.Status.Audiences) == 0 {
			t.Errorf("a valid token's review: %+v", r.Status)
		}
		r, err = reviews.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token + "x"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Authenticated || r.Status.Error == "" {
			t.Errorf("a forged token's review: %+v", r.Status)
		}
		r, err = reviews.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{"vault"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Authenticated || !strings.Contains(r.Status.Error, "is invalid for the target audiences") {
			t.Errorf("a review for another audience: %+v", r.Status)
		}
		if _, err := reviews.Create(ctx, &authenticationv1.TokenReview{}, metav1.CreateOptions{}); !apierrors.IsBadRequest(err) {
			t.Errorf("a review without a token: %v", err)
		}
	})

	t.Run("TokenRequest validation", func(t *testing.T) {
		out, err := c.Kubectl(t, "", "-n", ns, "create", "token", "robot", "--duration=5m")
		if err == nil || !strings.Contains(out, "may not specify a duration less than 10 minutes") {
			t.Errorf("5m token: %v\n%s", err, out)
		}
		out, err = c.Kubectl(t, "", "-n", ns, "create", "token", "nobody")
		if err == nil || !strings.Contains(out, `serviceaccounts "nobody" not found`) {
			t.Errorf("token for a missing account: %v\n%s", err, out)
		}
	})
}

func TestTransportAndCredentialFailures(t *testing.T) {
	c := SharedCluster(t)
	t.Run("plain HTTP", func(t *testing.T) {
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + strings.TrimPrefix(c.APIURL, "https://") + "/api/v1/namespaces")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(b), `"kind"`) {
				t.Errorf("plain HTTP answered %d: %s", resp.StatusCode, b)
			}
		}
	})
	t.Run("client certificate from another CA", func(t *testing.T) {
		other, err := pki.LoadOrCreateCA(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		certPEM, keyPEM, err := other.Client("mallory", "system:masters")
		if err != nil {
			t.Fatal(err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		code, body, err := apiGet(t, c, "/api/v1/namespaces", "", &cert)
		if err == nil && code != http.StatusUnauthorized {
			t.Errorf("foreign certificate answered %d: %.200s", code, body)
		}
	})
	t.Run("no credentials", func(t *testing.T) {
		code, body, err := apiGet(t, c, "/api/v1/namespaces", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		var st metav1.Status
		if code != http.StatusUnauthorized || json.Unmarshal([]byte(body), &st) != nil || st.Message != "Unauthorized" || st.Reason != metav1.StatusReasonUnauthorized {
			t.Errorf("anonymous request answered %d: %s", code, body)
		}
	})
	t.Run("garbage bearer token", func(t *testing.T) {
		code, body, err := apiGet(t, c, "/api/v1/namespaces", "not.a.token", nil)
		if err != nil {
			t.Fatal(err)
		}
		if code != http.StatusUnauthorized || strings.Contains(body, "signature") || strings.Contains(body, "token") {
			t.Errorf("garbage token answered %d: %s", code, body)
		}
	})
	// The health checks answer anyone without credentials, as
	// kube-apiserver's do, and refuse credentials that fail, as there.
	t.Run("health checks", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/livez", "/readyz"} {
			if code, body, err := apiGet(t, c, path, "", nil); err != nil || code != http.StatusOK || body != "ok" {
				t.Errorf("%s without credentials: %d %v %q", path, code, err, body)
			}
			code, body, err := apiGet(t, c, path, "not.a.token", nil)
			if err != nil {
				t.Fatal(err)
			}
			var st metav1.Status
			if code != http.StatusUnauthorized || json.Unmarshal([]byte(body), &st) != nil || st.Reason != metav1.StatusReasonUnauthorized {
				t.Errorf("%s with a garbage token answered %d: %s", path, code, body)
			}
		}
	})
}

func TestStaticTokenFileAndAnonymous(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte("s3cr3t-admin,alice,1001,\"system:masters,ops\"\ns3cr3t-dev,dave,1002\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := NewCluster(t, "--node-runtime", "none", "--token-auth-file", tokens, "--anonymous-auth")
	if out, err := kubectlWithToken(t, c, "s3cr3t-admin", "get", "namespaces", "kube-system", "-o", "name"); err != nil || !strings.Contains(out, "namespace/kube-system") {
		t.Errorf("static token in system:masters: %v\n%s", err, out)
	}
	if out, err := kubectlWithToken(t, c, "wrong", "get", "namespaces"); err == nil || !strings.Contains(out, unauthorized) {
		t.Errorf("unknown static token with anonymous auth on: %v\n%s", err, out)
	}
	code, body, err := apiGet(t, c, "/api/v1/namespaces", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if code == http.StatusUnauthorized {
		t.Errorf("anonymous request refused with --anonymous-auth: %s", body)
	}
	if code == http.StatusForbidden && !strings.Contains(body, `User \"system:anonymous\" cannot list resource \"namespaces\"`) {
		t.Errorf("anonymous denial: %s", body)
	}
	if code, body, err := apiGet(t, c, "/version", "", nil); err != nil || code != http.StatusOK {
		t.Errorf("anonymous /version: %d %v %s", code, err, body)
	}
}
