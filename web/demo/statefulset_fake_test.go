package demo

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

var statefulSetsResource = appsv1.SchemeGroupVersion.WithResource("statefulsets")

// playStatefulSets makes c play the statefulset controller: a created set
// gets its pods <set>-<ordinal> at once, running and counted ready; a
// deleted pod of a set is made again under its name; a deleted set takes
// its pods along.
func (c *fakeCluster) playStatefulSets() {
	c.PrependReactor("create", "statefulsets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		s := a.(clienttesting.CreateAction).GetObject().(*appsv1.StatefulSet)
		n := ptr.Deref(s.Spec.Replicas, 1)
		s.UID = uuid.NewUUID()
		s.Status = appsv1.StatefulSetStatus{Replicas: n, ReadyReplicas: n, AvailableReplicas: n, CurrentReplicas: n, UpdatedReplicas: n}
		for i := range n {
			c.makeStatefulPod(a.GetNamespace(), s, int(i))
		}
		return false, nil, nil
	})
	c.PrependReactor("delete", "statefulsets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if obj, err := c.tracker.Get(statefulSetsResource, a.GetNamespace(), a.(clienttesting.DeleteAction).GetName()); err == nil {
			for _, p := range c.pods(func(p *corev1.Pod) bool { return metav1.IsControlledBy(p, obj.(*appsv1.StatefulSet)) }) {
				_ = c.tracker.Delete(podsResource, p.Namespace, p.Name)
			}
		}
		return false, nil, nil
	})
	c.PrependReactor("delete", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		ns, name := a.GetNamespace(), a.(clienttesting.DeleteAction).GetName()
		obj, err := c.tracker.Get(podsResource, ns, name)
		if err != nil {
			return false, nil, nil
		}
		ref := metav1.GetControllerOf(obj.(*corev1.Pod))
		if ref == nil || ref.Kind != "StatefulSet" {
			return false, nil, nil
		}
		set, err := c.tracker.Get(statefulSetsResource, ns, ref.Name)
		if err != nil {
			return false, nil, nil
		}
		if err := c.tracker.Delete(podsResource, ns, name); err != nil {
			return true, nil, err
		}
		var ordinal int
		fmt.Sscanf(obj.(*corev1.Pod).Labels[appsv1.PodIndexLabel], "%d", &ordinal)
		c.makeStatefulPod(ns, set.(*appsv1.StatefulSet), ordinal)
		return true, nil, nil
	})
}

func (c *fakeCluster) makeStatefulPod(ns string, s *appsv1.StatefulSet, ordinal int) {
	name := fmt.Sprintf("%s-%d", s.Name, ordinal)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{}}, Spec: *s.Spec.Template.Spec.DeepCopy()}
	for k, v := range s.Spec.Template.Labels {
		p.Labels[k] = v
	}
	p.Labels[appsv1.StatefulSetPodNameLabel] = name
	p.Labels[appsv1.PodIndexLabel] = fmt.Sprint(ordinal)
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(s, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}
	p.Spec.Hostname, p.Spec.Subdomain = name, s.Spec.ServiceName
	p.UID = uuid.NewUUID()
	c.schedule(p)
	_ = c.tracker.Create(podsResource, p, ns)
}
