// Package tainttoleration is the TaintToleration plugin: its filter rejects
// nodes with a NoSchedule or NoExecute taint the pod doesn't tolerate, and
// its score prefers nodes with fewer untolerated PreferNoSchedule taints.
// It reads only the pod and node.
package tainttoleration
