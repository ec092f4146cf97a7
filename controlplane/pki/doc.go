// Package pki is the cluster's certificate authority: it creates the CA in
// the data directory on first start (keys 0600, reused on restart, as k3s
// does), issues the API server's serving certificate and client certificates
// (CN = user, O = groups, as Kubernetes reads them), and writes kubeconfigs
// and client-go REST configs for those identities. It touches only files
// under <data-dir>/pki.
package pki
