package storage

import (
	"context"
	"testing"
	"time"

	"github.com/glassplane/glassplane/controlplane/etcd/etcdtest"
)

// TestLeaseReuse checks when a new lease is granted: not for a write within
// the reuse time of the last grant, but for one after it, for a different
// time to live, and past leaseMaxKeys keys on one lease.
func TestLeaseReuse(t *testing.T) {
	srv := etcdtest.Start(t)
	l := newLeases(srv.Client(), nil)
	ctx := context.Background()
	t0 := time.Now()
	first, err := l.lease(ctx, time.Hour, t0)
	if err != nil {
		t.Fatal(err)
	}
	same, err := l.lease(ctx, time.Hour, t0.Add(59*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if same != first {
		t.Errorf("a write 59 s after the grant got lease %x, want the first %x", same, first)
	}
	later, err := l.lease(ctx, time.Hour, t0.Add(61*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if later == first {
		t.Error("a write 61 s after the grant got the first lease, which expires before its time to live")
	}
	other, err := l.lease(ctx, 10*time.Minute, t0.Add(61*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if other == later {
		t.Error("a different time to live got the same lease")
	}
	for range leaseMaxKeys - 1 {
		if id, err := l.lease(ctx, 10*time.Minute, t0.Add(61*time.Second)); err != nil || id != other {
			t.Fatalf("key within leaseMaxKeys: lease %x, %v; want %x", id, err, other)
		}
	}
	if id, err := l.lease(ctx, 10*time.Minute, t0.Add(61*time.Second)); err != nil || id == other {
		t.Errorf("key past leaseMaxKeys: lease %x, %v; want a new lease", id, err)
	}
}
