package framework

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// PreBindPlugin prepares what a pod needs on its chosen node before the
// pod is bound to it (VolumeBinding binds and provisions its volumes). It
// runs in the binding goroutine; a status that is not Success fails the
// scheduling attempt.
type PreBindPlugin interface {
	Plugin
	PreBind(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status
}

// RunPreBindPlugins runs every PreBind plugin in order and returns the
// first status that is not Success, tagged with the plugin's name.
func (f *Framework) RunPreBindPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status {
	for _, p := range f.preBind {
		if s := p.PreBind(ctx, state, pod, nodeName); !s.IsSuccess() {
			return s.WithPlugin(p.Name())
		}
	}
	return nil
}
