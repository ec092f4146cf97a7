package queue

import (
	"container/heap"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

// podHeap is a heap of queued pods addressable by pod key.
type podHeap struct {
	items []*framework.QueuedPodInfo
	index map[string]int
	less  func(a, b *framework.QueuedPodInfo) bool
}

func newPodHeap(less func(a, b *framework.QueuedPodInfo) bool) *podHeap {
	return &podHeap{index: map[string]int{}, less: less}
}

func (h *podHeap) Len() int           { return len(h.items) }
func (h *podHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *podHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.index[podKey(h.items[i].Pod)] = i
	h.index[podKey(h.items[j].Pod)] = j
}

func (h *podHeap) Push(x any) {
	pi := x.(*framework.QueuedPodInfo)
	h.index[podKey(pi.Pod)] = len(h.items)
	h.items = append(h.items, pi)
}

func (h *podHeap) Pop() any {
	n := len(h.items) - 1
	pi := h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	delete(h.index, podKey(pi.Pod))
	return pi
}

// addOrUpdate inserts pi or replaces the entry with the same key.
func (h *podHeap) addOrUpdate(pi *framework.QueuedPodInfo) {
	key := podKey(pi.Pod)
	if i, ok := h.index[key]; ok {
		h.items[i] = pi
		heap.Fix(h, i)
		return
	}
	heap.Push(h, pi)
}

// get returns the entry with key, if any.
func (h *podHeap) get(key string) (*framework.QueuedPodInfo, bool) {
	i, ok := h.index[key]
	if !ok {
		return nil, false
	}
	return h.items[i], true
}

// remove deletes the entry with key and reports whether there was one.
func (h *podHeap) remove(key string) bool {
	i, ok := h.index[key]
	if !ok {
		return false
	}
	heap.Remove(h, i)
	return true
}

// peek returns the first entry without removing it.
func (h *podHeap) peek() *framework.QueuedPodInfo {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

// pop removes and returns the first entry.
func (h *podHeap) pop() *framework.QueuedPodInfo {
	if len(h.items) == 0 {
		return nil
	}
	return heap.Pop(h).(*framework.QueuedPodInfo)
}
