package tainttoleration

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/helper"
)

const (
	// Name is the plugin's name in profiles.
	Name = "TaintToleration"
	// ErrReasonNotMatch is kube-scheduler's reason for an untolerated taint.
	ErrReasonNotMatch = "node(s) had untolerated taint(s)"

	preScoreStateKey framework.StateKey = "PreScore" + Name
)

// TaintToleration filters and scores nodes by their taints.
type TaintToleration struct{}

var (
	_ framework.FilterPlugin   = &TaintToleration{}
	_ framework.PreScorePlugin = &TaintToleration{}
	_ framework.ScorePlugin    = &TaintToleration{}
)

// New builds the plugin; it takes no arguments.
func New(_ context.Context, _ runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	return &TaintToleration{}, nil
}

// Name returns Name.
func (*TaintToleration) Name() string { return Name }

// Filter rejects the node if it has a NoSchedule or NoExecute taint that
// no toleration of the pod tolerates.
func (*TaintToleration) Filter(ctx context.Context, _ *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	node := nodeInfo.Node()
	if node == nil {
		return framework.NewStatus(framework.Error, "invalid nodeInfo")
	}
	_, untolerated := helper.FindMatchingUntoleratedTaint(ctx, node.Spec.Taints, pod.Spec.Tolerations, func(t *v1.Taint) bool {
		return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
	})
	if !untolerated {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNotMatch)
}

// preScoreState holds the pod's tolerations that can match PreferNoSchedule.
type preScoreState struct {
	tolerationsPreferNoSchedule []v1.Toleration
}

// PreScore keeps the tolerations with effect PreferNoSchedule or none.
func (*TaintToleration) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	var ts []v1.Toleration
	for _, t := range pod.Spec.Tolerations {
		if t.Effect == "" || t.Effect == v1.TaintEffectPreferNoSchedule {
			ts = append(ts, t)
		}
	}
	state.Write(preScoreStateKey, &preScoreState{tolerationsPreferNoSchedule: ts})
	return nil
}

// Score counts the node's PreferNoSchedule taints the pod doesn't tolerate;
// NormalizeScore turns fewer into better.
func (*TaintToleration) Score(ctx context.Context, state *framework.CycleState, _ *v1.Pod, nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	node := nodeInfo.Node()
	if node == nil {
		return 0, framework.NewStatus(framework.Error, "invalid nodeInfo")
	}
	data, err := state.Read(preScoreStateKey)
	if err != nil {
		return 0, framework.AsStatus(fmt.Errorf("failed to read %q from cycle state: %w", preScoreStateKey, err))
	}
	s, ok := data.(*preScoreState)
	if !ok {
		return 0, framework.NewStatus(framework.Error, fmt.Sprintf("%T is not a tainttoleration.preScoreState", data))
	}
	var count int64
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Effect == v1.TaintEffectPreferNoSchedule && !helper.TolerationsTolerateTaint(ctx, s.tolerationsPreferNoSchedule, t) {
			count++
		}
	}
	return count, nil
}

// ScoreExtensions returns the plugin itself.
func (pl *TaintToleration) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore maps the counts onto 0..100 reversed: no untolerated
// PreferNoSchedule taint scores 100.
func (*TaintToleration) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores framework.NodeScoreList) *framework.Status {
	return helper.DefaultNormalizeScore(framework.MaxNodeScore, true, scores)
}
