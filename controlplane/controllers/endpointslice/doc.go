// Package endpointslice is the EndpointSlice controller: for every
// Service with a selector it keeps discovery.k8s.io/v1 EndpointSlices
// (labelled kubernetes.io/service-name and managed-by
// endpointslice-controller.k8s.io, owned by the Service) listing the
// selected pods with their ready, serving and terminating conditions, at
// most MaxEndpointsPerSlice per slice, one set of slices per distinct
// port mapping, and one placeholder slice without endpoints or ports for a
// Service with none, as upstream's reconciler. It reads Services, pods and EndpointSlices through
// informers and writes EndpointSlices through the API. It remembers the
// generation of every slice it wrote (tracker.go, upstream's
// EndpointSliceTracker) and retries a sync later while its informer cache
// has not yet seen those writes, so that a quick second sync does not make a
// second slice for the same endpoints.
package endpointslice
