package garbagecollector

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
)

var yes = true

func rsMeta(name string, uid types.UID, finalizers ...string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: uid, Finalizers: finalizers},
	}
}

func podOwnedBy(name string, owners ...*appsv1.ReplicaSet) *v1.Pod {
	p := &v1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)}}
	for _, o := range owners {
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: o.Name, UID: o.UID, Controller: &yes, BlockOwnerDeletion: &yes})
	}
	return p
}

func partial(obj runtime.Object) *metav1.PartialObjectMetadata {
	m := obj.(metav1.ObjectMetaAccessor).GetObjectMeta().(*metav1.ObjectMeta)
	return &metav1.PartialObjectMetadata{ObjectMeta: *m.DeepCopy()}
}

func newCollector(t *testing.T, objs ...runtime.Object) (*GarbageCollector, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	dyn := dynamicfake.NewSimpleDynamicClient(scheme.Scheme, objs...)
	// The fake tracker cannot apply strategic merge patches; the tests
	// check the patch sent.
	dyn.PrependReactor("patch", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod"}}, nil
	})
	gc := New(slog.New(slog.NewTextHandler(io.Discard, nil)), nil, nil, dyn)
	gc.kinds[schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}] = resourceInfo{gvr: appsv1.SchemeGroupVersion.WithResource("replicasets"), namespaced: true}
	gc.kinds[schema.GroupKind{Kind: "Pod"}] = resourceInfo{gvr: v1.SchemeGroupVersion.WithResource("pods"), namespaced: true}
	return gc, dyn
}

func TestAttemptToDelete(t *testing.T) {
	live := rsMeta("live", "uid-live")
	gone := rsMeta("gone", "uid-gone")
	deleting := rsMeta("deleting", "uid-deleting", metav1.FinalizerDeleteDependents)
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	tests := []struct {
		name     string
		objs     []runtime.Object
		item     runtime.Object
		wantVerb string
		wantIn   string
	}{
		{name: "owner gone: delete in the background", objs: []runtime.Object{podOwnedBy("p", gone)}, item: podOwnedBy("p", gone), wantVerb: "delete"},
		{name: "owner alive: nothing", objs: []runtime.Object{live, podOwnedBy("p", live)}, item: podOwnedBy("p", live)},
		{name: "one owner gone, one alive: drop the dangling reference", objs: []runtime.Object{live, podOwnedBy("p", live, gone)}, item: podOwnedBy("p", live, gone), wantVerb: "patch", wantIn: `"$patch":"delete","uid":"uid-gone"`},
		{name: "owner deleting in the foreground: delete", objs: []runtime.Object{deleting, podOwnedBy("p", deleting)}, item: podOwnedBy("p", deleting), wantVerb: "delete"},
		{name: "foreground owner without blocking dependents: drop its finalizer", objs: []runtime.Object{deleting}, item: deleting, wantVerb: "patch", wantIn: `"$deleteFromPrimitiveList/finalizers":["foregroundDeletion"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gc, dyn := newCollector(t, tt.objs...)
			for _, o := range tt.objs {
				kind := o.GetObjectKind().GroupVersionKind()
				gc.observe(kind.GroupVersion().String(), kind.Kind, partial(o))
			}
			kind := tt.item.GetObjectKind().GroupVersionKind()
			m := partial(tt.item)
			ref := objectRef{UID: m.UID, APIVersion: kind.GroupVersion().String(), Kind: kind.Kind, Namespace: m.Namespace, Name: m.Name}
			dyn.ClearActions()
			if err := gc.attemptToDeleteItem(context.Background(), ref); err != nil {
				t.Fatal(err)
			}
			var got []clienttesting.Action
			for _, a := range dyn.Actions() {
				if a.GetVerb() != "get" {
					got = append(got, a)
				}
			}
			if tt.wantVerb == "" {
				if len(got) != 0 {
					t.Fatalf("actions %v, want none", got)
				}
				return
			}
			if len(got) != 1 || got[0].GetVerb() != tt.wantVerb {
				t.Fatalf("actions %v, want one %s", got, tt.wantVerb)
			}
			if p, ok := got[0].(clienttesting.PatchAction); ok && !strings.Contains(string(p.GetPatch()), tt.wantIn) {
				t.Fatalf("patch %s, want it to contain %s", p.GetPatch(), tt.wantIn)
			}
		})
	}
}

func TestOrphan(t *testing.T) {
	owner := rsMeta("owner", "uid-owner", metav1.FinalizerOrphanDependents)
	now := metav1.Now()
	owner.DeletionTimestamp = &now
	pod := podOwnedBy("p", owner)
	gc, dyn := newCollector(t, owner, pod)
	gc.observe("apps/v1", "ReplicaSet", partial(owner))
	gc.observe("v1", "Pod", partial(pod))
	dyn.ClearActions()
	if err := gc.attemptToOrphanItem(context.Background(), objectRef{UID: owner.UID, APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "default", Name: "owner"}); err != nil {
		t.Fatal(err)
	}
	var patches []string
	for _, a := range dyn.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok {
			patches = append(patches, p.GetName()+" "+string(p.GetPatch()))
		}
	}
	if len(patches) != 2 || !strings.HasPrefix(patches[0], "p ") || !strings.Contains(patches[0], `"uid":"uid-owner"`) || !strings.Contains(patches[1], `"orphan"`) {
		t.Fatalf("patches %v, want the pod's reference dropped, then the orphan finalizer", patches)
	}
}

// TestVirtualOwnerIsLookedAtUntilObserved checks kubernetes#56121: an owner
// known only from its dependent's reference that exists is looked at again
// until its watch shows it, so that when it goes before its watch lists
// (no event for it ever comes) the dependent is still collected.
func TestVirtualOwnerIsLookedAtUntilObserved(t *testing.T) {
	owner := rsMeta("owner", "uid-owner")
	pod := podOwnedBy("p", owner)
	gc, dyn := newCollector(t, owner, pod)
	gc.observe("v1", "Pod", partial(pod))
	ownerRef := objectRef{UID: owner.UID, APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "default", Name: "owner"}
	if n := gc.attemptToDelete.Len(); n != 1 {
		t.Fatalf("the pod's unknown owner queued %d items, want 1", n)
	}
	ctx := context.Background()
	if err := gc.attemptToDeleteItem(ctx, ownerRef); !errors.Is(err, errNotObserved) {
		t.Fatalf("an existing owner its watch has not shown: %v, want it looked at again (errNotObserved)", err)
	}
	// It goes; its watch never shows it. The next look finds it gone and
	// the pod is collected.
	if err := dyn.Resource(appsv1.SchemeGroupVersion.WithResource("replicasets")).Namespace("default").Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := gc.attemptToDeleteItem(ctx, ownerRef); err != nil {
		t.Fatal(err)
	}
	podRef := objectRef{UID: pod.UID, APIVersion: "v1", Kind: "Pod", Namespace: "default", Name: "p"}
	gc.mu.Lock()
	_, ownerLeft := gc.nodes[owner.UID]
	gc.mu.Unlock()
	if ownerLeft {
		t.Fatal("the gone owner is still in the graph")
	}
	dyn.ClearActions()
	if err := gc.attemptToDeleteItem(ctx, podRef); err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for _, a := range dyn.Actions() {
		if a.GetVerb() == "delete" {
			deleted = append(deleted, a.(clienttesting.DeleteAction).GetName())
		}
	}
	if len(deleted) != 1 || deleted[0] != "p" {
		t.Fatalf("deletes %v, want the pod's", deleted)
	}
}
