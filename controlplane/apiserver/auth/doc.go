// Package auth authenticates API requests and decides whether they may
// proceed. Authentication reads the verified x509 client certificate of the
// TLS connection (user = CN, groups = O, plus system:authenticated);
// authorization is the Authorizer interface with its Attributes and
// Decisions, and an AlwaysAllow implementation for authenticated users that
// the API server uses when RBAC is off. Kubernetes' authorizers live below
// it: auth/rbac (the RBAC authorizer, escalation check and bootstrap policy)
// and auth/node (the Node authorizer and NodeRestriction). The authenticated
// user travels in the request context. This package touches no storage.
package auth
