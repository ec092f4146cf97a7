package noderesources

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

// Name is the plugin's name in profiles.
const Name = "NodeResourcesFit"

const (
	preFilterStateKey framework.StateKey = "PreFilter" + Name
	preScoreStateKey  framework.StateKey = "PreScore" + Name
)

// ResourceSpec is one resource the score looks at and its weight.
type ResourceSpec struct {
	Name   v1.ResourceName `json:"name"`
	Weight int64           `json:"weight"`
}

// DefaultScoringResources are kube-scheduler's defaults for the
// LeastAllocated strategy: cpu and memory, weight 1 each.
var DefaultScoringResources = []ResourceSpec{{Name: v1.ResourceCPU, Weight: 1}, {Name: v1.ResourceMemory, Weight: 1}}

// Fit filters nodes without room for the pod and scores the rest with its
// scoring strategy (LeastAllocated by default).
type Fit struct {
	resources []ResourceSpec
	scorer    scorer
}

// FitArgs are the plugin's arguments (NodeResourcesFitArgs).
type FitArgs struct {
	Kind            string           `json:"kind,omitempty"`
	APIVersion      string           `json:"apiVersion,omitempty"`
	ScoringStrategy *ScoringStrategy `json:"scoringStrategy,omitempty"`
}

var (
	_ framework.PreFilterPlugin = &Fit{}
	_ framework.FilterPlugin    = &Fit{}
	_ framework.PreScorePlugin  = &Fit{}
	_ framework.ScorePlugin     = &Fit{}
)

// NewFit builds the plugin from its NodeResourcesFitArgs: the scoring
// strategy (LeastAllocated, MostAllocated or RequestedToCapacityRatio) and
// its resources (default cpu and memory, weight 1 each).
func NewFit(_ context.Context, args runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	var a FitArgs
	if err := framework.DecodeArgs(args, &a); err != nil {
		return nil, err
	}
	strategy := ScoringStrategy{Type: LeastAllocated}
	if a.ScoringStrategy != nil {
		strategy = *a.ScoringStrategy
	}
	if len(strategy.Resources) == 0 {
		strategy.Resources = DefaultScoringResources
	}
	sc, err := newScorer(strategy)
	if err != nil {
		return nil, fmt.Errorf("failed to build %s: %w", Name, err)
	}
	return &Fit{resources: strategy.Resources, scorer: sc}, nil
}

// Name returns Name.
func (*Fit) Name() string { return Name }

// preFilterState is the pod's requests, computed once per cycle.
type preFilterState struct {
	requests *framework.Resource
}

// PreFilter computes the pod's requests for the Filter calls.
func (*Fit) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod) *framework.Status {
	state.Write(preFilterStateKey, &preFilterState{requests: framework.PodRequests(pod, false)})
	return nil
}

func podRequestsFromState(state *framework.CycleState, pod *v1.Pod) *framework.Resource {
	if data, err := state.Read(preFilterStateKey); err == nil {
		if s, ok := data.(*preFilterState); ok {
			return s.requests
		}
	}
	return framework.PodRequests(pod, false)
}

// InsufficientResource is one resource the node lacks for the pod.
type InsufficientResource struct {
	ResourceName v1.ResourceName
	// Reason is the human text, e.g. "Insufficient cpu".
	Reason    string
	Requested int64
	Used      int64
	Capacity  int64
	// Unresolvable is set when the pod asks for more than the node's whole
	// allocatable, so evicting pods could never make room.
	Unresolvable bool
}

// Filter rejects the node when any resource the pod requests exceeds
// allocatable minus what the node's pods already request, or when the node
// already runs its maximum number of pods. Every lacking resource is a
// reason of its own.
func (*Fit) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	if nodeInfo.Node() == nil {
		return framework.NewStatus(framework.Error, "node not found")
	}
	insufficient := Fits(podRequestsFromState(state, pod), nodeInfo)
	if len(insufficient) == 0 {
		return nil
	}
	code := framework.Unschedulable
	reasons := make([]string, 0, len(insufficient))
	for _, r := range insufficient {
		reasons = append(reasons, r.Reason)
		if r.Unresolvable {
			code = framework.UnschedulableAndUnresolvable
		}
	}
	return framework.NewStatus(code, reasons...)
}

// Fits lists what nodeInfo lacks to take a pod requesting req, in the
// order kube-scheduler checks: pods, cpu, memory, ephemeral-storage, then
// scalar resources.
func Fits(req *framework.Resource, nodeInfo *framework.NodeInfo) []InsufficientResource {
	var out []InsufficientResource
	alloc, used := nodeInfo.Allocatable, nodeInfo.Requested

	if len(nodeInfo.Pods)+1 > alloc.AllowedPodNumber {
		out = append(out, InsufficientResource{
			ResourceName: v1.ResourcePods, Reason: "Too many pods",
			Requested: 1, Used: int64(len(nodeInfo.Pods)), Capacity: int64(alloc.AllowedPodNumber),
		})
	}
	check := func(name v1.ResourceName, reason string, request, allocatable, requested int64) {
		if request > 0 && request > allocatable-requested {
			out = append(out, InsufficientResource{
				ResourceName: name, Reason: reason,
				Requested: request, Used: requested, Capacity: allocatable,
				Unresolvable: request > allocatable,
			})
		}
	}
	check(v1.ResourceCPU, "Insufficient cpu", req.MilliCPU, alloc.MilliCPU, used.MilliCPU)
	check(v1.ResourceMemory, "Insufficient memory", req.Memory, alloc.Memory, used.Memory)
	check(v1.ResourceEphemeralStorage, "Insufficient ephemeral-storage", req.EphemeralStorage, alloc.EphemeralStorage, used.EphemeralStorage)
	for _, name := range sortedScalarNames(req.ScalarResources) {
		check(name, fmt.Sprintf("Insufficient %v", name), req.ScalarResources[name], alloc.ScalarResources[name], used.ScalarResources[name])
	}
	return out
}
