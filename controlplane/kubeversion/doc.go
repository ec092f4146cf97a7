// Package kubeversion is the one Kubernetes version Glassplane reports: the
// API server's /version (what `kubectl version` prints as the server's) and
// every node's nodeInfo.kubeletVersion. It is the version of the
// k8s.io/api module Glassplane is built with, whose v0.X.Y implements
// Kubernetes v1.X.Y; a test fails when go.mod moves on without it. It
// imports nothing of Glassplane's.
package kubeversion
