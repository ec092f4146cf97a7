package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// ServiceAccount token defaults, as kube-apiserver's.
const (
	// DefaultServiceAccountIssuer is the iss claim of the tokens and the
	// audience they are valid for unless a TokenRequest names others.
	DefaultServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"
	// ServiceAccountUsernamePrefix starts every ServiceAccount's user name.
	ServiceAccountUsernamePrefix = "system:serviceaccount:"
	// GroupServiceAccounts holds every ServiceAccount;
	// GroupServiceAccounts + ":" + namespace those of one namespace.
	GroupServiceAccounts = "system:serviceaccounts"
)

// ServiceAccountUsername returns "system:serviceaccount:<namespace>:<name>".
func ServiceAccountUsername(namespace, name string) string {
	return ServiceAccountUsernamePrefix + namespace + ":" + name
}

// LoadOrCreateServiceAccountKey reads the ECDSA P-256 key that signs
// ServiceAccount tokens from path (PEM, "EC PRIVATE KEY"), creating it with
// mode 0600 when absent.
func LoadOrCreateServiceAccountKey(path string) (*ecdsa.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		block, _ := pem.Decode(b)
		if block == nil {
			return nil, fmt.Errorf("failed to parse %q: no PEM block", path)
		}
		key, err := x509.ParseECPrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("failed to parse %q: %w", path, err)
		}
		return key, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("failed to read %q: %w", path, err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("failed to generate the service account key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("failed to encode the service account key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("failed to create %q: %w", filepath.Dir(path), err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return nil, fmt.Errorf("failed to write %q: %w", path, err)
	}
	return key, nil
}

// ServiceAccountGetter reads a ServiceAccount from storage; found is false
// when it does not exist. GetBoundObject reads the UID of the Pod, Secret
// (namespaced) or Node (namespace "") a token is bound to.
type ServiceAccountGetter interface {
	GetServiceAccount(ctx context.Context, namespace, name string) (sa *corev1.ServiceAccount, found bool, err error)
	GetBoundObject(ctx context.Context, kind, namespace, name string) (uid string, found bool, err error)
}

// The user's extra keys a ServiceAccount token adds, as kube-apiserver's
// (k8s.io/apiserver/pkg/authentication/serviceaccount).
const (
	ExtraCredentialID = "authentication.kubernetes.io/credential-id"
	ExtraPodName      = "authentication.kubernetes.io/pod-name"
	ExtraPodUID       = "authentication.kubernetes.io/pod-uid"
	ExtraNodeName     = "authentication.kubernetes.io/node-name"
	ExtraNodeUID      = "authentication.kubernetes.io/node-uid"
)

// ServiceAccountClaims are the claims of a ServiceAccount token, shaped as
// Kubernetes' (pkg/serviceaccount/claims.go).
type ServiceAccountClaims struct {
	jwt.RegisteredClaims
	Kubernetes KubernetesClaims `json:"kubernetes.io"`
}

// KubernetesClaims is the private "kubernetes.io" claim.
type KubernetesClaims struct {
	Namespace      string       `json:"namespace,omitempty"`
	ServiceAccount ClaimsObject `json:"serviceaccount"`
	BoundObjects
}

// BoundObjects are the objects a token is bound to (valid only while they
// exist with these UIDs): a Pod (with, for information, the Node it runs
// on), a Secret or a Node.
type BoundObjects struct {
	Pod    *ClaimsObject `json:"pod,omitempty"`
	Secret *ClaimsObject `json:"secret,omitempty"`
	Node   *ClaimsObject `json:"node,omitempty"`
}

// ClaimsObject names an object bound into a token.
type ClaimsObject struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// ServiceAccountTokens issues and authenticates ServiceAccount JWTs (ES256).
// A token is valid until it expires and only while its ServiceAccount
// exists with the UID it was issued for.
type ServiceAccountTokens struct {
	key       *ecdsa.PrivateKey
	keyID     string
	issuer    string
	audiences []string
	accounts  ServiceAccountGetter
	// now is the clock; tests replace it.
	now func() time.Time
}

// NewServiceAccountTokens signs with key as issuer; tokens are accepted
// when their audience names one of audiences (default: the issuer).
func NewServiceAccountTokens(key *ecdsa.PrivateKey, issuer string, audiences []string, accounts ServiceAccountGetter) (*ServiceAccountTokens, error) {
	if issuer == "" {
		issuer = DefaultServiceAccountIssuer
	}
	if len(audiences) == 0 {
		audiences = []string{issuer}
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("failed to encode the service account public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return &ServiceAccountTokens{
		key: key, keyID: base64.RawURLEncoding.EncodeToString(sum[:]), issuer: issuer,
		audiences: audiences, accounts: accounts, now: time.Now,
	}, nil
}

// Audiences returns the audiences tokens are issued for by default.
func (t *ServiceAccountTokens) Audiences() []string { return slices.Clone(t.audiences) }

// Issue signs a token for sa, valid for audiences (default: the API's own)
// from now for expiration, and while the bound objects exist.
func (t *ServiceAccountTokens) Issue(sa *corev1.ServiceAccount, audiences []string, expiration time.Duration, bound BoundObjects) (string, time.Time, error) {
	if len(audiences) == 0 {
		audiences = t.audiences
	}
	now := t.now().Truncate(time.Second)
	exp := now.Add(expiration)
	claims := ServiceAccountClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    t.issuer,
			Subject:   ServiceAccountUsername(sa.Namespace, sa.Name),
			Audience:  jwt.ClaimStrings(audiences),
			ExpiresAt: jwt.NewNumericDate(exp),
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ID:        string(uuid.NewUUID()),
		},
		Kubernetes: KubernetesClaims{
			Namespace:      sa.Namespace,
			ServiceAccount: ClaimsObject{Name: sa.Name, UID: string(sa.UID)},
			BoundObjects:   bound,
		},
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
	tok.Header["kid"] = t.keyID
	signed, err := tok.SignedString(t.key)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("failed to sign a token for service account %q: %w", sa.Namespace+"/"+sa.Name, err)
	}
	return signed, exp, nil
}

// AuthenticateToken implements TokenAuthenticator. A token that is not a JWT
// of this issuer is ErrNoIdentity; one that is but fails verification (bad
// signature, expired, wrong audience, deleted or recreated ServiceAccount)
// is an error.
func (t *ServiceAccountTokens) AuthenticateToken(ctx context.Context, token string) (*User, error) {
	if strings.Count(token, ".") != 2 {
		return nil, ErrNoIdentity
	}
	var unverified ServiceAccountClaims
	if _, _, err := jwt.NewParser().ParseUnverified(token, &unverified); err != nil || unverified.Issuer != t.issuer {
		return nil, ErrNoIdentity
	}
	var claims ServiceAccountClaims
	parser := jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodES256.Alg()}),
		jwt.WithIssuer(t.issuer),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithTimeFunc(t.now),
	)
	if _, err := parser.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return &t.key.PublicKey, nil }); err != nil {
		return nil, fmt.Errorf("failed to verify service account token: %w", err)
	}
	if !slices.ContainsFunc(claims.Audience, func(a string) bool { return slices.Contains(t.audiences, a) }) {
		return nil, errors.New("token audiences do not match the API's audiences")
	}
	k := claims.Kubernetes
	if k.Namespace == "" || k.ServiceAccount.Name == "" || k.ServiceAccount.UID == "" {
		return nil, errors.New("token lacks the kubernetes.io namespace and service account claims")
	}
	if claims.Subject != ServiceAccountUsername(k.Namespace, k.ServiceAccount.Name) {
		return nil, errors.New("token subject does not match its service account claim")
	}
	sa, found, err := t.accounts.GetServiceAccount(ctx, k.Namespace, k.ServiceAccount.Name)
	if err != nil {
		return nil, fmt.Errorf("failed to get service account %q: %w", k.Namespace+"/"+k.ServiceAccount.Name, err)
	}
	if !found || sa.DeletionTimestamp != nil {
		return nil, fmt.Errorf("service account %s/%s has been deleted", k.Namespace, k.ServiceAccount.Name)
	}
	if string(sa.UID) != k.ServiceAccount.UID {
		return nil, fmt.Errorf("service account UID (%s) does not match claim (%s)", sa.UID, k.ServiceAccount.UID)
	}
	if err := t.checkBound(ctx, k); err != nil {
		return nil, err
	}
	u := &User{
		Name:          claims.Subject,
		UID:           string(sa.UID),
		Groups:        []string{GroupServiceAccounts, GroupServiceAccounts + ":" + k.Namespace, GroupAuthenticated},
		Authenticator: "serviceaccount-token",
		Extra:         map[string][]string{},
	}
	if claims.ID != "" {
		u.Extra[ExtraCredentialID] = []string{"JTI=" + claims.ID}
	}
	if p := k.Pod; p != nil && p.Name != "" && p.UID != "" {
		u.Extra[ExtraPodName], u.Extra[ExtraPodUID] = []string{p.Name}, []string{p.UID}
	}
	if n := k.Node; n != nil && n.Name != "" {
		u.Extra[ExtraNodeName] = []string{n.Name}
		if n.UID != "" {
			u.Extra[ExtraNodeUID] = []string{n.UID}
		}
	}
	if len(u.Extra) == 0 {
		u.Extra = nil
	}
	return u, nil
}

// checkBound refuses a token whose bound Pod or Secret (or Node, when the
// token is bound to the node itself) is gone or was made again, with
// kube-apiserver's words. A pod being deleted keeps its token through its
// graceful termination. The Node of a pod's token is information only.
func (t *ServiceAccountTokens) checkBound(ctx context.Context, k KubernetesClaims) error {
	check := []struct {
		kind, namespace string
		ref             *ClaimsObject
	}{{"Pod", k.Namespace, k.Pod}, {"Secret", k.Namespace, k.Secret}}
	if k.Pod == nil && k.Secret == nil {
		check = append(check, struct {
			kind, namespace string
			ref             *ClaimsObject
		}{"Node", "", k.Node})
	}
	for _, c := range check {
		if c.ref == nil {
			continue
		}
		what := strings.ToLower(c.kind)
		name := c.ref.Name
		if c.namespace != "" {
			name = c.namespace + "/" + name
		}
		uid, found, err := t.accounts.GetBoundObject(ctx, c.kind, c.namespace, c.ref.Name)
		switch {
		case err != nil:
			return fmt.Errorf("failed to get %s %q: %w", what, name, err)
		case !found:
			return errors.New("service account token has been invalidated")
		case uid != c.ref.UID:
			return fmt.Errorf("%s UID (%s) does not match claim (%s)", what, uid, c.ref.UID)
		}
	}
	return nil
}

// Issuer is the iss claim of the tokens.
func (t *ServiceAccountTokens) Issuer() string { return t.issuer }

// JWKS is the tokens' verification key as a JSON Web Key Set, as
// kube-apiserver serves it at /openid/v1/jwks: the P-256 public key with
// its kid, for ES256 signatures.
func (t *ServiceAccountTokens) JWKS() ([]byte, error) {
	pub := t.key.PublicKey
	ecdh, err := pub.ECDH()
	if err != nil {
		return nil, fmt.Errorf("failed to encode the service account public key: %w", err)
	}
	// The uncompressed point: 0x04, X, Y (32 bytes each on P-256).
	raw := ecdh.Bytes()
	if len(raw) != 65 || raw[0] != 4 {
		return nil, fmt.Errorf("the service account public key is not an uncompressed P-256 point")
	}
	type jwk struct {
		Use string `json:"use"`
		Kty string `json:"kty"`
		Kid string `json:"kid"`
		Crv string `json:"crv"`
		Alg string `json:"alg"`
		X   string `json:"x"`
		Y   string `json:"y"`
	}
	return json.Marshal(struct {
		Keys []jwk `json:"keys"`
	}{Keys: []jwk{{
		Use: "sig", Kty: "EC", Kid: t.keyID, Crv: "P-256", Alg: "ES256",
		X: base64.RawURLEncoding.EncodeToString(raw[1:33]), Y: base64.RawURLEncoding.EncodeToString(raw[33:]),
	}}})
}
