// Package node is Kubernetes' Node authorizer and NodeRestriction admission
// plugin for Glassplane. A node agent authenticates as system:node:<name> in
// system:nodes; the authorizer lets it do what Kubernetes' system:node rules
// allow, narrowed to the secrets, configmaps, persistent volume claims and
// service account tokens its own pods use and to its own Lease in
// kube-node-lease; NodeRestriction then lets it change only its own Node
// (not its taints once registered, nor labels in the kubernetes.io and
// k8s.io domains beyond the kubelet's own, nor node-restriction.kubernetes.io
// ones), its own Lease and the pods bound to it. It asks which objects the pods of
// a node use through a Graph the API server provides (an index kept from
// the storage watch) and touches no storage itself.
package node
