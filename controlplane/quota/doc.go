// Package quota holds Glassplane's quota evaluators: what a pod, a
// Service, a PersistentVolumeClaim or any other object counts against a
// ResourceQuota, as kube-controller-manager's pkg/quota/v1/evaluator/core
// computes it, over k8s.io/apiserver's quota interfaces. The ResourceQuota
// admission plugin (one object's usage) and the resourcequota controller
// (a namespace's usage, through the lister functions it passes in) share
// them. It touches nothing: no storage, no API client.
package quota
