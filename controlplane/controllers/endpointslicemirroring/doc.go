// Package endpointslicemirroring is the EndpointSlice mirroring controller,
// as kube-controller-manager's endpointslice-mirroring-controller: for every
// Endpoints object whose Service exists and has no selector (custom
// Endpoints a user or another controller writes), it keeps
// discovery.k8s.io/v1 EndpointSlices that mirror the Endpoints' subsets,
// one per address family and set of ports, labelled
// kubernetes.io/service-name and managed-by
// endpointslicemirroring-controller.k8s.io and owned by the Endpoints, at
// most MaxEndpointsPerSubset addresses per subset. It deletes those slices
// when the Endpoints or its Service goes away, when the Service gains a
// selector, or when the Endpoints is labelled
// endpointslice.kubernetes.io/skip-mirror=true (as the API server's own
// kubernetes Endpoints is). It reads Endpoints, Services and EndpointSlices
// through informers and writes EndpointSlices and Events through the API.
// Like the EndpointSlice controller it remembers the generation of every
// slice it wrote (tracker.go) and retries a sync while its informer cache
// has not yet seen those writes.
package endpointslicemirroring
