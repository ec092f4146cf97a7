package disruption

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestStatefulSetIsAScaleSource(t *testing.T) {
	replicas := int32(3)
	ss := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default", UID: types.UID("uid-db")},
		Spec: appsv1.StatefulSetSpec{Replicas: &replicas}}
	ssKind := appsv1.SchemeGroupVersion.WithKind("StatefulSet")
	pdb := newPDB(maxUnavailable(intstr.FromInt32(1)))
	f := newFixture(t, pdb, newPod("db-0", ready, ownedBy(ss, ssKind)), newPod("db-1", ready, ownedBy(ss, ssKind)))

	// Without StatefulSets as a scale source the budget fails safe.
	if err := f.c.sync(context.Background(), "default/web"); err == nil {
		t.Fatal("sync succeeded without a StatefulSet lister")
	}

	f.c.AddStatefulSets(f.factory.Apps().V1().StatefulSets())
	if err := f.factory.Apps().V1().StatefulSets().Informer().GetIndexer().Add(ss); err != nil {
		t.Fatal(err)
	}
	if err := f.c.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if got, want := countsOf(f.pdb(t).Status), (counts{expected: 3, desired: 2, healthy: 2, allowed: 0}); got != want {
		t.Errorf("status counts = %+v, want %+v", got, want)
	}
}
