// Package dns is the cluster's DNS add-on: CoreDNS embedded as a library
// (its bind, errors, kubernetes, forward and cache plugins, started from a
// Corefile through caddy), answering the Kubernetes DNS specification for
// the cluster domain (Services, headless Services' endpoints and their
// <hostname>.<subdomain> names, SRV records of named ports, pod A records
// as 1-2-3-4.<ns>.pod.<domain>, in-addr.arpa PTRs, ttl 30) and forwarding
// every other name to the resolvers of a resolv.conf, answering SERVFAIL
// after two one-second attempts when they do not answer. It listens on one
// address for UDP and TCP alike (port 0: a port free for both).
//
// It is an API client only: CoreDNS's kubernetes plugin lists and watches
// Services, EndpointSlices, Pods and Namespaces through a kubeconfig of its
// own identity (system:glassplane-dns, bound to upstream's ClusterRole
// system:coredns), and Run applies, with the client it is given, the
// add-on's kube-system/kube-dns Service (the 10th address of the service
// range, without selector) and its EndpointSlice (managed by ManagedBy)
// pointing at the address and port the server listens on, on every start,
// as kubeadm applies CoreDNS's manifests, and again every minute so a
// deleted one comes back; each is read first and written only when it is
// missing or differs. The plugin's setup points klog at
// CoreDNS's logger for the whole process; start gives klog its own output
// back. It touches nothing else.
package dns
