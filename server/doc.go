// Package server holds Glassplane's two Echo applications and their
// listeners: the Kubernetes API over TLS (client certificates verified
// against the cluster CA) and the dashboard over HTTP. It owns transport
// concerns only (TLS, recovery, compression, security headers, graceful
// shutdown); the API routes come from controlplane/apiserver and the
// dashboard's from web, each mounted with its Register method. The
// components of `glassplane up` call the API in process
// (InProcessTransport, inprocess.go): an http.RoundTripper that runs the
// API's handler chain on their requests, each carrying its client
// certificate, verified against the client CAs, as its TLS peer
// certificate; responses stream as the handler flushes them (watches).
// Without an API address it serves the dashboard alone (`glassplane
// dashboard`, against any cluster).
package server
