package storage_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/glassplane/glassplane/controlplane/etcd/etcdtest"
	"github.com/glassplane/glassplane/controlplane/storage"
)

// TestFeedReadsUpToItsEventsNotItsHeader feeds the store what etcd sends a
// watcher that fell behind: a batch of changes whose header carries the
// store's current revision, ahead of the batch's last change, and the rest
// after it. The store must count itself read up to the batch's last change
// only, so that a watch from a revision in the gap waits for the rest and
// gets only the changes after its revision (not older ones, which a client
// that listed there already has), and a progress notification (no events)
// moves it to its header.
func TestFeedReadsUpToItsEventsNotItsHeader(t *testing.T) {
	srv := etcdtest.Start(t)
	feed := make(chan clientv3.WatchResponse)
	from := make(chan int64, 1)
	s := storage.New(srv.Client(), storage.Config{CompactionInterval: -1, Watch: func(ctx context.Context, prefix string, rev int64) clientv3.WatchChan {
		from <- rev
		out := make(chan clientv3.WatchResponse)
		go func() {
			defer close(out)
			for {
				select {
				case resp := <-feed:
					out <- resp
				case <-ctx.Done():
					return
				}
			}
		}()
		return out
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	base := <-from - 1

	put := func(rev int64) *clientv3.Event {
		return &clientv3.Event{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{
			Key: []byte(fmt.Sprintf("/registry/configmaps/default/c%d", rev)), Value: []byte(`{}`),
			CreateRevision: rev, ModRevision: rev, Version: 1,
		}}
	}
	batch := func(header int64, revs ...int64) clientv3.WatchResponse {
		resp := clientv3.WatchResponse{Header: &etcdserverpb.ResponseHeader{Revision: header}}
		for _, rev := range revs {
			resp.Events = append(resp.Events, put(rev))
		}
		return resp
	}
	waitRevision := func(want int64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for s.Revision() < want {
			if time.Now().After(deadline) {
				t.Fatalf("the store's revision is %d, want %d", s.Revision(), want)
			}
			time.Sleep(time.Millisecond)
		}
	}

	feed <- batch(base+10, base+1, base+2)
	waitRevision(base + 2)
	if got := s.Revision(); got != base+2 {
		t.Fatalf("after a batch up to revision %d with header %d the store counts itself read up to %d", base+2, base+10, got)
	}

	type opened struct {
		ch  <-chan storage.Event
		err error
	}
	watch := make(chan opened, 1)
	go func() {
		ch, err := s.Watch(ctx, "/registry/configmaps/", base+5)
		watch <- opened{ch, err}
	}()
	select {
	case w := <-watch:
		t.Fatalf("a watch from revision %d started before the store had read it (err %v)", base+5, w.err)
	case <-time.After(100 * time.Millisecond):
	}
	feed <- batch(base+10, base+3, base+4, base+5, base+6, base+7)
	feed <- batch(base+10, base+8, base+9, base+10)
	w := <-watch
	if w.err != nil {
		t.Fatal(w.err)
	}
	for want := base + 6; want <= base+10; want++ {
		select {
		case ev := <-w.ch:
			if ev.Revision != want {
				t.Fatalf("the watch from revision %d got revision %d, want %d", base+5, ev.Revision, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the watch from revision %d did not get revision %d", base+5, want)
		}
	}

	// A progress notification vouches for its header.
	feed <- clientv3.WatchResponse{Header: &etcdserverpb.ResponseHeader{Revision: base + 12}}
	waitRevision(base + 12)
}
