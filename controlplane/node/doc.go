// Package node is Glassplane's node agent, its kubelet: an API client (never
// etcd) that registers its Node, renews its Lease in kube-node-lease, watches
// only the pods bound to it, runs them through a runtime.Runtime (containerd
// or simulated) and reports back what happened the way kubelet does: pod
// status, container statuses and core/v1 Events (Pulling, Pulled, Created,
// Started, Killing, BackOff, Failed). Graceful deletion ends with the agent
// deleting the pod object with grace 0. This room touches the API through its
// client and containers through its runtime, nothing else.
package node
