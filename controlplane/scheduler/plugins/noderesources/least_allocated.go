package noderesources

import (
	"context"
	"sort"

	v1 "k8s.io/api/core/v1"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

// Score is the LeastAllocated score of the node for the pod: for each
// scoring resource, (allocatable - requested) * 100 / allocatable, where
// requested is what the node's pods request plus the pod itself (with
// default requests for containers that name none); the weighted average of
// those, rounded down. Resources the node has none of are skipped.
func (f *Fit) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	if nodeInfo.Node() == nil {
		return 0, framework.NewStatus(framework.Error, "node not found")
	}
	podReq := nonZeroRequestsFromState(state, pod)
	var nodeScore, weightSum int64
	for _, rs := range f.resources {
		allocatable, requested := allocatableAndRequested(rs.Name, podReq, nodeInfo)
		if allocatable == 0 {
			continue
		}
		nodeScore += leastRequestedScore(requested, allocatable) * rs.Weight
		weightSum += rs.Weight
	}
	if weightSum == 0 {
		return 0, nil
	}
	return nodeScore / weightSum, nil
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

// ScoreExtensions returns nil: LeastAllocated scores are already 0..100.
func (*Fit) ScoreExtensions() framework.ScoreExtensions { return nil }

func allocatableAndRequested(name v1.ResourceName, podReq *framework.Resource, ni *framework.NodeInfo) (int64, int64) {
	switch name {
	case v1.ResourceCPU:
		return ni.Allocatable.MilliCPU, ni.NonZeroRequested.MilliCPU + podReq.MilliCPU
	case v1.ResourceMemory:
		return ni.Allocatable.Memory, ni.NonZeroRequested.Memory + podReq.Memory
	case v1.ResourceEphemeralStorage:
		return ni.Allocatable.EphemeralStorage, ni.Requested.EphemeralStorage + podReq.EphemeralStorage
	default:
		if podReq.ScalarResources[name] == 0 {
			return 0, 0
		}
		return ni.Allocatable.ScalarResources[name], ni.Requested.ScalarResources[name] + podReq.ScalarResources[name]
	}
}

// leastRequestedScore is the share of capacity left free, 0..100.
func leastRequestedScore(requested, capacity int64) int64 {
	if capacity == 0 || requested > capacity {
		return 0
	}
	return (capacity - requested) * framework.MaxNodeScore / capacity
}

func sortedScalarNames(m map[v1.ResourceName]int64) []v1.ResourceName {
	names := make([]v1.ResourceName, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}
