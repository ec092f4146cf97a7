package storage_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/glassplane/glassplane/controlplane/etcd/etcdtest"
	"github.com/glassplane/glassplane/controlplane/storage"
)

// TestCompactionKeepsOneInterval: a revision stays readable for at least
// CompactionInterval, and is compacted after it (within the interval and
// a step on an idle machine).
func TestCompactionKeepsOneInterval(t *testing.T) {
	const interval = 3 * time.Second
	srv := etcdtest.Start(t)
	s := storage.New(srv.Client(), storage.Config{CompactionInterval: interval, Watch: srv.DirectWatch()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-s.Ready()

	kv, err := s.Create(ctx, storage.Key("configmaps", "default", "a"), []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	written := time.Now()
	rev := kv.ModRevision
	if _, err := s.Create(ctx, storage.Key("configmaps", "default", "b"), []byte("2")); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := s.List(ctx, storage.Prefix("configmaps", "default"), storage.ListOptions{Revision: rev})
		if errors.Is(err, storage.ErrCompacted) {
			if age := time.Since(written); age < interval {
				t.Fatalf("revision %d compacted %s after it was written, before the interval %s", rev, age, interval)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		// Generous, so that a loaded machine does not fail it: the point
		// is that it goes, and not before the interval.
		if time.Since(written) > 20*time.Second {
			t.Fatalf("revision %d still readable %s after it was written (interval %s)", rev, time.Since(written), interval)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
