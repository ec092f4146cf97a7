// Package ecosystem runs the tools that operators and chart authors bring to
// a cluster against a real `glassplane up`: a controller built on
// sigs.k8s.io/controller-runtime (with leader election) that reconciles a
// custom resource into a Deployment and writes its status, and the helm CLI
// (built from helm.sh/helm/v4 in this module) installing, upgrading and
// uninstalling a chart that carries a CRD.
//
// It is a Go module of its own so that the product's go.mod does not carry
// Helm and controller-runtime. It touches nothing of the product but the
// binary named by GLASSPLANE_BIN (built from ../.. when unset), which it
// starts on free loopback ports with simulated nodes only.
package ecosystem
