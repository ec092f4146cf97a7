package noderesources

import (
	"context"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

// BalancedAllocationName is the NodeResourcesBalancedAllocation plugin's
// name in profiles.
const BalancedAllocationName = "NodeResourcesBalancedAllocation"

const balancedPreScoreStateKey framework.StateKey = "PreScore" + BalancedAllocationName

// BalancedAllocation prefers nodes whose resource usage, with the pod,
// stays balanced across resources (cpu as full as memory).
type BalancedAllocation struct {
	resources []ResourceSpec
}

var (
	_ framework.PreScorePlugin = &BalancedAllocation{}
	_ framework.ScorePlugin    = &BalancedAllocation{}
)

// BalancedAllocationArgs are the plugin's arguments
// (NodeResourcesBalancedAllocationArgs).
type BalancedAllocationArgs struct {
	Kind       string         `json:"kind,omitempty"`
	APIVersion string         `json:"apiVersion,omitempty"`
	Resources  []ResourceSpec `json:"resources,omitempty"`
}

// NewBalancedAllocation builds the plugin over its resources (default cpu
// and memory, weight 1 each).
func NewBalancedAllocation(_ context.Context, args runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	var a BalancedAllocationArgs
	if err := framework.DecodeArgs(args, &a); err != nil {
		return nil, err
	}
	if len(a.Resources) == 0 {
		a.Resources = DefaultScoringResources
	}
	for i, r := range a.Resources {
		if r.Weight != 1 {
			return nil, fmt.Errorf("failed to build %s: resources[%d].weight: Invalid value: %d: must be 1", BalancedAllocationName, i, r.Weight)
		}
	}
	return &BalancedAllocation{resources: a.Resources}, nil
}

// Name returns BalancedAllocationName.
func (*BalancedAllocation) Name() string { return BalancedAllocationName }

type balancedPreScoreState struct {
	requests *framework.Resource
	// skip is set for a pod that requests none of the resources; like
	// kube-scheduler (since v1.32) such best-effort pods are not scored,
	// so they don't all pile onto the same node.
	skip bool
}

// PreScore computes the pod's requests (without defaults) once.
func (pl *BalancedAllocation) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	req := framework.PodRequests(pod, false)
	skip := true
	for _, r := range pl.resources {
		if _, v := allocatableAndRequested(r.Name, req, framework.NewNodeInfo(), false); v != 0 {
			skip = false
		}
	}
	state.Write(balancedPreScoreStateKey, &balancedPreScoreState{requests: req, skip: skip})
	return nil
}

// Score is (1 - the standard deviation of the requested/allocatable
// fractions of the resources) * 100, each fraction capped at 1; with two
// resources the deviation is |f1 - f2| / 2.
func (pl *BalancedAllocation) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	if nodeInfo.Node() == nil {
		return 0, framework.NewStatus(framework.Error, "node not found")
	}
	data, err := state.Read(balancedPreScoreStateKey)
	if err != nil {
		return 0, framework.AsStatus(fmt.Errorf("failed to read %q from cycle state: %w", balancedPreScoreStateKey, err))
	}
	s, ok := data.(*balancedPreScoreState)
	if !ok {
		return 0, framework.NewStatus(framework.Error, fmt.Sprintf("%T is not a noderesources.balancedPreScoreState", data))
	}
	if s.skip {
		return 0, nil
	}
	fractions := make([]float64, 0, len(pl.resources))
	var total float64
	for _, r := range pl.resources {
		alloc, req := allocatableAndRequested(r.Name, s.requests, nodeInfo, false)
		if alloc == 0 {
			continue
		}
		f := min(float64(req)/float64(alloc), 1)
		fractions = append(fractions, f)
		total += f
	}
	var std float64
	switch {
	case len(fractions) == 2:
		std = math.Abs((fractions[0] - fractions[1]) / 2)
	case len(fractions) > 2:
		mean := total / float64(len(fractions))
		var variance float64
		for _, f := range fractions {
			variance += (f - mean) * (f - mean)
		}
		std = math.Sqrt(variance / float64(len(fractions)))
	}
	return int64((1 - std) * float64(framework.MaxNodeScore)), nil
}

// ScoreExtensions returns nil: scores are already 0..100.
func (*BalancedAllocation) ScoreExtensions() framework.ScoreExtensions { return nil }
