package node

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/glassplane/glassplane/controlplane/node/runtime"
)

// resizeState is what the worker last found about a pod's resize, for its
// status: a PodResizePending (the node cannot give what was asked) or
// PodResizeInProgress (with reason Error: actuating failed) condition;
// empty when there is nothing to say.
type resizeState struct {
	condition corev1.PodConditionType
	reason    string
	message   string
}

// resize actuates an in-place resize of a running container, as the
// kubelet does: when the cpu or memory the container's spec asks for is
// not what its cgroup was given, a resize the node has room for is
// applied, by restarting the container when its resize policy says
// RestartContainer for a changed resource, else through the runtime
// (Resizer) in place. It reports whether it restarted the container.
func (a *Agent) resize(ctx context.Context, w *podWorker, pod *corev1.Pod, spec runtime.PodSpec, c corev1.Container, latest runtime.ContainerStatus) bool {
	applied, known := w.applied[latest.ID]
	if !known {
		// A container started before this worker (the agent restarted):
		// it runs with what its spec said then, taken to be the spec's.
		w.applied[latest.ID] = *c.Resources.DeepCopy()
		return false
	}
	if sameCPUMemory(applied, c.Resources) {
		return false
	}
	if msg := a.infeasible(pod); msg != "" {
		w.resize = resizeState{corev1.PodResizePending, corev1.PodReasonInfeasible, msg}
		return false
	}
	if needsRestart(c, applied) {
		a.recorder.Eventf(containerRef(pod, c.Name), corev1.EventTypeNormal, "Killing", "Container %s resize requires restart", c.Name)
		grace := time.Duration(0)
		if pod.Spec.TerminationGracePeriodSeconds != nil {
			grace = time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
		}
		if err := a.cfg.Runtime.StopContainer(ctx, latest.ID, grace); err != nil {
			w.resize = resizeState{corev1.PodResizeInProgress, corev1.PodReasonError, err.Error()}
			return false
		}
		w.resize = resizeState{}
		a.startContainer(ctx, w, pod, spec, c, latest.Attempt+1)
		return true
	}
	r, ok := a.cfg.Runtime.(runtime.Resizer)
	if !ok {
		w.resize = resizeState{corev1.PodResizeInProgress, corev1.PodReasonError, "the container runtime cannot resize containers in place"}
		return false
	}
	if err := r.UpdateContainerResources(ctx, latest.ID, resourcesOf(c)); err != nil {
		w.resize = resizeState{corev1.PodResizeInProgress, corev1.PodReasonError, err.Error()}
		return false
	}
	w.applied[latest.ID] = *c.Resources.DeepCopy()
	w.resize = resizeState{}
	a.recorder.Eventf(podRef(pod), corev1.EventTypeNormal, "ResizeCompleted", "Pod resize completed: container %s", c.Name)
	return false
}

// infeasible says why the node can never give the pod what its containers
// now ask for (more cpu or memory than it has allocatable), as the
// kubelet's resize admission words it; "" when it can.
func (a *Agent) infeasible(pod *corev1.Pod) string {
	alloc := a.allocatable()
	var cpu, mem int64
	for _, c := range pod.Spec.Containers {
		cpu += c.Resources.Requests.Cpu().MilliValue()
		mem += c.Resources.Requests.Memory().Value()
	}
	if have := alloc.Cpu().MilliValue(); cpu > have {
		return fmt.Sprintf("Node didn't have enough capacity: cpu, requested: %d, capacity: %d", cpu, have)
	}
	if have := alloc.Memory().Value(); mem > have {
		return fmt.Sprintf("Node didn't have enough capacity: memory, requested: %d, capacity: %d", mem, have)
	}
	return ""
}

// needsRestart tells whether c's resize policy asks for a restart for a
// resource whose request or limit changed from applied.
func needsRestart(c corev1.Container, applied corev1.ResourceRequirements) bool {
	for _, p := range c.ResizePolicy {
		if p.RestartPolicy != corev1.RestartContainer {
			continue
		}
		if !sameQuantity(c.Resources.Requests, applied.Requests, p.ResourceName) || !sameQuantity(c.Resources.Limits, applied.Limits, p.ResourceName) {
			return true
		}
	}
	return false
}

func sameCPUMemory(x, y corev1.ResourceRequirements) bool {
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if !sameQuantity(x.Requests, y.Requests, name) || !sameQuantity(x.Limits, y.Limits, name) {
			return false
		}
	}
	return true
}

func sameQuantity(x, y corev1.ResourceList, name corev1.ResourceName) bool {
	qx, okx := x[name]
	qy, oky := y[name]
	return okx == oky && qx.Cmp(qy) == 0
}

// resourcesOf is what c's cgroup gets from its spec.
func resourcesOf(c corev1.Container) runtime.Resources {
	var r runtime.Resources
	if q, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
		r.CPULimitMillis = q.MilliValue()
	}
	if q, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
		r.CPURequestMillis = q.MilliValue()
	}
	if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		r.MemoryLimitBytes = q.Value()
	}
	return r
}

// statusResources fills a container status's allocatedResources (the
// requests the node admitted) and, for a running container, resources
// (what its cgroup was given), as the kubelet reports them.
func statusResources(w *podWorker, cs *corev1.ContainerStatus, c corev1.Container, id string) {
	applied, ok := w.applied[id]
	if !ok {
		applied = c.Resources
	}
	if len(applied.Requests) > 0 {
		cs.AllocatedResources = applied.Requests.DeepCopy()
	}
	if cs.State.Running != nil {
		cs.Resources = &corev1.ResourceRequirements{}
		if len(applied.Requests) > 0 {
			cs.Resources.Requests = applied.Requests.DeepCopy()
		}
		if len(applied.Limits) > 0 {
			cs.Resources.Limits = applied.Limits.DeepCopy()
		}
	}
}

// resizeConditions are the pod's resize conditions from what the worker
// last found, as the kubelet sets them: none once a resize is done.
func resizeConditions(w *podWorker, pod *corev1.Pod) []corev1.PodCondition {
	if w.resize.condition == "" {
		return nil
	}
	return []corev1.PodCondition{{Type: w.resize.condition, Status: corev1.ConditionTrue, Reason: w.resize.reason, Message: w.resize.message, ObservedGeneration: pod.Generation}}
}

// withoutResizeConditions drops the resize conditions from conditions.
func withoutResizeConditions(conditions []corev1.PodCondition) []corev1.PodCondition {
	out := conditions[:0:0]
	for _, c := range conditions {
		if c.Type != corev1.PodResizePending && c.Type != corev1.PodResizeInProgress {
			out = append(out, c)
		}
	}
	return out
}
