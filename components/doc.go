// Package components holds the dashboard's templ components: the page layout,
// the cluster map (an SVG of the architecture with nodes and pods, a
// StatefulSet's in ordinal order, each naming the claims it mounts; drawn
// at 75% or wider, so a map of many nodes scrolls sideways), the
// narration panel, the classroom tempo panel (realtime, slow, step with a
// Next button and the waiting actions), the apply form (dry-run diff of what
// the API server adds, field errors with their lines, server-side apply's
// field manager and force), an object's
// timeline, a Service's part of its page (spec, EndpointSlices, DNS names,
// the service proxy's rules per containerd node; service.templ), a
// PersistentVolumeClaim's, CronJob's and HorizontalPodAutoscaler's parts
// (pvc.templ, cronjob.templ, hpa.templ with its SVG metric chart laid out
// by chart.go; their view models in workloads.go), the
// CRD pages (names, versions, each schema as a tree, printer columns,
// conditions; crd.templ, view models in crdmodel.go) and the list of any
// resource, the request
// pipeline (admission's webhook and policy calls as sub-stages;
// admissioncalls.templ), the Events and Nodes lists, the etcd key
// explorer, the demos page and the login form. Each component is a pure
// function of the view model declared in viewmodel.go; package web fills
// the view models from the store, the audit ring and the API. Every value is
// rendered through templ's escaping, and key elements carry data-testid
// attributes for tests and the browser scripts in package static.
package components
