package framework

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// NodeInfoList is a fixed NodeInfoLister, for tests and fixtures that run
// plugins without a scheduler cache.
type NodeInfoList []*NodeInfo

var _ NodeInfoLister = NodeInfoList(nil)

// List returns the nodes.
func (l NodeInfoList) List() []*NodeInfo { return l }

// Get returns the node named name.
func (l NodeInfoList) Get(name string) (*NodeInfo, error) {
	for _, ni := range l {
		if ni.Node() != nil && ni.Node().Name == name {
			return ni, nil
		}
	}
	return nil, fmt.Errorf("failed to get node %q: not in the list", name)
}

// NewNodeInfoList builds NodeInfos for nodes with the pods whose
// spec.nodeName names them.
func NewNodeInfoList(nodes []*v1.Node, pods []*v1.Pod) NodeInfoList {
	out := make(NodeInfoList, 0, len(nodes))
	for _, n := range nodes {
		ni := NewNodeInfo()
		ni.SetNode(n)
		for _, p := range pods {
			if p.Spec.NodeName == n.Name {
				ni.AddPod(p)
			}
		}
		out = append(out, ni)
	}
	return out
}
