package noderesources

import (
	"context"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

// Score scores the node with the profile's strategy (LeastAllocated by
// default: for each scoring resource, (allocatable - requested) * 100 /
// allocatable, where requested is what the node's pods request plus the
// pod itself, with default requests for containers that name none; the
// weighted average of those, rounded down). Resources the node has none of
// are skipped.
func (f *Fit) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	if nodeInfo.Node() == nil {
		return 0, framework.NewStatus(framework.Error, "node not found")
	}
	podReq := nonZeroRequestsFromState(state, pod)
	requested := make([]int64, len(f.resources))
	allocatable := make([]int64, len(f.resources))
	for i, rs := range f.resources {
		allocatable[i], requested[i] = allocatableAndRequested(rs.Name, podReq, nodeInfo, true)
	}
	return f.scorer(requested, allocatable), nil
}

// preScoreState is the pod's requests with defaults, computed once per cycle.
type preScoreState struct {
	nonZeroRequests *framework.Resource
}

// PreScore computes the pod's requests (with defaults) for the Score calls.
func (*Fit) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	state.Write(preScoreStateKey, &preScoreState{nonZeroRequests: framework.PodRequests(pod, true)})
	return nil
}

func nonZeroRequestsFromState(state *framework.CycleState, pod *v1.Pod) *framework.Resource {
	if data, err := state.Read(preScoreStateKey); err == nil {
		if s, ok := data.(*preScoreState); ok {
			return s.nonZeroRequests
		}
	}
	return framework.PodRequests(pod, true)
}

// ScoreExtensions returns nil: the strategies' scores are already 0..100.
func (*Fit) ScoreExtensions() framework.ScoreExtensions { return nil }

func sortedScalarNames(m map[v1.ResourceName]int64) []v1.ResourceName {
	if len(m) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(m))
}
