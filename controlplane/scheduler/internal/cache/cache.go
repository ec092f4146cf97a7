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
	nodes map[string]*nodeItem
	// head is the most recently changed node; the list runs from newer
	// generations to older ones, as kube-scheduler's cache keeps it, so
	// that UpdateSnapshot visits only the nodes changed since the
	// snapshot's generation, not all of them.
	head *nodeItem
	// live counts the nodes that have a Node object.
	live int
	pods map[types.UID]*podState
	// generation is the last generation handed to a changed NodeInfo.
	generation int64
}

// nodeItem is a node's info in the cache's generation-ordered list.
type nodeItem struct {
	name       string
	info       *framework.NodeInfo
	prev, next *nodeItem
}

// New returns an empty cache.
func New() *Cache {
	return &Cache{nodes: map[string]*nodeItem{}, pods: map[types.UID]*podState{}}
}

// touch gives it a new generation and moves it to the head of the list.
func (c *Cache) touch(it *nodeItem) {
	c.generation++
	it.info.Generation = c.generation
	if c.head == it {
		return
	}
	c.unlink(it)
	it.next = c.head
	if c.head != nil {
		c.head.prev = it
	}
	c.head = it
}

// unlink takes it out of the list.
func (c *Cache) unlink(it *nodeItem) {
	if it.prev != nil {
		it.prev.next = it.next
	}
	if it.next != nil {
		it.next.prev = it.prev
	}
	if c.head == it {
		c.head = it.next
	}
	it.prev, it.next = nil, nil
}

// forget drops it, which holds no Node object and no pods, from the cache.
func (c *Cache) forget(it *nodeItem) {
	c.unlink(it)
	delete(c.nodes, it.name)
	c.generation++
}

// setNode sets or clears it's Node object, keeping live up to date.
func (c *Cache) setNode(it *nodeItem, node *v1.Node) {
	had := it.info.Node() != nil
	if node != nil {
		it.info.SetNode(node)
	} else {
		it.info.RemoveNode()
	}
	switch has := node != nil; {
	case has && !had:
		c.live++
	case had && !has:
		c.live--
	}
}

func (c *Cache) nodeItem(name string) *nodeItem {
	it, ok := c.nodes[name]
	if !ok {
		it = &nodeItem{name: name, info: framework.NewNodeInfo()}
		c.nodes[name] = it
	}
	return it
}

// AddNode adds or replaces a node.
func (c *Cache) AddNode(node *v1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	it := c.nodeItem(node.Name)
	c.setNode(it, node)
	c.touch(it)
}

// UpdateNode replaces a node.
func (c *Cache) UpdateNode(node *v1.Node) { c.AddNode(node) }

// RemoveNode forgets a node; its pods stay until they are removed.
func (c *Cache) RemoveNode(node *v1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	it, ok := c.nodes[node.Name]
	if !ok {
		return
	}
	c.setNode(it, nil)
	if len(it.info.Pods) == 0 {
		c.forget(it)
		return
	}
	c.touch(it)
}

func (c *Cache) addPodLocked(pod *v1.Pod, assumed bool) {
	it := c.nodeItem(pod.Spec.NodeName)
	it.info.AddPod(pod)
	c.touch(it)
	c.pods[pod.UID] = &podState{pod: pod, assumed: assumed}
}

func (c *Cache) removePodLocked(pod *v1.Pod) error {
	it, ok := c.nodes[pod.Spec.NodeName]
	if !ok {
		return fmt.Errorf("failed to remove pod %q: node %q is not in the cache", pod.Namespace+"/"+pod.Name, pod.Spec.NodeName)
	}
	if err := it.info.RemovePod(pod); err != nil {
		return err
	}
	c.touch(it)
	if it.info.Node() == nil && len(it.info.Pods) == 0 {
		c.forget(it)
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
	return c.live
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
		s.imageNodes = map[string]int{}
	}
	// Changed nodes, newest first, down to the snapshot's generation, are
	// cloned into their place in the list; only when nodes come or go is
	// the list rebuilt and sorted.
	rebuild := false
	for it := c.head; it != nil && it.info.Generation > s.generation; it = it.next {
		name, ni := it.name, it.info
		if ni.Node() == nil {
			if old, ok := s.nodeInfoMap[name]; ok {
				s.countImages(old.Images(), -1)
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
		if !ok || old.Images() != clone.Images() {
			if ok {
				s.countImages(old.Images(), -1)
			}
			s.countImages(clone.Images(), 1)
		}
		s.nodeInfoMap[name] = clone
		if i, listed := s.index[name]; ok && listed {
			s.nodeInfoList[i] = clone
		} else {
			rebuild = true
		}
	}
	// The map holds every live node now; anything more is gone from the
	// cache.
	if len(s.nodeInfoMap) != c.live {
		for name, old := range s.nodeInfoMap {
			if it, ok := c.nodes[name]; !ok || it.info.Node() == nil {
				s.countImages(old.Images(), -1)
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
	index map[string]int
	// imageNodes counts, per image name, the nodes holding the image.
	imageNodes map[string]int
	generation int64
}

// countImages adds d to the count of every name in images.
func (s *Snapshot) countImages(images *framework.NodeImages, d int) {
	if images == nil {
		return
	}
	for name := range images.Sizes {
		if s.imageNodes[name] += d; s.imageNodes[name] == 0 {
			delete(s.imageNodes, name)
		}
	}
}

// NodesWithImage implements framework.ImageCounter.
func (s *Snapshot) NodesWithImage(name string) int { return s.imageNodes[name] }

var (
	_ framework.NodeInfoLister = &Snapshot{}
	_ framework.ImageCounter   = &Snapshot{}
)

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
