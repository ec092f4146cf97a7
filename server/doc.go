// Package server holds Glassplane's two Echo applications and their
// listeners: the Kubernetes API over TLS (client certificates verified
// against the cluster CA) and the dashboard over HTTP. It owns transport
// concerns only (TLS, recovery, compression, security headers, graceful
// shutdown); the API routes come from controlplane/apiserver and the
// dashboard's from web, each mounted with its Register method. The API also
// listens in process (DialAPI, pipe.go): the components of `glassplane up`
// connect through Unix socket pairs, with the same TLS and client
// certificates, rather than TCP over loopback. Its dashboard calls the
// API's handler directly (InProcessTransport, inprocess.go): an
// http.RoundTripper that runs the handler chain on its requests, each
// carrying its client certificate, verified against the client CAs, as its
// TLS peer certificate, with responses streaming as the handler flushes
// them (watches). Without an API address it serves the dashboard alone
// (`glassplane dashboard`, against any cluster).
package server
