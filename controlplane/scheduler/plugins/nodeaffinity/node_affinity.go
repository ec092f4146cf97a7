package nodeaffinity

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/helper"
)

const (
	// Name is the plugin's name in profiles.
	Name = "NodeAffinity"
	// ErrReasonPod is kube-scheduler's reason for a node that fails the
	// pod's nodeSelector or required node affinity.
	ErrReasonPod = "node(s) didn't match Pod's node affinity/selector"
	// ErrReasonConflict is kube-scheduler's reason when every required term
	// pins the pod to node names that contradict each other.
	ErrReasonConflict = "pod affinity terms conflict"

	preFilterStateKey framework.StateKey = "PreFilter" + Name
	preScoreStateKey  framework.StateKey = "PreScore" + Name
)

// NodeAffinity filters nodes by the pod's nodeSelector and required node
// affinity and scores them by its preferred node affinity.
type NodeAffinity struct{}

var (
	_ framework.PreFilterPlugin = &NodeAffinity{}
	_ framework.FilterPlugin    = &NodeAffinity{}
	_ framework.PreScorePlugin  = &NodeAffinity{}
	_ framework.ScorePlugin     = &NodeAffinity{}
)

// New builds the plugin; it takes no arguments.
func New(_ context.Context, _ runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	return &NodeAffinity{}, nil
}

// Name returns Name.
func (*NodeAffinity) Name() string { return Name }

// preFilterState is the pod's parsed required node constraints.
type preFilterState struct {
	required requiredNodeAffinity
}

// PreFilter parses the pod's nodeSelector and required node affinity once
// for every Filter, and rejects the pod outright when each required term
// names node names (matchFields metadata.name In) that no node can have.
func (*NodeAffinity) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod) *framework.Status {
	state.Write(preFilterStateKey, &preFilterState{required: getRequiredNodeAffinity(pod)})
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	var nodeNames sets.Set[string]
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		var termNodeNames sets.Set[string]
		for _, r := range term.MatchFields {
			if r.Key != metav1.ObjectNameField || r.Operator != v1.NodeSelectorOpIn {
				continue
			}
			if termNodeNames == nil {
				termNodeNames = sets.New(r.Values...)
			} else {
				termNodeNames = termNodeNames.Intersection(sets.New(r.Values...))
			}
		}
		if termNodeNames == nil {
			return nil
		}
		nodeNames = nodeNames.Union(termNodeNames)
	}
	if nodeNames != nil && nodeNames.Len() == 0 {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonConflict)
	}
	return nil
}

// Filter rejects the node unless its labels match the pod's nodeSelector
// and one of the required node affinity terms. Terms that fail to parse
// match nothing, as in kube-scheduler.
func (*NodeAffinity) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	node := nodeInfo.Node()
	if node == nil {
		return framework.NewStatus(framework.Error, "invalid nodeInfo")
	}
	var required requiredNodeAffinity
	if data, err := state.Read(preFilterStateKey); err == nil {
		s, ok := data.(*preFilterState)
		if !ok {
			return framework.NewStatus(framework.Error, fmt.Sprintf("%T is not a nodeaffinity.preFilterState", data))
		}
		required = s.required
	} else {
		required = getRequiredNodeAffinity(pod)
	}
	if ok, _ := required.match(node); !ok {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonPod)
	}
	return nil
}

// preScoreState is the pod's parsed preferred node affinity terms.
type preScoreState struct {
	preferred preferredSchedulingTerms
}

// PreScore parses the pod's preferred node affinity terms; a term that
// fails to parse is an error.
func (*NodeAffinity) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	preferred, err := getPreferredSchedulingTerms(pod)
	if err != nil {
		return framework.AsStatus(err)
	}
	state.Write(preScoreStateKey, &preScoreState{preferred: preferred})
	return nil
}

// Score sums the weights of the preferred terms the node matches;
// NormalizeScore scales the highest sum to 100.
func (*NodeAffinity) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	node := nodeInfo.Node()
	if node == nil {
		return 0, framework.NewStatus(framework.Error, "invalid nodeInfo")
	}
	var preferred preferredSchedulingTerms
	if data, err := state.Read(preScoreStateKey); err == nil {
		s, ok := data.(*preScoreState)
		if !ok {
			return 0, framework.NewStatus(framework.Error, fmt.Sprintf("%T is not a nodeaffinity.preScoreState", data))
		}
		preferred = s.preferred
	} else {
		preferred, err = getPreferredSchedulingTerms(pod)
		if err != nil {
			return 0, framework.AsStatus(err)
		}
	}
	return preferred.score(node), nil
}

// ScoreExtensions returns the plugin itself.
func (pl *NodeAffinity) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore scales the sums so the best node scores 100.
func (*NodeAffinity) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores framework.NodeScoreList) *framework.Status {
	return helper.DefaultNormalizeScore(framework.MaxNodeScore, false, scores)
}

func getPreferredSchedulingTerms(pod *v1.Pod) (preferredSchedulingTerms, error) {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		return nil, nil
	}
	terms, err := newPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	if err != nil {
		return nil, fmt.Errorf("failed to parse preferred node affinity of pod %q: %w", pod.Namespace+"/"+pod.Name, err)
	}
	return terms, nil
}
