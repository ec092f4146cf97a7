package storage_test

import (
	"context"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/glassplane/glassplane/controlplane/etcd/etcdtest"
	"github.com/glassplane/glassplane/controlplane/storage"
)

// beforeWriteKV answers serializable reads as a member does in the moment
// after it has handed a write's events to watchers and before the write's
// revision is readable: as of the revision before it, without the key.
type beforeWriteKV struct {
	clientv3.KV
	serializable int
}

func (kv *beforeWriteKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	resp, err := kv.KV.Get(ctx, key, opts...)
	if err != nil || !clientv3.OpGet(key, opts...).IsSerializable() {
		return resp, err
	}
	kv.serializable++
	return &clientv3.GetResponse{Header: &etcdserverpb.ResponseHeader{Revision: resp.Header.Revision - 1}}, nil
}

// TestSerializableReadIsNeverOlderThanTheFeed checks that with
// SerializableReads a read that comes back older than a change the feed has
// already delivered is done again, with a quorum round: a client reacting
// to the change must find it.
func TestSerializableReadIsNeverOlderThanTheFeed(t *testing.T) {
	srv := etcdtest.Start(t)
	kv := &beforeWriteKV{KV: srv.Client().KV}
	cli := clientv3.NewCtxClient(context.Background())
	cli.KV = kv
	s := storage.New(cli, storage.Config{SerializableReads: true, CompactionInterval: -1, Watch: srv.DirectWatch()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-s.Ready()

	key := storage.Key("customresourcedefinitions", "", "webapps.example.io")
	created, err := s.Create(ctx, key, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); s.Revision() < created.ModRevision; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the feed did not deliver revision %d", created.ModRevision)
		}
	}
	got, err := s.Get(ctx, key)
	if err != nil || got.ModRevision != created.ModRevision {
		t.Fatalf("Get after the feed delivered the create = %+v, %v; want revision %d", got, err, created.ModRevision)
	}
	list, err := s.List(ctx, storage.Prefix("customresourcedefinitions", ""), storage.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Revision < created.ModRevision {
		t.Fatalf("List after the feed delivered the create = %+v, %v; want the key at revision %d or later", list, err, created.ModRevision)
	}
	if kv.serializable == 0 {
		t.Fatal("no read was serializable")
	}
}
