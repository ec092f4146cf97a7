package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
)

// harness is the controller on a fake clientset whose informer caches the
// test fills by hand, so that a test decides what the cache has seen.
type harness struct {
	c       *Controller
	client  *fake.Clientset
	factory informers.SharedInformerFactory
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	client := fake.NewClientset()
	var n atomic.Int64
	// The fake clientset names nothing: play the API server's
	// generateName, uid and generation.
	client.PrependReactor("create", "endpointslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := a.(k8stesting.CreateAction).GetObject().(*discoveryv1.EndpointSlice)
		i := n.Add(1)
		s.Name = fmt.Sprintf("%s%d", s.GenerateName, i)
		s.UID = types.UID(fmt.Sprintf("slice-%d", i))
		s.Generation = 1
		return false, nil, nil
	})
	client.PrependReactor("update", "endpointslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := a.(k8stesting.UpdateAction).GetObject().(*discoveryv1.EndpointSlice)
		s.Generation++
		return false, nil, nil
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(slog.New(slog.DiscardHandler), client, record.NewFakeRecorder(16),
		factory.Core().V1().Services(), factory.Core().V1().Pods(), factory.Discovery().V1().EndpointSlices())
	if err != nil {
		t.Fatal(err)
	}
	return &harness{c: c, client: client, factory: factory}
}

func (h *harness) add(t *testing.T, objs ...runtime.Object) {
	t.Helper()
	for _, obj := range objs {
		var err error
		switch o := obj.(type) {
		case *v1.Service:
			err = h.factory.Core().V1().Services().Informer().GetIndexer().Add(o)
		case *v1.Pod:
			err = h.factory.Core().V1().Pods().Informer().GetIndexer().Add(o)
		case *discoveryv1.EndpointSlice:
			err = h.factory.Discovery().V1().EndpointSlices().Informer().GetIndexer().Update(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func (h *harness) stored(t *testing.T) []discoveryv1.EndpointSlice {
	t.Helper()
	list, err := h.client.DiscoveryV1().EndpointSlices("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func webService() *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "svc-web"},
		Spec: v1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []v1.ServicePort{{Name: "http", Port: 80, Protocol: v1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}},
		},
	}
}

func readyPod(name, ip string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("pod-" + name), Labels: map[string]string{"app": "web"}},
		Spec:       v1.PodSpec{NodeName: "vm"},
		Status: v1.PodStatus{
			Phase: v1.PodRunning, PodIP: ip,
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}},
		},
	}
}

// TestSyncWaitsForItsOwnWrites: a sync on a cache that has not yet seen the
// slice the last sync created (or updated, or deleted) writes nothing and
// asks to be retried, rather than making a second slice for the same
// endpoints; once the cache has caught up it goes on.
func TestSyncWaitsForItsOwnWrites(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.add(t, webService(), readyPod("a", "10.88.0.5"))
	if err := h.c.sync(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	slices := h.stored(t)
	if len(slices) != 1 || len(slices[0].Endpoints) != 1 {
		t.Fatalf("after the first sync: %+v", slices)
	}

	// A second pod arrives before the informer saw the created slice.
	h.add(t, readyPod("b", "10.88.0.6"))
	if err := h.c.sync(ctx, "default/web"); !errors.Is(err, errStaleCache) {
		t.Fatalf("sync on a stale cache = %v, want errStaleCache", err)
	}
	if got := h.stored(t); len(got) != 1 {
		t.Fatalf("a sync on a stale cache wrote: %d slices", len(got))
	}

	// The cache catches up: the slice is updated in place.
	h.add(t, &slices[0])
	if err := h.c.sync(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	slices = h.stored(t)
	if len(slices) != 1 || len(slices[0].Endpoints) != 2 || slices[0].Generation != 2 {
		t.Fatalf("after the cache caught up: %d slices, %+v", len(slices), slices)
	}

	// The cache still holds generation 1: stale again.
	if err := h.c.sync(ctx, "default/web"); !errors.Is(err, errStaleCache) {
		t.Fatalf("sync on an older generation = %v, want errStaleCache", err)
	}
	h.add(t, &slices[0])
	if err := h.c.sync(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	if got := h.stored(t); len(got) != 1 {
		t.Fatalf("%d slices once the cache is current", len(got))
	}
}

func TestTrackerDeletion(t *testing.T) {
	tr := newTracker()
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{UID: "s1", Generation: 3}}
	tr.wrote("svc", s)
	if tr.stale("svc", []*discoveryv1.EndpointSlice{s}) {
		t.Fatal("a current cache is stale")
	}
	tr.deleting("svc", s)
	if !tr.stale("svc", []*discoveryv1.EndpointSlice{s}) {
		t.Fatal("a cache still holding a deleted slice is not stale")
	}
	if tr.stale("svc", nil) {
		t.Fatal("a cache without the deleted slice is stale")
	}
	tr.gone(s)
	if len(tr.gens) != 0 {
		t.Fatalf("the tracker kept %v after the informer saw the delete", tr.gens)
	}
	tr.wrote("svc", s)
	tr.forget("svc")
	if tr.stale("svc", nil) {
		t.Fatal("a forgotten Service's slice is still expected")
	}
}

// TestPlaceholderSlice: a Service whose selector matches no ready pod has
// one slice with no endpoints and no ports, as upstream's reconciler keeps
// (conformance: "a Service with a selector that matches no pods"); the
// first endpoint replaces it.
func TestPlaceholderSlice(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.add(t, webService())
	if err := h.c.sync(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	slices := h.stored(t)
	if len(slices) != 1 || slices[0].Endpoints == nil || len(slices[0].Endpoints) != 0 || len(slices[0].Ports) != 0 ||
		slices[0].Labels[discoveryv1.LabelServiceName] != "web" {
		t.Fatalf("slices of a Service without endpoints: %+v", slices)
	}
	h.add(t, &slices[0], readyPod("a", "10.88.0.5"))
	if err := h.c.sync(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	for _, s := range h.stored(t) {
		if len(s.Endpoints) == 0 {
			t.Errorf("the placeholder %s stayed beside the endpoint's slice", s.Name)
		}
	}
}
