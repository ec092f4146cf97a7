package etcd_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/glassplane/glassplane/controlplane/etcd/etcdtest"
)

func TestDirectWatch(t *testing.T) {
	srv := etcdtest.Start(t)
	watch := srv.DirectWatch()
	if watch == nil {
		t.Fatal("the embedded member has no direct watch")
	}
	cli := srv.Client()
	ctx := context.Background()
	put := func(k, v string) int64 {
		t.Helper()
		resp, err := cli.Put(ctx, k, v)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	recv := func(ch clientv3.WatchChan) clientv3.WatchResponse {
		t.Helper()
		select {
		case resp, ok := <-ch:
			if !ok {
				t.Fatal("the watch closed early")
			}
			return resp
		case <-time.After(30 * time.Second):
			t.Fatal("no watch response within 30s")
		}
		return clientv3.WatchResponse{}
	}

	t.Run("keys under the prefix from the revision, with the previous value", func(t *testing.T) {
		first := put("/w/a", "1")
		put("/other", "x")
		put("/w/a", "2")
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		ch := watch(wctx, "/w/", first)
		resp := recv(ch)
		var got []string
		for len(got) < 2 {
			for _, ev := range resp.Events {
				prev := "-"
				if ev.PrevKv != nil {
					prev = string(ev.PrevKv.Value)
				}
				got = append(got, string(ev.Kv.Key)+"="+string(ev.Kv.Value)+" prev "+prev)
			}
			if len(got) < 2 {
				resp = recv(ch)
			}
		}
		if got[0] != "/w/a=1 prev -" || got[1] != "/w/a=2 prev 1" {
			t.Errorf("events %q", got)
		}
		cancel()
		for range ch {
		}
	})

	t.Run("a compacted start revision ends the watch with ErrCompacted", func(t *testing.T) {
		old := put("/w/b", "1")
		last := put("/w/b", "2")
		if _, err := cli.Compact(ctx, last); err != nil {
			t.Fatal(err)
		}
		ch := watch(ctx, "/w/", old)
		resp := recv(ch)
		if err := resp.Err(); !errors.Is(err, rpctypes.ErrCompacted) || resp.CompactRevision != last {
			t.Fatalf("response %+v, err %v: want ErrCompacted at %d", resp, err, last)
		}
		if _, ok := <-ch; ok {
			t.Error("the watch went on after its compaction")
		}
	})
}
