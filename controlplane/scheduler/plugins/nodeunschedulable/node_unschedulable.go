package nodeunschedulable

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/helper"
)

const (
	// Name is the plugin's name in profiles.
	Name = "NodeUnschedulable"
	// ErrReasonUnschedulable is kube-scheduler's reason for a cordoned node.
	ErrReasonUnschedulable = "node(s) were unschedulable"
)

// NodeUnschedulable rejects cordoned nodes for pods that don't tolerate it.
type NodeUnschedulable struct{}

var _ framework.FilterPlugin = &NodeUnschedulable{}

// New builds the plugin; it takes no arguments.
func New(_ context.Context, _ runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	return &NodeUnschedulable{}, nil
}

// Name returns Name.
func (*NodeUnschedulable) Name() string { return Name }

// Filter rejects a node with spec.unschedulable unless the pod tolerates
// node.kubernetes.io/unschedulable:NoSchedule.
func (*NodeUnschedulable) Filter(ctx context.Context, _ *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	node := nodeInfo.Node()
	if node == nil {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) not found")
	}
	if !node.Spec.Unschedulable {
		return nil
	}
	if helper.TolerationsTolerateTaint(ctx, pod.Spec.Tolerations, &v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}) {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUnschedulable)
}
