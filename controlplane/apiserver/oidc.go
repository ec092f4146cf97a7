package apiserver

import (
	"net/http"
	"strings"
)

// Service account issuer discovery, as kube-apiserver serves it
// (ServiceAccountIssuerDiscovery): an OpenID Provider configuration naming
// the tokens' issuer and where their keys are, and the keys as a JSON Web
// Key Set, so that something outside the cluster (or a pod) can verify a
// service account token without asking the API. RBAC decides who may read
// them (the system:service-account-issuer-discovery role).
const (
	oidcConfigPath = "/.well-known/openid-configuration"
	oidcJWKSPath   = "/openid/v1/jwks"
)

// oidcConfiguration is the OpenID Provider configuration kube-apiserver
// serves.
type oidcConfiguration struct {
	Issuer        string   `json:"issuer"`
	JWKSURI       string   `json:"jwks_uri"`
	ResponseTypes []string `json:"response_types_supported"`
	SubjectTypes  []string `json:"subject_types_supported"`
	SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
}

// serveOIDC answers the discovery document or the key set; 404 without
// service account tokens or for an issuer that is not an https URL (as
// kube-apiserver serves discovery only then).
func (q *request) serveOIDC(path string) {
	t := q.s.saTokens
	if t == nil || !strings.HasPrefix(t.Issuer(), "https://") {
		q.fail("", errNoRoute())
		return
	}
	if path == oidcConfigPath {
		// The keys are under the issuer's URL: the kubernetes Service's
		// name for the default issuer, which pods reach.
		q.writeJSON(http.StatusOK, &oidcConfiguration{
			Issuer: t.Issuer(), JWKSURI: strings.TrimSuffix(t.Issuer(), "/") + oidcJWKSPath,
			ResponseTypes: []string{"id_token"}, SubjectTypes: []string{"public"}, SigningAlgs: []string{"ES256"},
		})
		return
	}
	jwks, err := t.JWKS()
	if err != nil {
		q.fail("", err)
		return
	}
	q.w.Header().Set("Content-Type", "application/jwk-set+json")
	q.w.WriteHeader(http.StatusOK)
	q.w.Write(jwks)
}
