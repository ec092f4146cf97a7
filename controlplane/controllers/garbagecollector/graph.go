package garbagecollector

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// objectRef names one object in the graph; it is the workqueue key.
type objectRef struct {
	UID        types.UID
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
}

func (r objectRef) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// node is one object in the ownership graph. Every field is guarded by
// the collector's graph lock.
type node struct {
	ref objectRef
	// owners are the object's ownerReferences as last observed.
	owners []metav1.OwnerReference
	// dependents are the nodes that name this one as an owner.
	dependents map[types.UID]*node
	// virtual nodes were named as an owner but not observed yet.
	virtual            bool
	beingDeleted       bool
	deletingDependents bool
}

func newNode(ref objectRef) *node {
	return &node{ref: ref, dependents: map[types.UID]*node{}}
}

// blockingDependents returns the dependents whose reference to n sets
// blockOwnerDeletion.
func (n *node) blockingDependents() []*node {
	var out []*node
	for _, dep := range n.dependents {
		for _, o := range dep.owners {
			if o.UID == n.ref.UID && o.BlockOwnerDeletion != nil && *o.BlockOwnerDeletion {
				out = append(out, dep)
				break
			}
		}
	}
	return out
}

func hasFinalizer(m metav1.Object, f string) bool {
	for _, x := range m.GetFinalizers() {
		if x == f {
			return true
		}
	}
	return false
}
