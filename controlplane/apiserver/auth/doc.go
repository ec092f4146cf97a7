// Package auth authenticates API requests and decides whether they may
// proceed. Authentication is a Union of authenticators, as kube-apiserver's:
// the verified x509 client certificate of the TLS connection (user = CN,
// groups = O, plus system:authenticated), then the bearer token of the
// Authorization header, checked against the static token file
// (--token-auth-file, Kubernetes' CSV) and as a ServiceAccount JWT (ES256,
// Kubernetes' claims, valid until it expires and while its ServiceAccount
// exists with the same UID); WithAnonymous turns requests without any
// credentials into system:anonymous. Invalid credentials are an error whose
// detail is logged at debug and never sent to the client;
// authorization is the Authorizer interface with its Attributes and
// Decisions, and an AlwaysAllow implementation for authenticated users that
// the API server uses when RBAC is off. Kubernetes' authorizers live below
// it: auth/rbac (the RBAC authorizer, escalation check and bootstrap policy)
// and auth/node (the Node authorizer and NodeRestriction). The authenticated
// user travels in the request context. This package touches no storage.
package auth
