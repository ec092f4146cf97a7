package dns

import (
	"context"
	"log/slog"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestMaintainServiceOutlastsAPIErrors: while the API refuses the
// EndpointSlice (as it does when etcd has lost its quorum) the server keeps
// trying instead of giving up, and is Ready once the slice is written.
func TestMaintainServiceOutlastsAPIErrors(t *testing.T) {
	client := fake.NewSimpleClientset()
	var refused atomic.Int32
	client.PrependReactor("create", "endpointslices", func(k8stesting.Action) (bool, runtime.Object, error) {
		if refused.Add(1) <= 2 {
			return true, nil, apierrors.NewInternalError(context.DeadlineExceeded)
		}
		return false, nil, nil
	})
	s := &Server{
		cfg:    Config{ServiceIP: netip.MustParseAddr("10.96.0.10")},
		client: client,
		log:    slog.New(slog.DiscardHandler),
		ready:  make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.maintainService(ctx, netip.MustParseAddrPort("127.0.0.1:5353")); close(done) }()
	defer func() { cancel(); <-done }()

	select {
	case <-s.Ready():
	case <-time.After(time.Minute):
		t.Fatalf("not Ready after %d refused creates", refused.Load())
	}
	if got := refused.Load(); got != 3 {
		t.Errorf("EndpointSlice creates = %d, want 2 refused and 1 accepted", got)
	}
	slice, err := client.DiscoveryV1().EndpointSlices(metav1.NamespaceSystem).Get(ctx, ServiceName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := slice.Endpoints[0].Addresses[0]; got != "127.0.0.1" {
		t.Errorf("endpoint address = %s, want 127.0.0.1", got)
	}
	if _, err := client.CoreV1().Services(metav1.NamespaceSystem).Get(ctx, ServiceName, metav1.GetOptions{}); err != nil {
		t.Errorf("kube-dns Service: %v", err)
	}
}

// TestApplyServiceWritesNothingWhenInPlace: the resync that runs every
// minute only reads when the Service and EndpointSlice are as wanted: a
// create of either would be refused (409) and show on the dashboard as
// the admin's request, and an update would be a change nobody made. A
// slice that is gone, or whose address changed, is written again.
func TestApplyServiceWritesNothingWhenInPlace(t *testing.T) {
	client := fake.NewSimpleClientset()
	s := &Server{cfg: Config{ServiceIP: netip.MustParseAddr("10.96.0.10")}, client: client, log: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	addr := netip.MustParseAddrPort("127.0.0.1:5353")
	if err := s.applyService(ctx, addr); err != nil {
		t.Fatal(err)
	}
	writes := func() []string {
		var w []string
		for _, a := range client.Actions() {
			if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
				w = append(w, a.GetVerb()+" "+a.GetResource().Resource)
			}
		}
		client.ClearActions()
		return w
	}
	if got := writes(); len(got) != 2 {
		t.Errorf("first apply wrote %q, want the Service and the EndpointSlice created", got)
	}
	if err := s.applyService(ctx, addr); err != nil {
		t.Fatal(err)
	}
	reads := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == "get" {
			reads++
		}
	}
	if reads != 2 {
		t.Errorf("resync with both in place made %d reads, want 2 (the Service and the EndpointSlice, once each)", reads)
	}
	if got := writes(); len(got) != 0 {
		t.Errorf("resync with both in place wrote %q, want nothing", got)
	}

	slices := client.DiscoveryV1().EndpointSlices(metav1.NamespaceSystem)
	if err := slices.Delete(ctx, ServiceName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	client.ClearActions()
	if err := s.applyService(ctx, addr); err != nil {
		t.Fatal(err)
	}
	if got := writes(); len(got) != 1 || got[0] != "create endpointslices" {
		t.Errorf("resync after the slice was deleted wrote %q, want it created", got)
	}
	moved := netip.MustParseAddrPort("127.0.0.2:5353")
	if err := s.applyService(ctx, moved); err != nil {
		t.Fatal(err)
	}
	if got := writes(); len(got) != 1 || got[0] != "update endpointslices" {
		t.Errorf("resync with a new address wrote %q, want the slice updated", got)
	}
	slice, err := slices.Get(ctx, ServiceName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := slice.Endpoints[0].Addresses[0]; got != "127.0.0.2" {
		t.Errorf("endpoint address = %s, want 127.0.0.2", got)
	}
}
