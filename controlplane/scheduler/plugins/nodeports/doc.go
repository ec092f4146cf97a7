// Package nodeports is the NodePorts filter plugin: a node is rejected when
// a hostPort the pod asks for (per protocol and host IP, with 0.0.0.0 or an
// empty hostIP meaning every address) is already taken by a pod on it. It
// reads only the pod and the pods in the node's NodeInfo.
package nodeports
