// Package nodeunschedulable is the NodeUnschedulable filter plugin: a
// cordoned node (spec.unschedulable) accepts only pods that tolerate the
// node.kubernetes.io/unschedulable:NoSchedule taint. It reads only the pod
// and node.
package nodeunschedulable
