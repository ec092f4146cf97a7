package cache

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

// podState is a pod the cache knows and whether it is only assumed.
type podState struct {
	pod     *v1.Pod
	assumed bool
}

// Cache holds every node and the pods on it.
type Cache struct {
	mu sync.RWMutex // guards everything below
	// nodes maps node name to its info; an info may lack the Node object
	// while pods on it arrive before the node does.
	nodes map[string]*framework.NodeInfo
	pods  map[types.UID]*podState
	// generation is the last generation handed to a changed NodeInfo.
	generation int64
}

// New returns an empty cache.
func New() *Cache {
	return &Cache{nodes: map[string]*framework.NodeInfo{}, pods: map[types.UID]*podState{}}
}

func (c *Cache) touch(ni *framework.NodeInfo) {
	c.generation++
	ni.Generation = c.generation
}

func (c *Cache) nodeInfo(name string) *framework.NodeInfo {
	ni, ok := c.nodes[name]
	if !ok {
		ni = framework.NewNodeInfo()
		c.nodes[name] = ni
	}
	return ni
}

// AddNode adds or replaces a node.
func (c *Cache) AddNode(node *v1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ni := c.nodeInfo(node.Name)
	ni.SetNode(node)
	c.touch(ni)
}

// UpdateNode replaces a node.
func (c *Cache) UpdateNode(node *v1.Node) { c.AddNode(node) }

// RemoveNode forgets a node; its pods stay until they are removed.
func (c *Cache) RemoveNode(node *v1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ni, ok := c.nodes[node.Name]
	if !ok {
		return
	}
	if len(ni.Pods) == 0 {
		delete(c.nodes, node.Name)
		c.generation++
		return
	}
	ni.RemoveNode()
	c.touch(ni)
}

func (c *Cache) addPodLocked(pod *v1.Pod, assumed bool) {
	ni := c.nodeInfo(pod.Spec.NodeName)
	ni.AddPod(pod)
	c.touch(ni)
	c.pods[pod.UID] = &podState{pod: pod, assumed: assumed}
}

func (c *Cache) removePodLocked(pod *v1.Pod) error {
	ni, ok := c.nodes[pod.Spec.NodeName]
	if !ok {
		return fmt.Errorf("failed to remove pod %q: node %q is not in the cache", pod.Namespace+"/"+pod.Name, pod.Spec.NodeName)
	}
	if err := ni.RemovePod(pod); err != nil {
		return err
	}
	c.touch(ni)
	if ni.Node() == nil && len(ni.Pods) == 0 {
		delete(c.nodes, pod.Spec.NodeName)
	}
	delete(c.pods, pod.UID)
	return nil
}

// AssumePod counts pod (whose spec.nodeName is the chosen node) on its node
// before its binding is observed, so the next cycles see its requests.
func (c *Cache) AssumePod(pod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pods[pod.UID]; ok {
		return fmt.Errorf("failed to assume pod %q: it is already in the cache", pod.Namespace+"/"+pod.Name)
	}
	c.addPodLocked(pod, true)
	return nil
}

// ForgetPod drops an assumed pod whose binding failed.
func (c *Cache) ForgetPod(pod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.pods[pod.UID]
	if !ok {
		return nil
	}
	if !ps.assumed {
		return fmt.Errorf("failed to forget pod %q: it is bound, not assumed", pod.Namespace+"/"+pod.Name)
	}
	return c.removePodLocked(ps.pod)
}

// IsAssumedPod reports whether pod is assumed and not yet seen bound.
func (c *Cache) IsAssumedPod(pod *v1.Pod) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	ps, ok := c.pods[pod.UID]
	return ok && ps.assumed
}

// AddPod records a pod observed bound to a node, confirming it if it was
// assumed (and moving it if it landed elsewhere).
func (c *Cache) AddPod(pod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps, ok := c.pods[pod.UID]; ok {
		if err := c.removePodLocked(ps.pod); err != nil {
			return err
		}
	}
	c.addPodLocked(pod, false)
	return nil
}

// UpdatePod replaces a bound pod.
func (c *Cache) UpdatePod(pod *v1.Pod) error { return c.AddPod(pod) }

// RemovePod forgets a pod that was deleted or finished.
func (c *Cache) RemovePod(pod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.pods[pod.UID]
	if !ok {
		return nil
	}
	return c.removePodLocked(ps.pod)
}

// NodeCount returns how many nodes (with a Node object) the cache holds.
func (c *Cache) NodeCount() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := 0
	for _, ni := range c.nodes {
		if ni.Node() != nil {
			n++
		}
	}
	return n
}

// UpdateSnapshot brings s up to date, copying only the nodes that changed
// since s was last updated.
func (c *Cache) UpdateSnapshot(s *Snapshot) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if s.generation == c.generation && s.nodeInfoMap != nil {
		return
	}
	if s.nodeInfoMap == nil {
		s.nodeInfoMap = map[string]*framework.NodeInfo{}
		s.index = map[string]int{}
	}
	// Changed nodes are cloned into their place in the list; only when
	// nodes come or go is the list rebuilt and sorted.
	rebuild, live := false, 0
	for name, ni := range c.nodes {
		if ni.Node() != nil {
			live++
		}
		if ni.Node() == nil {
			if _, ok := s.nodeInfoMap[name]; ok {
				delete(s.nodeInfoMap, name)
				rebuild = true
			}
			continue
		}
		old, ok := s.nodeInfoMap[name]
		if ok && old.Generation == ni.Generation {
			continue
		}
		clone := ni.Clone()
		s.nodeInfoMap[name] = clone
		if i, listed := s.index[name]; ok && listed {
			s.nodeInfoList[i] = clone
		} else {
			rebuild = true
		}
	}
	// The map holds every live node now; anything more is gone.
	if len(s.nodeInfoMap) != live {
		for name := range s.nodeInfoMap {
			if ni, ok := c.nodes[name]; !ok || ni.Node() == nil {
				delete(s.nodeInfoMap, name)
				rebuild = true
			}
		}
	}
	if rebuild {
		s.nodeInfoList = s.nodeInfoList[:0]
		for _, ni := range s.nodeInfoMap {
			s.nodeInfoList = append(s.nodeInfoList, ni)
		}
		slices.SortFunc(s.nodeInfoList, func(a, b *framework.NodeInfo) int { return strings.Compare(a.Node().Name, b.Node().Name) })
		clear(s.index)
		for i, ni := range s.nodeInfoList {
			s.index[ni.Node().Name] = i
		}
	}
	s.generation = c.generation
}

// Snapshot is an immutable copy of the cache for one scheduling cycle.
type Snapshot struct {
	nodeInfoMap  map[string]*framework.NodeInfo
	nodeInfoList []*framework.NodeInfo
	// index is each node's position in nodeInfoList.
	index      map[string]int
	generation int64
}

var _ framework.NodeInfoLister = &Snapshot{}

// NewSnapshot returns an empty snapshot to pass to UpdateSnapshot.
func NewSnapshot() *Snapshot { return &Snapshot{} }

// List returns the nodes sorted by name.
func (s *Snapshot) List() []*framework.NodeInfo { return s.nodeInfoList }

// Get returns the node named name.
func (s *Snapshot) Get(name string) (*framework.NodeInfo, error) {
	ni, ok := s.nodeInfoMap[name]
	if !ok {
		return nil, fmt.Errorf("failed to get node %q: not in the snapshot", name)
	}
	return ni, nil
}
