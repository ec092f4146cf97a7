package storage_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/glassplane/glassplane/controlplane/storage"
)

// leaseOf reads key's lease straight from etcd (0: none).
func leaseOf(t *testing.T, s *storage.Store, key string) clientv3.LeaseID {
	t.Helper()
	resp, err := s.Client().Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("%s: %d keys", key, len(resp.Kvs))
	}
	return clientv3.LeaseID(resp.Kvs[0].Lease)
}

// TestTTLAttachesSharedLeases checks that writes under a prefix with a time
// to live attach the key to a lease, one lease for the keys written
// together, whose time to live is the key's plus the reuse time; that an
// update attaches it again; and that other keys get none.
func TestTTLAttachesSharedLeases(t *testing.T) {
	const ttl = time.Hour
	s := newStore(t, storage.Config{TTLs: map[string]time.Duration{"/registry/events/": ttl}})
	ctx := context.Background()
	a, b := storage.Key("events", "default", "a"), storage.Key("events", "default", "b")
	pod := storage.Key("pods", "default", "a")
	for _, key := range []string{a, b, pod} {
		if _, err := s.Create(ctx, key, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	la, lb := leaseOf(t, s, a), leaseOf(t, s, b)
	if la == 0 || lb != la {
		t.Fatalf("event leases %x and %x, want one shared lease", la, lb)
	}
	if l := leaseOf(t, s, pod); l != 0 {
		t.Errorf("pod has lease %x, want none", l)
	}
	ttlResp, err := s.Client().TimeToLive(ctx, la)
	if err != nil {
		t.Fatal(err)
	}
	// kube-apiserver's reuse time for an hour: a minute.
	if got, want := ttlResp.GrantedTTL, int64((ttl + time.Minute).Seconds()); got != want {
		t.Errorf("lease granted for %d s, want %d", got, want)
	}
	if ttlResp.TTL <= int64(ttl.Seconds()) {
		t.Errorf("lease has %d s left, want more than the time to live", ttlResp.TTL)
	}
	kv, err := s.Get(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, a, []byte(`{"count":2}`), kv.ModRevision); err != nil {
		t.Fatal(err)
	}
	if l := leaseOf(t, s, a); l == 0 {
		t.Error("an updated event lost its lease")
	}
}

// TestTTLExpires checks that etcd deletes a key with a time to live when its
// lease runs out, and that the store's watchers see the deletion.
func TestTTLExpires(t *testing.T) {
	s := newStore(t, storage.Config{TTLs: map[string]time.Duration{"/registry/events/": 2 * time.Second}})
	ctx := context.Background()
	key := storage.Key("events", "default", "short")
	kv, err := s.Create(ctx, key, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	events, err := s.Watch(ctx, "/registry/events/", kv.ModRevision)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-events:
		if ev.Type != storage.EventDelete || ev.Key != key {
			t.Fatalf("got %s %s, want the key's DELETE", ev.Type, ev.Key)
		}
	case <-time.After(time.Minute):
		t.Fatal("the key was not deleted a minute after its 2 s time to live")
	}
	if _, err := s.Get(ctx, key); err != storage.ErrNotFound {
		t.Errorf("Get after expiry: %v, want ErrNotFound", err)
	}
}
