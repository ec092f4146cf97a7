package apiserver

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

func benchDeployment() *appsv1.Deployment {
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}}},
			},
		},
	}
	return d
}

func deploymentsResource(b *testing.B) *resource {
	for _, res := range newResources() {
		if res.GVK == appsv1.SchemeGroupVersion.WithKind("Deployment") {
			return res
		}
	}
	b.Fatal("no deployments resource")
	return nil
}

// BenchmarkFieldManagerUpdate is the cost managedFields add to an update
// of a Deployment: the field manager's work on one update that changes an
// annotation (what the write path runs besides decoding, admission and
// etcd).
func BenchmarkFieldManagerUpdate(b *testing.B) {
	res := deploymentsResource(b)
	fm, err := fieldManager(res, "", res.GVK)
	if err != nil {
		b.Fatal(err)
	}
	live := fm.UpdateNoErrors(&appsv1.Deployment{TypeMeta: benchDeployment().TypeMeta}, benchDeployment(), "creator")
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		next := live.DeepCopyObject().(*appsv1.Deployment)
		next.Annotations = map[string]string{"rev": fmt.Sprint(i)}
		live = fm.UpdateNoErrors(live, next, "updater")
	}
}

// BenchmarkFieldManagerApply is the field manager's work on one
// server-side apply of a Deployment that changes an annotation.
func BenchmarkFieldManagerApply(b *testing.B) {
	res := deploymentsResource(b)
	fm, err := fieldManager(res, "", res.GVK)
	if err != nil {
		b.Fatal(err)
	}
	live := fm.UpdateNoErrors(&appsv1.Deployment{TypeMeta: benchDeployment().TypeMeta}, benchDeployment(), "creator")
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		d := benchDeployment()
		d.Annotations = map[string]string{"rev": fmt.Sprint(i)}
		patch := &unstructured.Unstructured{}
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
		if err != nil {
			b.Fatal(err)
		}
		patch.Object = obj
		if live, err = fm.Apply(live, patch, "applier", true); err != nil {
			b.Fatal(err)
		}
	}
}
