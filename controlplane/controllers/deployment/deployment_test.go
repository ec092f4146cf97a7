package deployment

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllertest"
	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllerutil"
)

func newDeployment(replicas int32, surge, unavailable intstr.IntOrString) *appsv1.Deployment {
	limit, deadline := int32(1), int32(600)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "d-uid", Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Strategy: appsv1.DeploymentStrategy{
				Type:          appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable},
			},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox:2"}}},
			},
			RevisionHistoryLimit:    &limit,
			ProgressDeadlineSeconds: &deadline,
		},
	}
}

// oldRS is a ReplicaSet of d with another image, replicas all available.
func oldRS(d *appsv1.Deployment, name, image string, replicas int32, revision string, age time.Duration) *appsv1.ReplicaSet {
	t := d.Spec.Template.DeepCopy()
	t.Spec.Containers[0].Image = image
	t.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = name
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-" + name, Namespace: "default", UID: types.UID("uid-" + name),
			Labels:            t.Labels,
			Annotations:       map[string]string{RevisionAnnotation: revision, DesiredReplicasAnnotation: "4", MaxReplicasAnnotation: "5"},
			OwnerReferences:   []metav1.OwnerReference{*controllerutil.NewControllerRef(d, controllerKind)},
			CreationTimestamp: metav1.NewTime(time.Now().Add(-age)),
		},
		Spec:   appsv1.ReplicaSetSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: t.Labels}, Template: *t},
		Status: appsv1.ReplicaSetStatus{Replicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas},
	}
}

func newController(t *testing.T, objs ...runtime.Object) (*Controller, *fake.Clientset, *controllertest.Recorder) {
	t.Helper()
	client := controllertest.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	rec := &controllertest.Recorder{}
	c, err := New(slog.New(slog.NewTextHandler(io.Discard, nil)), client, rec, f.Apps().V1().Deployments(), f.Apps().V1().ReplicaSets(), f.Core().V1().Pods())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.Deployment:
			f.Apps().V1().Deployments().Informer().GetIndexer().Add(o)
		case *appsv1.ReplicaSet:
			f.Apps().V1().ReplicaSets().Informer().GetIndexer().Add(o)
		}
	}
	client.ClearActions()
	return c, client, rec
}

func TestNewDeploymentCreatesHashedReplicaSet(t *testing.T) {
	d := newDeployment(3, intstr.FromInt32(1), intstr.FromInt32(1))
	c, client, rec := newController(t, d)
	if err := c.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	var created *appsv1.ReplicaSet
	for _, a := range client.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "replicasets" {
			created = a.(clienttesting.CreateAction).GetObject().(*appsv1.ReplicaSet)
		}
	}
	if created == nil {
		t.Fatalf("no replica set created: %v", client.Actions())
	}
	hash := controllerutil.ComputeHash(&d.Spec.Template, nil)
	if created.Name != "web-"+hash || created.Spec.Selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] != hash || created.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash {
		t.Fatalf("replica set %s selector %v, want web-%s with the hash label", created.Name, created.Spec.Selector.MatchLabels, hash)
	}
	if *created.Spec.Replicas != 3 || created.Annotations[RevisionAnnotation] != "1" || created.Annotations[DesiredReplicasAnnotation] != "3" || created.Annotations[MaxReplicasAnnotation] != "4" {
		t.Fatalf("replicas %d annotations %v", *created.Spec.Replicas, created.Annotations)
	}
	if ref := metav1.GetControllerOf(created); ref == nil || ref.UID != d.UID {
		t.Fatalf("controller ref %v", ref)
	}
	want := "Normal ScalingReplicaSet Scaled up replica set web-" + hash + " from 0 to 3"
	if !slices.Contains(rec.Events(), want) {
		t.Fatalf("events %v, want %q", rec.Events(), want)
	}
}

func TestRollingUpdateStep(t *testing.T) {
	tests := []struct {
		name                string
		surge, unavailable  intstr.IntOrString
		wantNewRS           int32
		wantOldAfterScaleUp bool
	}{
		{name: "surge 1 unavailable 1", surge: intstr.FromInt32(1), unavailable: intstr.FromInt32(1), wantNewRS: 1},
		{name: "surge 25%", surge: intstr.FromString("25%"), unavailable: intstr.FromString("25%"), wantNewRS: 1},
		{name: "surge 0 only scales old down", surge: intstr.FromInt32(0), unavailable: intstr.FromInt32(1), wantNewRS: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDeployment(4, tt.surge, tt.unavailable)
			old := oldRS(d, "old", "busybox:1", 4, "1", time.Hour)
			c, client, _ := newController(t, d, old)
			if err := c.sync(context.Background(), "default/web"); err != nil {
				t.Fatal(err)
			}
			var newReplicas int32 = -1
			var oldScaledTo int32 = -1
			for _, a := range client.Actions() {
				switch {
				case a.GetVerb() == "create" && a.GetResource().Resource == "replicasets":
					newReplicas = *a.(clienttesting.CreateAction).GetObject().(*appsv1.ReplicaSet).Spec.Replicas
				case a.GetVerb() == "update" && a.GetResource().Resource == "replicasets" && a.GetSubresource() == "":
					rs := a.(clienttesting.UpdateAction).GetObject().(*appsv1.ReplicaSet)
					if rs.Name == old.Name {
						oldScaledTo = *rs.Spec.Replicas
					}
				}
			}
			if newReplicas != tt.wantNewRS {
				t.Fatalf("new replica set created with %d replicas, want %d", newReplicas, tt.wantNewRS)
			}
			if oldScaledTo != 3 {
				t.Fatalf("old replica set scaled to %d, want 3 (one unavailable allowed)", oldScaledTo)
			}
		})
	}
}

func TestCleanupKeepsRevisionHistoryLimit(t *testing.T) {
	d := newDeployment(2, intstr.FromInt32(1), intstr.FromInt32(0))
	cur := oldRS(d, "cur", "busybox:2", 2, "4", time.Minute)
	cur.Spec.Template = *d.Spec.Template.DeepCopy()
	cur.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = "cur"
	cur.Annotations[DesiredReplicasAnnotation] = "2"
	cur.Annotations[MaxReplicasAnnotation] = "3"
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2, ReadyReplicas: 2}
	objs := []runtime.Object{d, cur}
	for i, name := range []string{"aaa", "bbb", "ccc"} {
		objs = append(objs, oldRS(d, name, "busybox:0."+name, 0, string(rune('1'+i)), time.Duration(3-i)*time.Hour))
	}
	c, client, _ := newController(t, objs...)
	if err := c.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for _, a := range client.Actions() {
		if a.GetVerb() == "delete" {
			deleted = append(deleted, a.(clienttesting.DeleteAction).GetName())
		}
	}
	slices.Sort(deleted)
	if strings.Join(deleted, ",") != "web-aaa,web-bbb" {
		t.Fatalf("deleted %v, want the two oldest revisions web-aaa,web-bbb", deleted)
	}
}

func TestFenceposts(t *testing.T) {
	tests := []struct {
		surge, unavailable intstr.IntOrString
		replicas           int32
		wantSurge, wantU   int32
	}{
		{intstr.FromString("25%"), intstr.FromString("25%"), 10, 3, 2},
		{intstr.FromInt32(0), intstr.FromInt32(0), 5, 0, 1},
		{intstr.FromString("100%"), intstr.FromInt32(0), 3, 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.surge.String()+"/"+tt.unavailable.String(), func(t *testing.T) {
			s, u := resolveFenceposts(&tt.surge, &tt.unavailable, tt.replicas)
			if s != tt.wantSurge || u != tt.wantU {
				t.Fatalf("got surge %d unavailable %d, want %d %d", s, u, tt.wantSurge, tt.wantU)
			}
		})
	}
}
