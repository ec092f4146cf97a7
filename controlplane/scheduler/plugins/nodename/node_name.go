package nodename

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

const (
	// Name is the plugin's name in profiles.
	Name = "NodeName"
	// ErrReason is kube-scheduler's reason for a name mismatch.
	ErrReason = "node(s) didn't match the requested node name"
)

// NodeName rejects nodes other than the one in spec.nodeName.
type NodeName struct{}

var _ framework.FilterPlugin = &NodeName{}

// New builds the plugin; it takes no arguments.
func New(_ context.Context, _ runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	return &NodeName{}, nil
}

// Name returns Name.
func (*NodeName) Name() string { return Name }

// Filter passes every node when spec.nodeName is empty, else only that one.
func (*NodeName) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	if nodeInfo.Node() == nil {
		return framework.NewStatus(framework.Error, "node not found")
	}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != nodeInfo.Node().Name {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReason)
	}
	return nil
}
