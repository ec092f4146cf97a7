// Package controllerutil holds what Kubernetes keeps in
// pkg/controller/controller_utils.go and shares between the controllers
// here: creation and deletion expectations, pod ranking for scale-down,
// pod readiness and availability, the pod-template hash, controllerRef
// adoption and release, and the worker loop over a rate-limited workqueue.
// It talks to the API only through the clients its callers pass in.
package controllerutil
