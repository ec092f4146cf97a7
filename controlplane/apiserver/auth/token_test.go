package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestParseTokenFile(t *testing.T) {
	tests := []struct {
		name       string
		csv        string
		token      string
		wantUser   string
		wantUID    string
		wantGroups []string
		wantErr    bool
	}{
		{"user with groups", "abc,alice,1001,\"dev,ops\"\n", "abc", "alice", "1001", []string{"dev", "ops"}, false},
		{"user without groups", "abc,alice,1001\n", "abc", "alice", "1001", nil, false},
		{"later record wins", "abc,alice,1\nabc,bob,2\n", "abc", "bob", "2", nil, false},
		{"empty token skipped", ",alice,1\nxyz,bob,2\n", "xyz", "bob", "2", nil, false},
		{"too few columns", "abc,alice\n", "", "", "", nil, true},
		{"empty user", "abc,,1\n", "", "", "", nil, true},
		{"bad quoting", "abc,\"alice,1\n", "", "", "", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tf, err := ParseTokenFile(strings.NewReader(tc.csv))
			if tc.wantErr {
				if err == nil {
					t.Fatal("parsed a bad token file")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			u, err := tf.AuthenticateToken(context.Background(), tc.token)
			if err != nil {
				t.Fatal(err)
			}
			if u.Name != tc.wantUser || u.UID != tc.wantUID || !slices.Equal(u.Groups, tc.wantGroups) || u.Authenticator != "token-file" {
				t.Errorf("user %+v", u)
			}
			if _, err := tf.AuthenticateToken(context.Background(), "unknown"); !errors.Is(err, ErrNoIdentity) {
				t.Errorf("unknown token: %v, want ErrNoIdentity", err)
			}
		})
	}
}

// fakeAccounts serves ServiceAccounts from a map keyed by namespace/name,
// and the objects tokens are bound to under kind:namespace/name (an entry
// whose UID is the object's).
type fakeAccounts map[string]*corev1.ServiceAccount

func (f fakeAccounts) GetServiceAccount(_ context.Context, namespace, name string) (*corev1.ServiceAccount, bool, error) {
	sa, ok := f[namespace+"/"+name]
	return sa, ok, nil
}

func (f fakeAccounts) GetBoundObject(_ context.Context, kind, namespace, name string) (string, bool, error) {
	o, ok := f[kind+":"+namespace+"/"+name]
	if !ok {
		return "", false, nil
	}
	return string(o.UID), true, nil
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func TestServiceAccountTokens(t *testing.T) {
	robot := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "robot", UID: types.UID("uid-1")}}
	accounts := fakeAccounts{"ns1/robot": robot}
	key := newKey(t)
	tokens, err := NewServiceAccountTokens(key, "", nil, accounts)
	if err != nil {
		t.Fatal(err)
	}
	otherKey, err := NewServiceAccountTokens(newKey(t), "", nil, accounts)
	if err != nil {
		t.Fatal(err)
	}
	otherIssuer, err := NewServiceAccountTokens(key, "https://elsewhere", nil, accounts)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(t *testing.T, ts *ServiceAccountTokens, sa *corev1.ServiceAccount, aud []string, d time.Duration) string {
		t.Helper()
		tok, _, err := ts.Issue(sa, aud, d, BoundObjects{})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	valid := issue(t, tokens, robot, nil, time.Hour)
	past := *tokens
	past.now = func() time.Time { return time.Now().Add(-2 * time.Hour) }
	expired := issue(t, &past, robot, nil, time.Hour)
	recreated := robot.DeepCopy()
	recreated.UID = "uid-2"

	tests := []struct {
		name     string
		token    string
		accounts fakeAccounts
		// wantErr: "" success, "none" ErrNoIdentity, else an error that is not ErrNoIdentity.
		wantErr string
	}{
		{"valid", valid, accounts, ""},
		{"not a JWT", "abcdef", accounts, "none"},
		{"another issuer", issue(t, otherIssuer, robot, nil, time.Hour), accounts, "none"},
		{"signed with another key", issue(t, otherKey, robot, nil, time.Hour), accounts, "invalid"},
		{"signature changed", valid[:len(valid)-4] + "AAAA", accounts, "invalid"},
		{"expired", expired, accounts, "invalid"},
		{"wrong audience", issue(t, tokens, robot, []string{"vault"}, time.Hour), accounts, "invalid"},
		{"account deleted", valid, fakeAccounts{}, "invalid"},
		{"account recreated", valid, fakeAccounts{"ns1/robot": recreated}, "invalid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := *tokens
			ts.accounts = tc.accounts
			u, err := ts.AuthenticateToken(context.Background(), tc.token)
			switch tc.wantErr {
			case "":
				if err != nil {
					t.Fatal(err)
				}
				want := []string{GroupServiceAccounts, "system:serviceaccounts:ns1", GroupAuthenticated}
				if u.Name != "system:serviceaccount:ns1:robot" || u.UID != "uid-1" || !slices.Equal(u.Groups, want) {
					t.Errorf("user %+v", u)
				}
			case "none":
				if !errors.Is(err, ErrNoIdentity) {
					t.Errorf("err = %v, want ErrNoIdentity", err)
				}
			default:
				if err == nil || errors.Is(err, ErrNoIdentity) {
					t.Errorf("err = %v, want a verification error", err)
				}
			}
		})
	}
}

func TestServiceAccountTokenClaims(t *testing.T) {
	robot := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "robot", UID: "uid-1"}}
	tokens, err := NewServiceAccountTokens(newKey(t), "", nil, fakeAccounts{})
	if err != nil {
		t.Fatal(err)
	}
	tok, exp, err := tokens.Issue(robot, []string{"a", "b"}, 10*time.Minute, BoundObjects{})
	if err != nil {
		t.Fatal(err)
	}
	var claims ServiceAccountClaims
	parsed, _, err := jwt.NewParser().ParseUnverified(tok, &claims)
	if err != nil {
		t.Fatal(err)
	}
	if parsed.Header["alg"] != "ES256" || parsed.Header["kid"] == "" {
		t.Errorf("header %v", parsed.Header)
	}
	if claims.Issuer != DefaultServiceAccountIssuer || claims.Subject != "system:serviceaccount:ns1:robot" ||
		!slices.Equal([]string(claims.Audience), []string{"a", "b"}) || claims.ID == "" {
		t.Errorf("registered claims %+v", claims.RegisteredClaims)
	}
	if claims.ExpiresAt == nil || !claims.ExpiresAt.Time.Equal(exp) || claims.IssuedAt == nil || claims.NotBefore == nil ||
		claims.ExpiresAt.Sub(claims.IssuedAt.Time) != 10*time.Minute {
		t.Errorf("times exp=%v iat=%v nbf=%v", claims.ExpiresAt, claims.IssuedAt, claims.NotBefore)
	}
	if claims.Kubernetes != (KubernetesClaims{Namespace: "ns1", ServiceAccount: ClaimsObject{Name: "robot", UID: "uid-1"}}) {
		t.Errorf("kubernetes.io claims %+v", claims.Kubernetes)
	}
}

func TestLoadOrCreateServiceAccountKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pki", "sa.key")
	first, err := LoadOrCreateServiceAccountKey(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	second, err := LoadOrCreateServiceAccountKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Equal(second) {
		t.Error("the key was not reused")
	}
	if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateServiceAccountKey(path); err == nil {
		t.Error("loaded a garbage key")
	}
}

func TestBearerTokenAndAnonymous(t *testing.T) {
	tf, err := ParseTokenFile(strings.NewReader("secret,alice,1,dev\n"))
	if err != nil {
		t.Fatal(err)
	}
	bearer := &BearerToken{Tokens: []TokenAuthenticator{tf}}
	tests := []struct {
		name      string
		header    string
		anonymous bool
		wantUser  string
		wantErr   string
	}{
		{"valid token", "Bearer secret", false, "alice", ""},
		{"lower-case scheme", "bearer secret", false, "alice", ""},
		{"unknown token", "Bearer nope", false, "", "invalid"},
		{"unknown token with anonymous", "Bearer nope", true, "", "invalid"},
		{"no header", "", false, "", "none"},
		{"no header with anonymous", "", true, UserAnonymous, ""},
		{"basic auth", "Basic YWxpY2U6cHc=", false, "", "none"},
		{"empty bearer", "Bearer ", false, "", "none"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a Authenticator = Union{&X509{}, bearer}
			if tc.anonymous {
				a = WithAnonymous(a)
			}
			r := httptest.NewRequest("GET", "/api", nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			u, err := a.Authenticate(r)
			switch tc.wantErr {
			case "":
				if err != nil {
					t.Fatal(err)
				}
				if u.Name != tc.wantUser {
					t.Errorf("user %+v", u)
				}
				wantGroup := GroupAuthenticated
				if tc.wantUser == UserAnonymous {
					wantGroup = GroupUnauthenticated
				}
				if !slices.Contains(u.Groups, wantGroup) {
					t.Errorf("groups %v lack %s", u.Groups, wantGroup)
				}
			case "none":
				if !errors.Is(err, ErrNoIdentity) {
					t.Errorf("err = %v, want ErrNoIdentity", err)
				}
			default:
				if err == nil || errors.Is(err, ErrNoIdentity) {
					t.Errorf("err = %v, want an invalid token error", err)
				}
			}
		})
	}
}

// TestBoundServiceAccountTokens: a token bound to a pod carries the pod and
// its node, authenticates with kube-apiserver's extra keys (credential-id
// from the jti, pod and node names and UIDs), and stops authenticating
// when the pod is deleted or made again; a token bound to a node only
// needs the node.
func TestBoundServiceAccountTokens(t *testing.T) {
	ctx := context.Background()
	robot := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "robot", UID: "uid-sa"}}
	obj := func(uid types.UID) *corev1.ServiceAccount {
		return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{UID: uid}}
	}
	accounts := fakeAccounts{"ns1/robot": robot, "Pod:ns1/web-0": obj("uid-pod"), "Node:/node-1": obj("uid-node")}
	tokens, err := NewServiceAccountTokens(newKey(t), "", nil, accounts)
	if err != nil {
		t.Fatal(err)
	}
	podTok, _, err := tokens.Issue(robot, nil, time.Hour, BoundObjects{Pod: &ClaimsObject{Name: "web-0", UID: "uid-pod"}, Node: &ClaimsObject{Name: "node-1", UID: "uid-node"}})
	if err != nil {
		t.Fatal(err)
	}
	u, err := tokens.AuthenticateToken(ctx, podTok)
	if err != nil {
		t.Fatal(err)
	}
	jti := u.Extra[ExtraCredentialID]
	if len(jti) != 1 || !strings.HasPrefix(jti[0], "JTI=") || len(jti[0]) <= len("JTI=") {
		t.Errorf("credential-id %v", jti)
	}
	for key, want := range map[string]string{ExtraPodName: "web-0", ExtraPodUID: "uid-pod", ExtraNodeName: "node-1", ExtraNodeUID: "uid-node"} {
		if got := u.Extra[key]; len(got) != 1 || got[0] != want {
			t.Errorf("extra %s = %v, want [%s]", key, got, want)
		}
	}
	// The node of a pod's token is information: the token outlives it.
	delete(accounts, "Node:/node-1")
	if _, err := tokens.AuthenticateToken(ctx, podTok); err != nil {
		t.Errorf("the pod's token failed without its node: %v", err)
	}
	accounts["Pod:ns1/web-0"] = obj("uid-pod-2")
	if _, err := tokens.AuthenticateToken(ctx, podTok); err == nil || err.Error() != "pod UID (uid-pod-2) does not match claim (uid-pod)" {
		t.Errorf("recreated pod: %v", err)
	}
	delete(accounts, "Pod:ns1/web-0")
	if _, err := tokens.AuthenticateToken(ctx, podTok); err == nil || err.Error() != "service account token has been invalidated" || errors.Is(err, ErrNoIdentity) {
		t.Errorf("deleted pod: %v", err)
	}

	nodeTok, _, err := tokens.Issue(robot, nil, time.Hour, BoundObjects{Node: &ClaimsObject{Name: "node-2", UID: "uid-node-2"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tokens.AuthenticateToken(ctx, nodeTok); err == nil {
		t.Error("a token bound to a node that does not exist authenticated")
	}
	accounts["Node:/node-2"] = obj("uid-node-2")
	u, err = tokens.AuthenticateToken(ctx, nodeTok)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := u.Extra[ExtraPodName]; ok || u.Extra[ExtraNodeName][0] != "node-2" {
		t.Errorf("node-bound extras %v", u.Extra)
	}
}
