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
