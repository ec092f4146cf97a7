// Package nodelifecycle is the node lifecycle controller: it watches node
// Leases and status heartbeats, and a node not heard from within the
// grace period gets its conditions set to Unknown ("Kubelet stopped
// posting node status.") and its pods marked not ready. It keeps the
// node.kubernetes.io/not-ready and unreachable taints (NoSchedule and
// NoExecute) and node.kubernetes.io/unschedulable in step with the node's
// Ready condition and spec, and evicts pods from NoExecute-tainted nodes
// once their tolerations run out (TaintManagerEviction). It reads nodes,
// Leases and pods through informers and writes node status and taints,
// pod status and pod deletions through the API.
package nodelifecycle
