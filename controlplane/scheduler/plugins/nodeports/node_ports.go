package nodeports

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

const (
	// Name is the plugin's name in profiles.
	Name = "NodePorts"
	// ErrReason is kube-scheduler's reason for a node whose host ports are
	// taken.
	ErrReason = "node(s) didn't have free ports for the requested pod ports"

	preFilterStateKey framework.StateKey = "PreFilter" + Name
)

// NodePorts rejects nodes where the pod's host ports are already in use.
type NodePorts struct{}

var (
	_ framework.PreFilterPlugin = &NodePorts{}
	_ framework.FilterPlugin    = &NodePorts{}
)

// New builds the plugin; it takes no arguments.
func New(_ context.Context, _ runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	return &NodePorts{}, nil
}

// Name returns Name.
func (*NodePorts) Name() string { return Name }

// preFilterState is the host ports the pod asks for.
type preFilterState []v1.ContainerPort

// PreFilter collects the pod's host ports once for every Filter.
func (*NodePorts) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod) *framework.Status {
	state.Write(preFilterStateKey, preFilterState(hostPorts(pod)))
	return nil
}

// Filter rejects the node if any host port the pod asks for conflicts with
// one a pod on the node already uses.
func (*NodePorts) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	var want []v1.ContainerPort
	if data, err := state.Read(preFilterStateKey); err == nil {
		s, ok := data.(preFilterState)
		if !ok {
			return framework.NewStatus(framework.Error, fmt.Sprintf("%T is not a nodeports.preFilterState", data))
		}
		want = s
	} else {
		want = hostPorts(pod)
	}
	if len(want) == 0 {
		return nil
	}
	used := hostPortInfo{}
	for _, pi := range nodeInfo.Pods {
		for _, p := range hostPorts(pi.Pod) {
			used.add(p.HostIP, string(p.Protocol), p.HostPort)
		}
	}
	for _, p := range want {
		if used.conflicts(p.HostIP, string(p.Protocol), p.HostPort) {
			return framework.NewStatus(framework.Unschedulable, ErrReason)
		}
	}
	return nil
}
