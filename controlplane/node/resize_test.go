package node

import (
	"context"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/node/runtime"
)

// recordingResizer is the simulated runtime, noting each in-place update.
type recordingResizer struct {
	*runtime.Simulated
	mu      sync.Mutex
	updates []runtime.Resources
}

func (r *recordingResizer) UpdateContainerResources(ctx context.Context, id string, res runtime.Resources) error {
	r.mu.Lock()
	r.updates = append(r.updates, res)
	r.mu.Unlock()
	return r.Simulated.UpdateContainerResources(ctx, id, res)
}

func (r *recordingResizer) seen() []runtime.Resources {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]runtime.Resources(nil), r.updates...)
}

func requirements(req, lim map[corev1.ResourceName]string) corev1.ResourceRequirements {
	list := func(m map[corev1.ResourceName]string) corev1.ResourceList {
		if m == nil {
			return nil
		}
		out := corev1.ResourceList{}
		for k, v := range m {
			out[k] = resource.MustParse(v)
		}
		return out
	}
	return corev1.ResourceRequirements{Requests: list(req), Limits: list(lim)}
}

// TestPodResize: a running pod's containers report the resources they run
// with; a resize is applied in place through the runtime for a container
// whose policy needs no restart and by a restart (restartCount 1) for one
// whose memory policy is RestartContainer; a resize asking more cpu than
// the node has is left pending as Infeasible, with the resources as they
// were.
func TestPodResize(t *testing.T) {
	rt := &recordingResizer{Simulated: simRuntime()}
	h := startAgent(t, rt, nil)
	pod := newPod("web", corev1.RestartPolicyAlways, "nginx", "nginx")
	pod.Generation = 1
	pod.Spec.Containers[0].Resources = requirements(map[corev1.ResourceName]string{"cpu": "100m", "memory": "64Mi"}, map[corev1.ResourceName]string{"cpu": "200m"})
	pod.Spec.Containers[1].Resources = requirements(map[corev1.ResourceName]string{"memory": "64Mi"}, map[corev1.ResourceName]string{"memory": "128Mi"})
	pod.Spec.Containers[1].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	h.createPod(t, pod)
	statusOf := func(p *corev1.Pod) string {
		return fmt.Sprintf("gen %d observed %d statuses %+v conditions %+v", p.Generation, p.Status.ObservedGeneration, p.Status.ContainerStatuses, p.Status.Conditions)
	}
	reports := func(p *corev1.Pod, i int, want corev1.ResourceRequirements) bool {
		if len(p.Status.ContainerStatuses) <= i {
			return false
		}
		cs := p.Status.ContainerStatuses[i]
		return cs.State.Running != nil && cs.Resources != nil && sameCPUMemory(*cs.Resources, want) &&
			sameQuantity(cs.AllocatedResources, want.Requests, corev1.ResourceCPU) && sameQuantity(cs.AllocatedResources, want.Requests, corev1.ResourceMemory)
	}
	eventually(t, "both containers running with their resources reported", func() (bool, string) {
		p := h.getPod(t, "web")
		return reports(p, 0, pod.Spec.Containers[0].Resources) && reports(p, 1, pod.Spec.Containers[1].Resources), statusOf(p)
	})
	if got := h.getPod(t, "web").Status.ContainerStatuses[0].Resources.Limits; got.Memory().Value() != 0 {
		t.Errorf("container c0 has no memory limit, its status reports %v", got)
	}

	cur := h.getPod(t, "web")
	cur.Generation = 2
	cur.Spec.Containers[0].Resources = requirements(map[corev1.ResourceName]string{"cpu": "150m", "memory": "64Mi"}, map[corev1.ResourceName]string{"cpu": "300m"})
	cur.Spec.Containers[1].Resources = requirements(map[corev1.ResourceName]string{"memory": "64Mi"}, map[corev1.ResourceName]string{"memory": "256Mi"})
	if _, err := h.client.CoreV1().Pods("default").Update(context.Background(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the resize actuated: c0 in place, c1 restarted", func() (bool, string) {
		p := h.getPod(t, "web")
		ok := p.Status.ObservedGeneration == 2 && reports(p, 0, cur.Spec.Containers[0].Resources) && reports(p, 1, cur.Spec.Containers[1].Resources) &&
			p.Status.ContainerStatuses[0].RestartCount == 0 && p.Status.ContainerStatuses[1].RestartCount == 1 && len(resizeConditionsOf(p)) == 0
		return ok, statusOf(p)
	})
	updates := rt.seen()
	if len(updates) != 1 || updates[0] != (runtime.Resources{CPURequestMillis: 150, CPULimitMillis: 300}) {
		t.Errorf("in-place updates %+v, want one for c0 (150m request, 300m limit)", updates)
	}

	cur = h.getPod(t, "web")
	cur.Generation = 3
	cur.Spec.Containers[0].Resources = requirements(map[corev1.ResourceName]string{"cpu": "100000", "memory": "64Mi"}, map[corev1.ResourceName]string{"cpu": "100000"})
	if _, err := h.client.CoreV1().Pods("default").Update(context.Background(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "an infeasible resize left pending", func() (bool, string) {
		p := h.getPod(t, "web")
		conds := resizeConditionsOf(p)
		ok := len(conds) == 1 && conds[0].Type == corev1.PodResizePending && conds[0].Reason == corev1.PodReasonInfeasible &&
			conds[0].Message != "" && reports(p, 0, requirements(map[corev1.ResourceName]string{"cpu": "150m", "memory": "64Mi"}, map[corev1.ResourceName]string{"cpu": "300m"}))
		return ok, statusOf(p)
	})
	if n := len(rt.seen()); n != 1 {
		t.Errorf("an infeasible resize reached the runtime: %d updates", n)
	}
}

func resizeConditionsOf(p *corev1.Pod) []corev1.PodCondition {
	var out []corev1.PodCondition
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress {
			out = append(out, c)
		}
	}
	return out
}
