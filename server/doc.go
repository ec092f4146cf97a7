// Package server holds Glassplane's two Echo applications and their
// listeners: the Kubernetes API over TLS (client certificates verified
// against the cluster CA) and the dashboard over HTTP. It owns transport
// concerns only (TLS, recovery, compression, security headers, graceful
// shutdown); the API routes come from controlplane/apiserver and the
// dashboard's from web, each mounted with its Register method. The API also
// listens in process (DialAPI, pipe.go): the components of `glassplane up`
// connect through Unix socket pairs, with the same TLS and client
// certificates, rather than TCP over loopback. Without an API address it
// serves the dashboard alone (`glassplane dashboard`, against any cluster).
package server
