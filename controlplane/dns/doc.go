// Package dns is the cluster's DNS add-on: CoreDNS embedded as a library
// (its kubernetes, forward, cache and errors plugins, started from a
// Corefile through caddy), answering the Kubernetes DNS specification for
// the cluster domain (Services, headless Services' endpoints and their
// <hostname>.<subdomain> names, SRV records of named ports, pod A records
// as 1-2-3-4.<ns>.pod.<domain>, in-addr.arpa PTRs) and forwarding every
// other name to the host's resolvers, failing fast with SERVFAIL when they
// do not answer.
//
// It is an API client only: CoreDNS's kubernetes plugin reads Services,
// EndpointSlices, Pods and Namespaces through a kubeconfig of its own
// identity (UserDNS, bound to upstream's ClusterRole system:coredns), and
// Run applies the add-on's kube-system/kube-dns Service (the 10th address
// of the service range, without selector) and its EndpointSlice pointing at
// the address and port the server actually listens on, on every start, as
// kubeadm applies CoreDNS's manifests. It touches nothing else.
package dns
