package framework

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodInfo is a pod on a node together with its precomputed requests.
type PodInfo struct {
	Pod *v1.Pod
	// Requests is what the pod asks for (PodRequests(pod, false)).
	Requests *Resource
	// NonZeroRequests is what scoring counts (PodRequests(pod, true)).
	NonZeroRequests *Resource
	// Affinity is the pod's parsed inter-pod (anti-)affinity.
	Affinity *PodAffinity
	// labelBloom is LabelBloom(Pod.Labels); 0 (no labels, or a PodInfo
	// not made by NewPodInfo) means unknown.
	labelBloom uint64
}

// NewPodInfo computes the requests of pod once.
func NewPodInfo(pod *v1.Pod) *PodInfo {
	return &PodInfo{Pod: pod, Requests: PodRequests(pod, false), NonZeroRequests: PodRequests(pod, true), Affinity: NewPodAffinity(pod),
		labelBloom: LabelBloom(pod.Labels)}
}

// NodeInfo is one node as the scheduler sees it in a cycle: the Node object,
// the pods on it (bound, or assumed by this scheduler and not yet observed
// bound) and the totals they request. A NodeInfo handed to a plugin is a
// snapshot: plugins must not modify it.
type NodeInfo struct {
	node *v1.Node
	// Pods are the pods on the node, in the order they were added.
	Pods []*PodInfo
	// PodsWithAffinity are the Pods with any inter-pod (anti-)affinity term;
	// PodsWithRequiredAntiAffinity those with a required anti-affinity term,
	// which every incoming pod must be checked against.
	PodsWithAffinity             []*PodInfo
	PodsWithRequiredAntiAffinity []*PodInfo
	// Requested is the sum of the pods' requests.
	Requested *Resource
	// NonZeroRequested is the sum with default requests for containers that
	// name none, as used by scoring.
	NonZeroRequested *Resource
	// Allocatable is the node's status.allocatable.
	Allocatable *Resource
	// Generation increases on every change; snapshots use it to copy only
	// what changed.
	Generation int64
}

// NewNodeInfo returns a NodeInfo without a node holding the given pods.
func NewNodeInfo(pods ...*v1.Pod) *NodeInfo {
	n := &NodeInfo{Requested: &Resource{}, NonZeroRequested: &Resource{}, Allocatable: &Resource{}}
	for _, p := range pods {
		n.AddPod(p)
	}
	return n
}

// Node returns the Node object, or nil when only pods are known so far.
func (n *NodeInfo) Node() *v1.Node {
	if n == nil {
		return nil
	}
	return n.node
}

// SetNode sets the Node object and its allocatable.
func (n *NodeInfo) SetNode(node *v1.Node) {
	n.node = node
	n.Allocatable = NewResource(node.Status.Allocatable)
}

// RemoveNode forgets the Node object but keeps the pods.
func (n *NodeInfo) RemoveNode() {
	n.node = nil
	n.Allocatable = &Resource{}
}

// AddPod adds pod and its requests.
func (n *NodeInfo) AddPod(pod *v1.Pod) {
	n.AddPodInfo(NewPodInfo(pod))
}

// AddPodInfo adds an already computed PodInfo.
func (n *NodeInfo) AddPodInfo(pi *PodInfo) {
	n.Pods = append(n.Pods, pi)
	if !pi.Affinity.IsEmpty() {
		n.PodsWithAffinity = append(n.PodsWithAffinity, pi)
	}
	if len(pi.Affinity.RequiredAntiAffinityTerms) > 0 {
		n.PodsWithRequiredAntiAffinity = append(n.PodsWithRequiredAntiAffinity, pi)
	}
	n.Requested.addResource(pi.Requests, 1)
	n.NonZeroRequested.addResource(pi.NonZeroRequests, 1)
}

// RemovePod removes the pod with pod's UID and subtracts its requests.
func (n *NodeInfo) RemovePod(pod *v1.Pod) error {
	for i, pi := range n.Pods {
		if pi.Pod.UID != pod.UID {
			continue
		}
		n.Requested.addResource(pi.Requests, -1)
		n.NonZeroRequested.addResource(pi.NonZeroRequests, -1)
		n.Pods = append(n.Pods[:i:i], n.Pods[i+1:]...)
		n.PodsWithAffinity = withoutPodInfo(n.PodsWithAffinity, pi)
		n.PodsWithRequiredAntiAffinity = withoutPodInfo(n.PodsWithRequiredAntiAffinity, pi)
		return nil
	}
	return fmt.Errorf("failed to remove pod %q: not found on node %q", pod.Namespace+"/"+pod.Name, n.nodeName())
}

// withoutPodInfo returns list without pi, leaving list's array unchanged.
func withoutPodInfo(list []*PodInfo, pi *PodInfo) []*PodInfo {
	for i, p := range list {
		if p == pi {
			return append(list[:i:i], list[i+1:]...)
		}
	}
	return list
}

// HasPod reports whether a pod with uid is on the node.
func (n *NodeInfo) HasPod(uid types.UID) bool {
	for _, pi := range n.Pods {
		if pi.Pod.UID == uid {
			return true
		}
	}
	return false
}

// Clone returns a copy that shares the (immutable) pod and node objects.
func (n *NodeInfo) Clone() *NodeInfo {
	return &NodeInfo{
		node:                         n.node,
		Pods:                         append([]*PodInfo(nil), n.Pods...),
		PodsWithAffinity:             append([]*PodInfo(nil), n.PodsWithAffinity...),
		PodsWithRequiredAntiAffinity: append([]*PodInfo(nil), n.PodsWithRequiredAntiAffinity...),
		Requested:                    n.Requested.Clone(),
		NonZeroRequested:             n.NonZeroRequested.Clone(),
		Allocatable:                  n.Allocatable.Clone(),
		Generation:                   n.Generation,
	}
}

func (n *NodeInfo) nodeName() string {
	if n.node == nil {
		return ""
	}
	return n.node.Name
}

// NodeInfoLister reads the NodeInfos of the current cycle's snapshot.
type NodeInfoLister interface {
	// List returns every node in the snapshot.
	List() []*NodeInfo
	// Get returns the node named name, or an error if it is not there.
	Get(name string) (*NodeInfo, error)
}
