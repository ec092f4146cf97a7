package framework

import (
	"fmt"
	"slices"

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

	// The rest is kept for inter-pod affinity, which looks at every pod in
	// the cluster for every pod it schedules. Laid out flat on the node, a
	// pod costs a few bytes of a cache line instead of a chase through its
	// PodInfo and PodAffinity, each a likely cache miss.

	// podsBloom is the OR of the pods' LabelBloom (all ones when a pod's is
	// not known): a term whose bloom it lacks matches none of the pods.
	podsBloom uint64
	// antiTerms are the pods' required anti-affinity terms, scoringTerms
	// the terms by which placed pods score an incoming one (required
	// affinity at the hard weight, preferred affinity and anti-affinity).
	antiTerms, scoringTerms []TermRef
	// labels are the node's labels with their pairs' hashes.
	labels []NodeLabel
	// images are the node's status.images by name (nil without a Node);
	// shared with clones, and kept when an update leaves them unchanged.
	images *NodeImages
}

// NodeImages is the images a node reports in status.images, by each of
// their names, as ImageLocality reads them.
type NodeImages struct {
	// Sizes maps every name of every image to the image's size (the first
	// image listing a name wins).
	Sizes map[string]int64
	// from is the status.images they were made from.
	from []v1.ContainerImage
}

// newNodeImages indexes images, or returns old when they are the same.
func newNodeImages(old *NodeImages, images []v1.ContainerImage) *NodeImages {
	if old != nil && slices.EqualFunc(old.from, images, func(a, b v1.ContainerImage) bool {
		return a.SizeBytes == b.SizeBytes && slices.Equal(a.Names, b.Names)
	}) {
		return old
	}
	ni := &NodeImages{Sizes: map[string]int64{}, from: images}
	for _, img := range images {
		for _, name := range img.Names {
			if _, seen := ni.Sizes[name]; !seen {
				ni.Sizes[name] = img.SizeBytes
			}
		}
	}
	return ni
}

// Images returns the node's images by name; nil when the Node is not known.
func (n *NodeInfo) Images() *NodeImages { return n.images }

// TermRef is an affinity term of a placed pod, with the term's bloom at
// hand.
type TermRef struct {
	// Bloom is the term's label bloom (0: none, it cannot reject a pod).
	Bloom uint64
	Term  *AffinityTerm
	// Weight is a preferred term's weight, negative for anti-affinity.
	Weight int32
	// Hard marks a required affinity term, which scores at the
	// hardPodAffinityWeight.
	Hard bool
}

// MayMatch reports whether a pod with label bloom podBloom (0: unknown)
// may match the term; false means it does not.
func (r *TermRef) MayMatch(podBloom uint64) bool {
	return bloomMayHold(r.Bloom, podBloom)
}

// NodeLabel is a label of the node and the hash of its pair.
type NodeLabel struct {
	Hash       uint64
	Key, Value string
}

// PodsMayMatch reports whether one of the node's pods may match t: false
// means none does. Unlike a pod's, the node's bloom is always known: 0
// means no pod with labels.
func (n *NodeInfo) PodsMayMatch(t *AffinityTerm) bool {
	return t.bloom == 0 || n.podsBloom&t.bloom == t.bloom
}

// RequiredAntiAffinityTerms are the required anti-affinity terms of the
// node's pods.
func (n *NodeInfo) RequiredAntiAffinityTerms() []TermRef { return n.antiTerms }

// ScoringAffinityTerms are the node's pods' terms that score an incoming
// pod: required affinity (Hard), preferred affinity and preferred
// anti-affinity (Weight negative).
func (n *NodeInfo) ScoringAffinityTerms() []TermRef { return n.scoringTerms }

// Labels are the node's labels with their pairs' hashes (PairHash).
func (n *NodeInfo) Labels() []NodeLabel { return n.labels }

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
	n.labels = make([]NodeLabel, 0, len(node.Labels))
	for k, v := range node.Labels {
		n.labels = append(n.labels, NodeLabel{PairHash(k, v), k, v})
	}
	n.images = newNodeImages(n.images, node.Status.Images)
}

// RemoveNode forgets the Node object but keeps the pods.
func (n *NodeInfo) RemoveNode() {
	n.node = nil
	n.Allocatable = &Resource{}
	n.labels = nil
	n.images = nil
}

// AddPod adds pod and its requests.
func (n *NodeInfo) AddPod(pod *v1.Pod) {
	n.AddPodInfo(NewPodInfo(pod))
}

// AddPodInfo adds an already computed PodInfo.
func (n *NodeInfo) AddPodInfo(pi *PodInfo) {
	n.Pods = append(n.Pods, pi)
	n.Requested.addResource(pi.Requests, 1)
	n.NonZeroRequested.addResource(pi.NonZeroRequests, 1)
	n.addAffinityOf(pi)
}

// addAffinityOf adds pi's labels and terms to the flat affinity fields.
func (n *NodeInfo) addAffinityOf(pi *PodInfo) {
	if pi.labelBloom == 0 && len(pi.Pod.Labels) > 0 {
		n.podsBloom = ^uint64(0)
	}
	n.podsBloom |= pi.labelBloom
	a := pi.Affinity
	for i := range a.RequiredAntiAffinityTerms {
		t := &a.RequiredAntiAffinityTerms[i]
		n.antiTerms = append(n.antiTerms, TermRef{Bloom: t.bloom, Term: t})
	}
	for i := range a.RequiredAffinityTerms {
		t := &a.RequiredAffinityTerms[i]
		n.scoringTerms = append(n.scoringTerms, TermRef{Bloom: t.bloom, Term: t, Hard: true})
	}
	for i := range a.PreferredAffinityTerms {
		t := &a.PreferredAffinityTerms[i]
		n.scoringTerms = append(n.scoringTerms, TermRef{Bloom: t.bloom, Term: &t.AffinityTerm, Weight: t.Weight})
	}
	for i := range a.PreferredAntiAffinityTerms {
		t := &a.PreferredAntiAffinityTerms[i]
		n.scoringTerms = append(n.scoringTerms, TermRef{Bloom: t.bloom, Term: &t.AffinityTerm, Weight: -t.Weight})
	}
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
		// The flat fields are rebuilt from the pods left, into new arrays:
		// a clone may share the old ones.
		n.podsBloom, n.antiTerms, n.scoringTerms = 0, nil, nil
		for _, p := range n.Pods {
			n.addAffinityOf(p)
		}
		return nil
	}
	return fmt.Errorf("failed to remove pod %q: not found on node %q", pod.Namespace+"/"+pod.Name, n.nodeName())
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
		node:             n.node,
		Pods:             append([]*PodInfo(nil), n.Pods...),
		Requested:        n.Requested.Clone(),
		NonZeroRequested: n.NonZeroRequested.Clone(),
		Allocatable:      n.Allocatable.Clone(),
		Generation:       n.Generation,
		podsBloom:        n.podsBloom,
		antiTerms:        slices.Clip(n.antiTerms),
		scoringTerms:     slices.Clip(n.scoringTerms),
		labels:           n.labels,
		images:           n.images,
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

// ImageCounter is a NodeInfoLister that also counts, for an image name,
// the nodes that hold it, as kube-scheduler's snapshot keeps each image's
// NumNodes instead of scanning every node in every cycle.
type ImageCounter interface {
	NodesWithImage(name string) int
}
