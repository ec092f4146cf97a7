package framework

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
)

// MaxNodeScore is the highest score a ScorePlugin may give after
// normalization; MinNodeScore the lowest.
const (
	MaxNodeScore int64 = 100
	MinNodeScore int64 = 0
)

// Plugin is the parent of every extension-point interface.
type Plugin interface {
	// Name is the plugin's name in profiles, statuses and explanations.
	Name() string
}

// QueuedPodInfo is a pod waiting in the scheduling queue.
type QueuedPodInfo struct {
	Pod *v1.Pod
	// Timestamp is when the pod was last added to the queue.
	Timestamp time.Time
	// Attempts counts the scheduling cycles the pod went through.
	Attempts int
	// InitialAttemptTimestamp is when the pod was first popped, if ever.
	InitialAttemptTimestamp *time.Time
}

// QueueSortPlugin orders the active queue. A profile has exactly one.
type QueueSortPlugin interface {
	Plugin
	// Less reports whether a should be scheduled before b.
	Less(a, b *QueuedPodInfo) bool
}

// PreFilterPlugin runs once per cycle before any Filter, typically to compute
// data the Filter needs on every node. A rejection fails the pod on all nodes.
type PreFilterPlugin interface {
	Plugin
	PreFilter(ctx context.Context, state *CycleState, pod *v1.Pod) *Status
}

// FilterPlugin decides whether the pod may run on one node. It is called
// concurrently for many nodes and must not modify nodeInfo.
type FilterPlugin interface {
	Plugin
	Filter(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) *Status
}

// PreScorePlugin runs once per cycle, with the feasible nodes, before Score.
type PreScorePlugin interface {
	Plugin
	PreScore(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo) *Status
}

// ScorePlugin ranks a feasible node. It is called concurrently for many
// nodes. After NormalizeScore (if any) each score must lie in
// [MinNodeScore, MaxNodeScore]; the framework then multiplies it by the
// plugin's weight.
type ScorePlugin interface {
	Plugin
	Score(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) (int64, *Status)
	// ScoreExtensions returns the NormalizeScore hook, or nil.
	ScoreExtensions() ScoreExtensions
}

// NodeScore is one node's score from one plugin.
type NodeScore struct {
	Name  string
	Score int64
}

// NodeScoreList is one plugin's scores for every feasible node.
type NodeScoreList []NodeScore

// ScoreExtensions is an optional hook of a ScorePlugin.
type ScoreExtensions interface {
	// NormalizeScore rewrites the plugin's raw scores in place, typically
	// into [MinNodeScore, MaxNodeScore].
	NormalizeScore(ctx context.Context, state *CycleState, pod *v1.Pod, scores NodeScoreList) *Status
}

// Handle is what the framework offers plugins at construction time.
type Handle interface {
	// ClientSet is the scheduler's API client.
	ClientSet() kubernetes.Interface
	// SnapshotSharedLister reads the current cycle's snapshot.
	SnapshotSharedLister() NodeInfoLister
}
