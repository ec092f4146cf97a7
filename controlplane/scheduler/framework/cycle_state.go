package framework

import (
	"errors"
	"sync"
)

// ErrNotFound is returned by CycleState.Read for a key nobody wrote.
var ErrNotFound = errors.New("not found")

// StateKey names one piece of data in a CycleState.
type StateKey string

// StateData is anything a plugin keeps in a CycleState.
type StateData interface{}

// CycleState carries data between the extension points of one scheduling
// cycle of one pod, typically what a PreFilter computed for its Filter. It is
// safe for concurrent use because Filter and Score run on many nodes at once.
// Like kube-scheduler's, it is a sync.Map: written a few times, then read
// on every node by every worker without contention.
type CycleState struct {
	storage sync.Map // StateKey → StateData
	// scores holds the backing arrays of the cycle's RunScorePlugins
	// result, from scoreArenas, until ReleaseScores returns them.
	scores *scoreArena
}

// ReleaseScores returns the memory of the scores RunScorePlugins returned
// in this cycle, for a later cycle to reuse; they must not be read after.
// The scheduler calls it once the attempt's explanation is encoded: at
// 1,000 nodes a cycle's scores are some 140 KB, and reusing them spares
// the garbage collector that much per pod. A cycle that never releases
// leaves its scores to the garbage collector.
func (c *CycleState) ReleaseScores() {
	if a := c.scores; a != nil {
		c.scores = nil
		scoreArenas.Put(a)
	}
}

// NewCycleState returns an empty CycleState.
func NewCycleState() *CycleState {
	return &CycleState{}
}

// Read returns the data stored under key, or ErrNotFound.
func (c *CycleState) Read(key StateKey) (StateData, error) {
	v, ok := c.storage.Load(key)
	if !ok {
		return nil, ErrNotFound
	}
	return v, nil
}

// Write stores data under key, replacing what was there.
func (c *CycleState) Write(key StateKey, data StateData) {
	c.storage.Store(key, data)
}
