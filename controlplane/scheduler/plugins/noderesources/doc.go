// Package noderesources is the NodeResourcesFit plugin: its filter checks
// the pod's requests (cpu, memory, ephemeral-storage, extended resources and
// the pod count) against what is left of the node's allocatable, and its
// score ranks nodes with kube-scheduler's LeastAllocated strategy. It reads
// only the pod and the NodeInfo.
package noderesources
