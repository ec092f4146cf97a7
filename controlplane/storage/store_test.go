package storage_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/glassplane/glassplane/controlplane/etcd/etcdtest"
	"github.com/glassplane/glassplane/controlplane/storage"
)

func newStore(t *testing.T, cfg storage.Config) *storage.Store {
	t.Helper()
	srv := etcdtest.Start(t)
	cfg.CompactionInterval = -1
	// The store's feed reads the embedded member's own watch, as in
	// `glassplane up`; TestDirectWatchMatchesClientWatch compares it with
	// the client's.
	cfg.Watch = srv.DirectWatch()
	s := storage.New(srv.Client(), cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-s.Ready()
	return s
}

func TestKeyLayout(t *testing.T) {
	tests := []struct{ resource, ns, name, want string }{
		{"pods", "default", "mypod", "/registry/pods/default/mypod"},
		{"minions", "", "node-1", "/registry/minions/node-1"},
		{"services/specs", "default", "web", "/registry/services/specs/default/web"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := storage.Key(tt.resource, tt.ns, tt.name); got != tt.want {
				t.Errorf("Key = %q, want %q", got, tt.want)
			}
		})
	}
	if got := storage.Prefix("pods", ""); got != "/registry/pods/" {
		t.Errorf("Prefix = %q", got)
	}
}

func TestCreateUpdateDeleteWithRevisions(t *testing.T) {
	s := newStore(t, storage.Config{})
	ctx := context.Background()
	key := storage.Key("pods", "default", "a")

	kv, err := s.Create(ctx, key, []byte(`{"v":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, key, []byte(`{"v":2}`)); !errors.Is(err, storage.ErrKeyExists) {
		t.Fatalf("second create: err = %v, want ErrKeyExists", err)
	}
	got, err := s.Get(ctx, key)
	if err != nil || got.ModRevision != kv.ModRevision || string(got.Value) != `{"v":1}` {
		t.Fatalf("get = %+v, %v; want revision %d", got, err, kv.ModRevision)
	}
	upd, err := s.Update(ctx, key, []byte(`{"v":3}`), kv.ModRevision)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, key, []byte(`{"v":4}`), kv.ModRevision); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("stale update: err = %v, want ErrConflict", err)
	}
	if _, err := s.Update(ctx, storage.Key("pods", "default", "missing"), nil, 1); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("update of missing key: err = %v, want ErrNotFound", err)
	}
	if _, _, err := s.Delete(ctx, key, kv.ModRevision); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("stale delete: err = %v, want ErrConflict", err)
	}
	prev, _, err := s.Delete(ctx, key, upd.ModRevision)
	if err != nil || string(prev.Value) != `{"v":3}` {
		t.Fatalf("delete = %+v, %v", prev, err)
	}
	if _, err := s.Get(ctx, key); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("get after delete: err = %v, want ErrNotFound", err)
	}
}

func TestGuaranteedUpdateRetriesOnConflict(t *testing.T) {
	s := newStore(t, storage.Config{})
	ctx := context.Background()
	key := storage.Key("configmaps", "default", "c")
	if _, err := s.Create(ctx, key, []byte("0")); err != nil {
		t.Fatal(err)
	}
	calls := 0
	kv, err := s.GuaranteedUpdate(ctx, key, func(cur *storage.KeyValue) ([]byte, error) {
		calls++
		if calls == 1 { // another writer sneaks in
			if _, err := s.Update(ctx, key, []byte("x"), cur.ModRevision); err != nil {
				t.Fatal(err)
			}
		}
		return append(append([]byte{}, cur.Value...), '+'), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 || string(kv.Value) != "x+" {
		t.Fatalf("calls = %d, value = %q; want 2 calls and %q", calls, kv.Value, "x+")
	}
}

func TestListPaginates(t *testing.T) {
	s := newStore(t, storage.Config{})
	ctx := context.Background()
	for i := range 5 {
		if _, err := s.Create(ctx, storage.Key("pods", "default", fmt.Sprintf("p%d", i)), []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Create(ctx, storage.Key("podtemplates", "default", "x"), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	page, err := s.List(ctx, storage.Prefix("pods", ""), storage.ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 2 || !page.More || page.Remaining != 3 {
		t.Fatalf("first page: %d items, more=%v remaining=%d", len(page.Items), page.More, page.Remaining)
	}
	var names []string
	next := ""
	for {
		p, err := s.List(ctx, storage.Prefix("pods", ""), storage.ListOptions{Limit: 2, StartKey: next, Revision: page.Revision})
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range p.Items {
			names = append(names, kv.Key)
		}
		if !p.More {
			break
		}
		next = p.Items[len(p.Items)-1].Key + "\x00"
	}
	if len(names) != 5 {
		t.Fatalf("paged through %d pods, want 5 (podtemplates must not match): %v", len(names), names)
	}
}

func TestWatchDeliversInOrderAndResumes(t *testing.T) {
	s := newStore(t, storage.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := s.Watch(ctx, storage.Prefix("pods", "default"), 0)
	if err != nil {
		t.Fatal(err)
	}
	key := storage.Key("pods", "default", "w")
	kv, _ := s.Create(ctx, key, []byte("1"))
	kv2, _ := s.Update(ctx, key, []byte("2"), kv.ModRevision)
	s.Delete(ctx, key, 0)
	s.Create(ctx, storage.Key("pods", "other", "x"), []byte("ignored"))

	want := []struct {
		typ     storage.EventType
		value   string
		created bool
	}{{storage.EventPut, "1", true}, {storage.EventPut, "2", false}, {storage.EventDelete, "2", false}}
	for i, w := range want {
		ev := next(t, ch)
		if ev.Type != w.typ || string(ev.Value) != w.value || ev.Created != w.created {
			t.Fatalf("event %d = %+v, want %+v", i, ev, w)
		}
	}

	// A new watcher from the first revision replays what came after it.
	replay, err := s.Watch(ctx, storage.Prefix("pods", "default"), kv.ModRevision)
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(t, replay); ev.Revision != kv2.ModRevision {
		t.Fatalf("replayed revision %d, want %d", ev.Revision, kv2.ModRevision)
	}
}

func TestWatchFromCompactedRevisionFails(t *testing.T) {
	// A tiny history forces old start points to be served by etcd itself.
	s := newStore(t, storage.Config{History: 2})
	ctx := context.Background()
	key := storage.Key("pods", "default", "c")
	first, _ := s.Create(ctx, key, []byte("0"))
	var last *storage.KeyValue
	cur := first
	for i := range 5 {
		var err error
		last, err = s.Update(ctx, key, fmt.Appendf(nil, "%d", i+1), cur.ModRevision)
		if err != nil {
			t.Fatal(err)
		}
		cur = last
	}
	// Still in etcd's history, though not in the store's: served from etcd.
	ch, err := s.Watch(ctx, storage.Prefix("pods", ""), first.ModRevision)
	if err != nil {
		t.Fatalf("watch from kept revision: %v", err)
	}
	if ev := next(t, ch); ev.Revision != first.ModRevision+1 {
		t.Fatalf("first event revision %d, want %d", ev.Revision, first.ModRevision+1)
	}
	if err := s.Compact(ctx, last.ModRevision); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Watch(ctx, storage.Prefix("pods", ""), first.ModRevision); !errors.Is(err, storage.ErrCompacted) {
		t.Fatalf("watch from compacted revision: err = %v, want ErrCompacted", err)
	}
}

func TestSlowWatcherIsClosed(t *testing.T) {
	s := newStore(t, storage.Config{WatcherBuffer: 2})
	ctx := context.Background()
	ch, err := s.Watch(ctx, storage.Root, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A channel of a few events, and at most 2 more waiting behind it.
	const writes = 40
	for i := range writes {
		if _, err := s.Create(ctx, storage.Key("pods", "default", fmt.Sprint(i)), []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.After(30 * time.Second)
	for n := 0; ; n++ {
		select {
		case _, ok := <-ch:
			if !ok {
				if n >= writes-10 {
					t.Fatalf("received %d of %d events with a buffer of 2", n, writes)
				}
				return
			}
		case <-deadline:
			t.Fatal("a watcher that never read was not closed")
		}
	}
}

func next(t *testing.T, ch <-chan storage.Event) storage.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch closed early")
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event within 30s")
	}
	return storage.Event{}
}

// Watchers of one prefix share each live event's memo, so what they derive
// from it is computed once; replayed events carry none.
func TestWatchersShareOneMemoPerEvent(t *testing.T) {
	s := newStore(t, storage.Config{SerializableReads: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prefix := storage.Prefix("pods", "default")
	a, err := s.Watch(ctx, prefix, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Watch(ctx, prefix, 0)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := s.Create(ctx, storage.Key("pods", "default", "m"), []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var evA, evB storage.Event
	for _, x := range []struct {
		ch  <-chan storage.Event
		out *storage.Event
	}{{a, &evA}, {b, &evB}} {
		select {
		case *x.out = <-x.ch:
		case <-time.After(10 * time.Second):
			t.Fatal("no event")
		}
	}
	if evA.Memo == nil || evA.Memo != evB.Memo {
		t.Fatalf("memos = %p, %p; want one shared memo", evA.Memo, evB.Memo)
	}
	calls := 0
	f := func() any { calls++; return calls }
	if v := evA.Memo.Do("k", f); v != 1 {
		t.Errorf("first Do = %v", v)
	}
	if v := evB.Memo.Do("k", f); v != 1 || calls != 1 {
		t.Errorf("second Do = %v after %d calls; want the first value, computed once", v, calls)
	}
	if v := evB.Memo.Do("other", f); v != 2 {
		t.Errorf("Do with another key = %v, want a new value", v)
	}

	replay, err := s.Watch(ctx, prefix, kv.ModRevision-1)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-replay:
		if ev.Memo != nil || ev.Revision != kv.ModRevision {
			t.Errorf("replayed event = rev %d memo %p; want rev %d without a memo", ev.Revision, ev.Memo, kv.ModRevision)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no replayed event")
	}
	// The serializable read sees the acknowledged write.
	if got, err := s.Get(ctx, storage.Key("pods", "default", "m")); err != nil || got.ModRevision != kv.ModRevision {
		t.Errorf("serializable get = %+v, %v", got, err)
	}
	var nilMemo *storage.Memo
	if v := nilMemo.Do("k", func() any { return "direct" }); v != "direct" {
		t.Errorf("nil memo Do = %v", v)
	}
}

// TestWatchIndexedGetsOnlyItsValue checks that an indexed watcher is handed
// the events whose index value, before or after the change, is its own (a
// pod bound to its node, changed there, moved away, deleted there), and
// that plain watchers of the same prefix still get everything.
func TestWatchIndexedGetsOnlyItsValue(t *testing.T) {
	s := newStore(t, storage.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	index := storage.Prefix("things", "")
	// A value "node:payload" is indexed by its node.
	node := func(v []byte) string {
		n, _, _ := strings.Cut(string(v), ":")
		return n
	}
	s.SetIndexer(index, func(ev storage.Event) (string, string) {
		prev := ""
		if ev.Type == storage.EventPut && !ev.Created {
			prev = node(ev.PrevValue)
		}
		return node(ev.Value), prev
	})
	a, err := s.WatchIndexed(ctx, storage.Prefix("things", "ns"), 0, index, "a")
	if err != nil {
		t.Fatal(err)
	}
	all, err := s.Watch(ctx, storage.Prefix("things", "ns"), 0)
	if err != nil {
		t.Fatal(err)
	}
	k := storage.Key("things", "ns", "x")
	kv, _ := s.Create(ctx, k, []byte(":pending"))
	kv, _ = s.Update(ctx, k, []byte("a:bound"), kv.ModRevision)
	kv, _ = s.Update(ctx, k, []byte("a:running"), kv.ModRevision)
	kv, _ = s.Update(ctx, k, []byte("b:moved"), kv.ModRevision)
	kv, _ = s.Update(ctx, k, []byte("b:running"), kv.ModRevision)
	s.Delete(ctx, k, 0)
	k2 := storage.Key("things", "ns", "y")
	kv, _ = s.Create(ctx, k2, []byte("a:created-bound"))
	s.Delete(ctx, k2, 0)

	var got []string
	for range 5 {
		got = append(got, string(next(t, a).Value))
	}
	want := []string{"a:bound", "a:running", "b:moved", "a:created-bound", "a:created-bound"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("indexed watcher got %q, want %q", got, want)
	}
	for range 8 {
		next(t, all)
	}
	select {
	case ev := <-a:
		t.Errorf("indexed watcher got an extra event %q", ev.Value)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestRecentFollowsTheWatch(t *testing.T) {
	s := newStore(t, storage.Config{History: 4})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := s.Watch(ctx, storage.Root, 0)
	if err != nil {
		t.Fatal(err)
	}
	key := storage.Key("pods", "default", "r")
	kv, _ := s.Create(ctx, key, []byte("1"))
	next(t, ch)
	if got, ok := s.Recent(key); !ok || string(got.Value) != "1" || got.ModRevision != kv.ModRevision || got.CreateRevision != kv.ModRevision {
		t.Fatalf("Recent after create = %+v, %v; want value 1 at revision %d", got, ok, kv.ModRevision)
	}
	kv2, _ := s.Update(ctx, key, []byte("2"), kv.ModRevision)
	next(t, ch)
	if got, ok := s.Recent(key); !ok || string(got.Value) != "2" || got.ModRevision != kv2.ModRevision || got.CreateRevision != kv.ModRevision {
		t.Fatalf("Recent after update = %+v, %v; want value 2 at revision %d", got, ok, kv2.ModRevision)
	}
	s.Delete(ctx, key, 0)
	next(t, ch)
	if got, ok := s.Recent(key); ok {
		t.Fatalf("Recent after delete = %+v, want nothing", got)
	}

	// A key not changed within the last 2×History changes is forgotten.
	old := storage.Key("pods", "default", "old")
	s.Create(ctx, old, []byte("x"))
	next(t, ch)
	for i := range 16 {
		s.Create(ctx, storage.Key("pods", "default", fmt.Sprintf("p%d", i)), []byte("y"))
		next(t, ch)
	}
	if _, ok := s.Recent(old); ok {
		t.Error("a key 16 changes old is still recent with History 4")
	}
	if got, ok := s.Recent(storage.Key("pods", "default", "p15")); !ok || string(got.Value) != "y" {
		t.Errorf("the newest key is not recent: %+v, %v", got, ok)
	}
}

// TestDirectWatchMatchesClientWatch runs the same writes past two stores on
// one etcd: one whose feed watches through the client (an external etcd),
// one that reads the embedded member's watch directly. Their watchers get
// the same events: type, key, value, previous value and revisions.
func TestDirectWatchMatchesClientWatch(t *testing.T) {
	srv := etcdtest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stores := map[string]*storage.Store{
		"client": storage.New(srv.Client(), storage.Config{CompactionInterval: -1}),
		"direct": storage.New(srv.Client(), storage.Config{CompactionInterval: -1, Watch: srv.DirectWatch()}),
	}
	chans := map[string]<-chan storage.Event{}
	for name, s := range stores {
		done := make(chan struct{})
		go func() { defer close(done); s.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		<-s.Ready()
		ch, err := s.Watch(ctx, storage.Root, 0)
		if err != nil {
			t.Fatal(err)
		}
		chans[name] = ch
	}
	s := stores["client"]
	a, b := storage.Key("pods", "default", "a"), storage.Key("pods", "default", "b")
	kv, err := s.Create(ctx, a, []byte(`{"v":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, b, []byte(`{"v":"b"}`)); err != nil {
		t.Fatal(err)
	}
	if kv, err = s.Update(ctx, a, []byte(`{"v":2}`), kv.ModRevision); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Delete(ctx, a, kv.ModRevision); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, a, []byte(`{"v":3}`)); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		Type                   storage.EventType
		Key, Value, PrevValue  string
		Revision, PrevRevision int64
		Created                bool
	}
	got := map[string][]seen{}
	for name, ch := range chans {
		for range 5 {
			ev := next(t, ch)
			got[name] = append(got[name], seen{ev.Type, ev.Key, string(ev.Value), string(ev.PrevValue), ev.Revision, ev.PrevRevision, ev.Created})
		}
	}
	if !reflect.DeepEqual(got["client"], got["direct"]) {
		t.Fatalf("the feeds differ:\nclient %+v\ndirect %+v", got["client"], got["direct"])
	}
	// And what they agree on is right: the update and the delete carry the
	// value before them, the create after the delete does not.
	want := []string{`{"v":1}/`, `{"v":"b"}/`, `{"v":2}/{"v":1}`, `{"v":2}/{"v":2}`, `{"v":3}/`}
	for i, ev := range got["direct"] {
		if g := ev.Value + "/" + ev.PrevValue; g != want[i] {
			t.Errorf("event %d (%s %s): value/previous = %s, want %s", i, ev.Type, ev.Key, g, want[i])
		}
	}
	if ev := got["direct"][3]; ev.Type != storage.EventDelete || ev.Created || !got["direct"][4].Created {
		t.Errorf("delete then create seen as %+v, %+v", ev, got["direct"][4])
	}
}
