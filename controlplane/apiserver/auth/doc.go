// Package auth authenticates API requests and decides whether they may
// proceed. Authentication reads the verified x509 client certificate of the
// TLS connection (user = CN, groups = O, plus system:authenticated);
// authorization is an Authorizer interface with an AlwaysAllow implementation
// for authenticated users until RBAC plugs in. The authenticated user travels
// in the request context. This package touches no storage.
package auth
