package endpointslicemirroring

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
)

// harness is the controller on a fake clientset whose informer caches the
// test fills by hand, so that a test decides what the cache has seen.
type harness struct {
	c        *Controller
	client   *fake.Clientset
	factory  informers.SharedInformerFactory
	recorder *record.FakeRecorder
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
		if s.Name == "" {
			s.Name = fmt.Sprintf("%s%d", s.GenerateName, i)
		}
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
	recorder := record.NewFakeRecorder(16)
	c, err := New(slog.New(slog.DiscardHandler), client, recorder,
		factory.Core().V1().Endpoints(), factory.Core().V1().Services(), factory.Discovery().V1().EndpointSlices())
	if err != nil {
		t.Fatal(err)
	}
	return &harness{c: c, client: client, factory: factory, recorder: recorder}
}

// add puts objects in the informer caches; slices also in the fake API.
func (h *harness) add(t *testing.T, objs ...runtime.Object) {
	t.Helper()
	for _, obj := range objs {
		var err error
		switch o := obj.(type) {
		case *v1.Service:
			err = h.factory.Core().V1().Services().Informer().GetIndexer().Update(o)
		case *v1.Endpoints:
			err = h.factory.Core().V1().Endpoints().Informer().GetIndexer().Update(o)
		case *discoveryv1.EndpointSlice:
			err = h.factory.Discovery().V1().EndpointSlices().Informer().GetIndexer().Update(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// seen makes the slice cache hold what the fake API holds.
func (h *harness) seen(t *testing.T) {
	t.Helper()
	if err := h.factory.Discovery().V1().EndpointSlices().Informer().GetIndexer().Replace(nil, ""); err != nil {
		t.Fatal(err)
	}
	for _, s := range h.stored(t) {
		h.add(t, &s)
	}
}

func (h *harness) sync(t *testing.T) {
	t.Helper()
	if err := h.c.sync(context.Background(), "default/custom"); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) stored(t *testing.T) []discoveryv1.EndpointSlice {
	t.Helper()
	list, err := h.client.DiscoveryV1().EndpointSlices("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(list.Items, func(a, b discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
	return list.Items
}

func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// customService is a Service without a selector, whose Endpoints its
// owner writes.
func customService() *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "custom", Namespace: "default", UID: "svc-custom"},
		Spec:       v1.ServiceSpec{Ports: []v1.ServicePort{{Name: "example", Port: 80, Protocol: v1.ProtocolTCP}}},
	}
}

func customEndpoints(subsets ...v1.EndpointSubset) *v1.Endpoints {
	return &v1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: "custom", Namespace: "default", UID: "ep-custom"},
		Subsets:    subsets,
	}
}

func port80() []v1.EndpointPort {
	return []v1.EndpointPort{{Name: "example", Port: 80, Protocol: v1.ProtocolTCP}}
}

// mirroredSlice is a slice the controller would have made for custom.
func mirroredSlice(name string) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Generation: 1, Labels: map[string]string{
			discoveryv1.LabelServiceName: "custom", discoveryv1.LabelManagedBy: ControllerName,
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.1.2.3"}}},
	}
}

// TestMirrorCreateUpdateDelete follows the conformance spec: a custom
// Endpoints is mirrored to a slice that carries its addresses, ports,
// labels, annotations and owner; an update changes that slice in place;
// deleting the Endpoints deletes the slice.
func TestMirrorCreateUpdateDelete(t *testing.T) {
	h := newHarness(t)
	node := "vm"
	ep := customEndpoints(v1.EndpointSubset{
		Ports: port80(),
		Addresses: []v1.EndpointAddress{{IP: "10.1.2.3", Hostname: "a", NodeName: &node,
			TargetRef: &v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "a", UID: "pod-a"}}},
		NotReadyAddresses: []v1.EndpointAddress{{IP: "10.1.2.4"}, {IP: "fd00::5"}},
	})
	ep.Labels = map[string]string{"team": "web"}
	ep.Annotations = map[string]string{
		"note":                            "kept",
		v1.EndpointsOverCapacity:          "truncated",
		v1.EndpointsLastChangeTriggerTime: "2026-01-01T00:00:00Z",
		v1.LastAppliedConfigAnnotation:    "{}",
	}
	h.add(t, customService(), ep)
	h.sync(t)

	got := h.stored(t)
	if len(got) != 2 {
		t.Fatalf("want an IPv4 and an IPv6 slice, got %d: %+v", len(got), got)
	}
	byType := map[discoveryv1.AddressType]discoveryv1.EndpointSlice{}
	for _, s := range got {
		byType[s.AddressType] = s
	}
	v4, v6 := byType[discoveryv1.AddressTypeIPv4], byType[discoveryv1.AddressTypeIPv6]
	wantLabels := map[string]string{"team": "web", discoveryv1.LabelServiceName: "custom", discoveryv1.LabelManagedBy: ControllerName}
	wantAnnotations := map[string]string{"note": "kept", v1.EndpointsOverCapacity: "truncated"}
	for _, s := range []discoveryv1.EndpointSlice{v4, v6} {
		if !strings.HasPrefix(s.Name, "custom-") || fmt.Sprint(s.Labels) != fmt.Sprint(wantLabels) || fmt.Sprint(s.Annotations) != fmt.Sprint(wantAnnotations) {
			t.Errorf("slice %s: labels %v, annotations %v", s.Name, s.Labels, s.Annotations)
		}
		if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Kind != "Endpoints" || s.OwnerReferences[0].UID != "ep-custom" ||
			s.OwnerReferences[0].Controller == nil || !*s.OwnerReferences[0].Controller {
			t.Errorf("slice %s: owners %+v, want the Endpoints as controller", s.Name, s.OwnerReferences)
		}
		if len(s.Ports) != 1 || *s.Ports[0].Port != 80 || *s.Ports[0].Name != "example" || *s.Ports[0].Protocol != v1.ProtocolTCP {
			t.Errorf("slice %s: ports %+v", s.Name, s.Ports)
		}
	}
	if len(v4.Endpoints) != 2 || len(v6.Endpoints) != 1 {
		t.Fatalf("IPv4 endpoints %+v, IPv6 endpoints %+v", v4.Endpoints, v6.Endpoints)
	}
	ready := v4.Endpoints[0]
	if ready.Addresses[0] != "10.1.2.3" || !*ready.Conditions.Ready || *ready.Hostname != "a" || *ready.NodeName != "vm" || ready.TargetRef.UID != "pod-a" {
		t.Errorf("ready endpoint %+v", ready)
	}
	if e := v4.Endpoints[1]; e.Addresses[0] != "10.1.2.4" || *e.Conditions.Ready {
		t.Errorf("not-ready endpoint %+v", e)
	}
	if e := v6.Endpoints[0]; e.Addresses[0] != "fd00::5" || *e.Conditions.Ready {
		t.Errorf("IPv6 endpoint %+v", e)
	}

	// A second sync on a current cache writes nothing.
	h.seen(t)
	h.client.ClearActions()
	h.sync(t)
	if a := h.client.Actions(); len(a) != 0 {
		t.Errorf("a sync with nothing to change wrote: %v", a)
	}

	// The update replaces the IPv4 address and drops the IPv6 one.
	ep = ep.DeepCopy()
	ep.Subsets = []v1.EndpointSubset{{Ports: port80(), Addresses: []v1.EndpointAddress{{IP: "10.2.3.4"}}}}
	h.add(t, ep)
	h.sync(t)
	got = h.stored(t)
	if len(got) != 1 || got[0].Name != v4.Name || len(got[0].Endpoints) != 1 || got[0].Endpoints[0].Addresses[0] != "10.2.3.4" {
		t.Fatalf("after the update: %+v", got)
	}

	// The Endpoints goes: so do its slices.
	h.seen(t)
	if err := h.factory.Core().V1().Endpoints().Informer().GetIndexer().Delete(ep); err != nil {
		t.Fatal(err)
	}
	h.sync(t)
	if got := h.stored(t); len(got) != 0 {
		t.Fatalf("after the delete: %+v", got)
	}
}

// TestNotMirrored: an Endpoints labelled skip-mirror, one holding a leader
// election record, one whose Service has a selector or is gone gets no
// slices, and the ones mirrored before are deleted.
func TestNotMirrored(t *testing.T) {
	subset := v1.EndpointSubset{Ports: port80(), Addresses: []v1.EndpointAddress{{IP: "10.1.2.3"}}}
	for _, tc := range []struct {
		name string
		svc  func(*v1.Service) *v1.Service
		ep   func(*v1.Endpoints)
	}{
		{name: "skip-mirror label", ep: func(ep *v1.Endpoints) {
			ep.Labels = map[string]string{discoveryv1.LabelSkipMirror: "true"}
		}},
		{name: "leader election record", ep: func(ep *v1.Endpoints) {
			ep.Annotations = map[string]string{resourcelock.LeaderElectionRecordAnnotationKey: "{}"}
		}},
		{name: "service with a selector", svc: func(svc *v1.Service) *v1.Service {
			svc.Spec.Selector = map[string]string{"app": "web"}
			return svc
		}},
		{name: "no service", svc: func(*v1.Service) *v1.Service { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			ep := customEndpoints(subset)
			if tc.ep != nil {
				tc.ep(ep)
			}
			svc := customService()
			if tc.svc != nil {
				svc = tc.svc(svc)
			}
			if svc != nil {
				h.add(t, svc)
			}
			h.add(t, ep)
			h.sync(t)
			if got := h.stored(t); len(got) != 0 {
				t.Fatalf("mirrored: %+v", got)
			}

			// A slice mirrored before, as when the Service just gained
			// its selector, is deleted.
			old := mirroredSlice("custom-old")
			if _, err := h.client.DiscoveryV1().EndpointSlices("default").Create(context.Background(), old, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			h.seen(t)
			h.sync(t)
			if got := h.stored(t); len(got) != 0 {
				t.Fatalf("the earlier mirror stayed: %+v", got)
			}
		})
	}
}

// TestServiceLosesSelector: the Service dropping its selector queues its
// Endpoints, which is then mirrored.
func TestServiceLosesSelector(t *testing.T) {
	h := newHarness(t)
	withSelector := customService()
	withSelector.Spec.Selector = map[string]string{"app": "web"}
	h.add(t, withSelector, customEndpoints(v1.EndpointSubset{Ports: port80(), Addresses: []v1.EndpointAddress{{IP: "10.1.2.3"}}}))
	h.sync(t)
	if got := h.stored(t); len(got) != 0 {
		t.Fatalf("mirrored for a Service with a selector: %+v", got)
	}
	h.c.serviceChanged(withSelector)
	h.c.serviceUpdated(withSelector, withSelector)
	if h.c.queue.Len() != 0 {
		t.Fatal("a Service with a selector queued its Endpoints")
	}
	h.add(t, customService())
	h.c.serviceUpdated(withSelector, customService())
	if key, _ := h.c.queue.Get(); key != "default/custom" || h.c.queue.Len() != 0 {
		t.Fatalf("queued %q and %d more", key, h.c.queue.Len())
	}
	h.sync(t)
	if got := h.stored(t); len(got) != 1 {
		t.Fatalf("after the selector went: %+v", got)
	}
}

// TestSubsetLimits: at most MaxEndpointsPerSubset addresses of a subset
// are mirrored, with a TooManyAddressesToMirror event; addresses that are
// not IPs are skipped with an InvalidIPAddress event.
func TestSubsetLimits(t *testing.T) {
	many := make([]v1.EndpointAddress, MaxEndpointsPerSubset+2)
	for i := range many {
		many[i].IP = fmt.Sprintf("10.1.%d.%d", i/250, i%250+1)
	}
	for _, tc := range []struct {
		name      string
		addresses []v1.EndpointAddress
		endpoints int
		event     string
	}{
		{"over the limit", many, MaxEndpointsPerSubset, "Warning TooManyAddressesToMirror A max of 1000 addresses can be mirrored to EndpointSlices per Endpoints subset. 2 addresses were skipped"},
		{"invalid IP", []v1.EndpointAddress{{IP: "10.1.2.3"}, {IP: "not-an-ip"}}, 1, "Warning InvalidIPAddress Skipped 1 invalid IP addresses when mirroring to EndpointSlices"},
		{"within the limit", many[:MaxEndpointsPerSubset], MaxEndpointsPerSubset, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.add(t, customService(), customEndpoints(v1.EndpointSubset{Ports: port80(), Addresses: tc.addresses}))
			h.sync(t)
			got := h.stored(t)
			if len(got) != 1 || len(got[0].Endpoints) != tc.endpoints {
				t.Fatalf("want one slice of %d endpoints, got %d slices", tc.endpoints, len(got))
			}
			events := h.events()
			if tc.event == "" && len(events) != 0 || tc.event != "" && (len(events) != 1 || events[0] != tc.event) {
				t.Errorf("events %q, want %q", events, tc.event)
			}
		})
	}
}

// TestSyncWaitsForItsOwnWrites: a sync on a cache that has not seen the
// slice the last sync created asks to be retried rather than making a
// second slice.
func TestSyncWaitsForItsOwnWrites(t *testing.T) {
	h := newHarness(t)
	ep := customEndpoints(v1.EndpointSubset{Ports: port80(), Addresses: []v1.EndpointAddress{{IP: "10.1.2.3"}}})
	h.add(t, customService(), ep)
	h.sync(t)
	ep = ep.DeepCopy()
	ep.Subsets[0].Addresses = append(ep.Subsets[0].Addresses, v1.EndpointAddress{IP: "10.1.2.4"})
	h.add(t, ep)
	if err := h.c.sync(context.Background(), "default/custom"); !errors.Is(err, errStaleCache) {
		t.Fatalf("sync on a stale cache = %v, want errStaleCache", err)
	}
	h.seen(t)
	h.sync(t)
	if got := h.stored(t); len(got) != 1 || len(got[0].Endpoints) != 2 || got[0].Generation != 2 {
		t.Fatalf("after the cache caught up: %+v", got)
	}
}

// TestDuplicateSlicesCollapse: of two slices for the same ports the first
// by name is kept and the other deleted; a slice for ports no longer
// wanted is reused for the new ones.
func TestDuplicateSlicesCollapse(t *testing.T) {
	h := newHarness(t)
	for _, s := range []*discoveryv1.EndpointSlice{mirroredSlice("custom-a"), mirroredSlice("custom-b")} {
		s.Ports = []discoveryv1.EndpointPort{{Name: ptr("example"), Port: ptr[int32](80), Protocol: ptr(v1.ProtocolTCP)}}
		if _, err := h.client.DiscoveryV1().EndpointSlices("default").Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	h.seen(t)
	ep := customEndpoints(v1.EndpointSubset{Ports: []v1.EndpointPort{{Name: "other", Port: 81, Protocol: v1.ProtocolTCP}}, Addresses: []v1.EndpointAddress{{IP: "10.1.2.3"}}})
	h.add(t, customService(), ep)
	h.sync(t)
	got := h.stored(t)
	if len(got) != 1 || len(got[0].Ports) != 1 || *got[0].Ports[0].Port != 81 || got[0].OwnerReferences[0].UID != "ep-custom" {
		t.Fatalf("slices: %+v", got)
	}
}

func ptr[T any](v T) *T { return &v }

// TestRepack: addresses are grouped by the ports they serve, and an
// address not ready for a port anywhere is not ready for it.
func TestRepack(t *testing.T) {
	a, b := v1.EndpointAddress{IP: "10.0.0.1"}, v1.EndpointAddress{IP: "10.0.0.2"}
	p80 := v1.EndpointPort{Name: "http", Port: 80, Protocol: v1.ProtocolTCP}
	p443 := v1.EndpointPort{Name: "https", Port: 443, Protocol: v1.ProtocolTCP}
	for _, tc := range []struct {
		name string
		in   []v1.EndpointSubset
		want string
	}{
		{"same ports merge", []v1.EndpointSubset{
			{Ports: []v1.EndpointPort{p80}, Addresses: []v1.EndpointAddress{b}},
			{Ports: []v1.EndpointPort{p80}, Addresses: []v1.EndpointAddress{a}},
		}, "[10.0.0.1 10.0.0.2] [] [http/TCP/80/]"},
		{"one address, two subsets", []v1.EndpointSubset{
			{Ports: []v1.EndpointPort{p80}, Addresses: []v1.EndpointAddress{a}},
			{Ports: []v1.EndpointPort{p443}, Addresses: []v1.EndpointAddress{a}},
		}, "[10.0.0.1] [] [http/TCP/80/ https/TCP/443/]"},
		{"not ready wins", []v1.EndpointSubset{
			{Ports: []v1.EndpointPort{p80}, Addresses: []v1.EndpointAddress{a}},
			{Ports: []v1.EndpointPort{p80}, NotReadyAddresses: []v1.EndpointAddress{a}},
		}, "[] [10.0.0.1] [http/TCP/80/]"},
		{"no ports", []v1.EndpointSubset{{Addresses: []v1.EndpointAddress{a}}}, "[10.0.0.1] [] []"},
		{"no addresses", []v1.EndpointSubset{{Ports: []v1.EndpointPort{p80}}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var parts []string
			for _, s := range repack(tc.in) {
				var ready, notReady, ports []string
				for _, x := range s.Addresses {
					ready = append(ready, x.IP)
				}
				for _, x := range s.NotReadyAddresses {
					notReady = append(notReady, x.IP)
				}
				for _, p := range s.Ports {
					ports = append(ports, endpointPortString(p))
				}
				parts = append(parts, fmt.Sprint(ready, notReady, ports))
			}
			if got := strings.Join(parts, " "); got != tc.want {
				t.Errorf("repack = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTrackerDeletion(t *testing.T) {
	tr := newTracker()
	s := mirroredSlice("custom-a")
	tr.wrote(s)
	if tr.stale("default/custom", []*discoveryv1.EndpointSlice{s}) || tr.shouldSync(s) {
		t.Fatal("a current cache is stale")
	}
	tr.deleting(s)
	if !tr.stale("default/custom", []*discoveryv1.EndpointSlice{s}) {
		t.Fatal("a cache still holding a deleted slice is not stale")
	}
	if !tr.gone(s) {
		t.Fatal("an expected deletion was unexpected")
	}
	tr.wrote(s)
	if tr.gone(s) {
		t.Fatal("someone else's deletion was expected")
	}
	tr.wrote(s)
	tr.forget("default/custom")
	if tr.stale("default/custom", nil) || tr.has(s) {
		t.Fatal("a forgotten Endpoints' slice is still expected")
	}
}
