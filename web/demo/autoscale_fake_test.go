package demo

import (
	"fmt"
	"math"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/glassplane/glassplane/controlplane/usage"
)

var hpasResource = autoscalingv2.SchemeGroupVersion.WithResource("horizontalpodautoscalers")

// playAutoscaling makes c play a simulated node's usage and the
// horizontal-pod-autoscaler controller: its node is simulated, and an HPA
// made or a Deployment changed rescales the Deployment at once to what
// its template's usage annotation asks for against the CPU request, with
// the controller's SuccessfulRescale Event.
func (c *fakeCluster) playAutoscaling() {
	if obj, err := c.tracker.Get(nodesResource, "", simNode); err == nil {
		n := obj.(*corev1.Node)
		n.Labels[runtimeLabel] = simulatedRuntime
		_ = c.tracker.Update(nodesResource, n, "")
	}
	c.PrependReactor("create", "horizontalpodautoscalers", func(a clienttesting.Action) (bool, runtime.Object, error) {
		h := a.(clienttesting.CreateAction).GetObject().(*autoscalingv2.HorizontalPodAutoscaler)
		if h.UID == "" {
			h.UID = uuid.NewUUID()
		}
		if err := c.tracker.Create(hpasResource, h, a.GetNamespace()); err != nil {
			return true, nil, err
		}
		c.rescale(h)
		return true, h, nil
	})
	c.PrependReactor("update", "deployments", func(a clienttesting.Action) (bool, runtime.Object, error) {
		d := a.(clienttesting.UpdateAction).GetObject().(*appsv1.Deployment)
		if err := c.tracker.Update(deploymentsResource, d, a.GetNamespace()); err != nil {
			return true, nil, err
		}
		list, err := c.tracker.List(hpasResource, autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"), a.GetNamespace())
		if err == nil {
			for i := range list.(*autoscalingv2.HorizontalPodAutoscalerList).Items {
				if h := &list.(*autoscalingv2.HorizontalPodAutoscalerList).Items[i]; h.Spec.ScaleTargetRef.Name == d.Name {
					c.rescale(h)
				}
			}
		}
		return true, d, nil
	})
}

// rescale sets h's Deployment to the replicas its pods' CPU asks for.
func (c *fakeCluster) rescale(h *autoscalingv2.HorizontalPodAutoscaler) {
	obj, err := c.tracker.Get(deploymentsResource, h.Namespace, h.Spec.ScaleTargetRef.Name)
	if err != nil {
		return
	}
	d := obj.(*appsv1.Deployment).DeepCopy()
	u, err := usage.ParseSimulated(d.Spec.Template.Annotations[usage.AnnotationSimulatedUsage])
	if err != nil {
		return
	}
	request := d.Spec.Template.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()
	utilization := int32(u.CPU.MilliValue() * 100 / request)
	current := ptr.Deref(d.Spec.Replicas, 1)
	target := *h.Spec.Metrics[0].Resource.Target.AverageUtilization
	desired := min(max(int32(math.Ceil(float64(current)*float64(utilization)/float64(target))), ptr.Deref(h.Spec.MinReplicas, 1)), h.Spec.MaxReplicas)
	if desired == current {
		return
	}
	reason := "cpu resource utilization (percentage of request) above target"
	if desired < current {
		reason = "All metrics below target"
	}
	d.Spec.Replicas = &desired
	_ = c.tracker.Update(deploymentsResource, d, h.Namespace)
	_ = c.tracker.Create(eventsResource, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: h.Name + "." + string(uuid.NewUUID()), Namespace: h.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "HorizontalPodAutoscaler", Namespace: h.Namespace, Name: h.Name, UID: h.UID},
		Reason:         "SuccessfulRescale", Message: fmt.Sprintf("New size: %d; reason: %s", desired, reason),
	}, h.Namespace)
}
