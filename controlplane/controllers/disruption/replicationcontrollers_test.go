package disruption

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestReplicationControllerIsAScaleSource(t *testing.T) {
	replicas := int32(3)
	rc := &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: types.UID("uid-rc")},
		Spec: corev1.ReplicationControllerSpec{Replicas: &replicas}}
	rcKind := corev1.SchemeGroupVersion.WithKind("ReplicationController")
	pdb := newPDB(maxUnavailable(intstr.FromInt32(1)))
	f := newFixture(t, pdb, newPod("web-a", ready, ownedBy(rc, rcKind)), newPod("web-b", ready, ownedBy(rc, rcKind)))

	if err := f.c.sync(context.Background(), "default/web"); err == nil {
		t.Fatal("sync succeeded without an RC lister")
	}
	f.c.AddReplicationControllers(f.factory.Core().V1().ReplicationControllers())
	if err := f.factory.Core().V1().ReplicationControllers().Informer().GetIndexer().Add(rc); err != nil {
		t.Fatal(err)
	}
	if err := f.c.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if got, want := countsOf(f.pdb(t).Status), (counts{expected: 3, desired: 2, healthy: 2, allowed: 0}); got != want {
		t.Errorf("status counts = %+v, want %+v", got, want)
	}
}
