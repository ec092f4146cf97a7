package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/glassplane/glassplane/web/source"
)

// TestWatchFromNow follows a ConfigMap's create, update and delete through
// the merged watch of every resource, and through one of its namespace.
func TestWatchFromNow(t *testing.T) {
	c := startCluster(t)
	c.namespace(t, "w")
	c.configMap(t, "w", "before", "x")
	s := c.runStore(t, Config{})
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	all, err := s.Watch(ctx, source.Root, 0)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := s.Watch(ctx, "/registry/configmaps/w/", 0)
	if err != nil {
		t.Fatal(err)
	}
	created := c.configMap(t, "w", "cm", "one")
	updated := c.configMap(t, "w", "cm", "two")
	if err := c.client.CoreV1().ConfigMaps("w").Delete(ctx, "cm", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	const key = "/registry/configmaps/w/cm"
	for name, ch := range map[string]<-chan source.Event{"all": all, "namespace": ns} {
		t.Run(name, func(t *testing.T) {
			var got []source.Event
			for len(got) < 3 {
				ev := next(t, ch, func(ev source.Event) bool {
					if name == "namespace" && ev.Key != key {
						t.Errorf("the namespace's watch sent %q", ev.Key)
					}
					return ev.Key == key
				})
				got = append(got, ev)
			}
			want := []struct {
				typ     source.EventType
				created bool
				rev     int64
				value   string
			}{{source.EventPut, true, created, "one"}, {source.EventPut, false, updated, "two"}, {source.EventDelete, false, 0, "two"}}
			for i, w := range want {
				ev := got[i]
				var cm struct {
					Data map[string]string `json:"data"`
				}
				if err := json.Unmarshal(ev.Value, &cm); err != nil {
					t.Fatal(err)
				}
				if ev.Type != w.typ || ev.Created != w.created || cm.Data["v"] != w.value {
					t.Errorf("event %d: %s created=%v v=%q, want %s created=%v v=%q", i, ev.Type, ev.Created, cm.Data["v"], w.typ, w.created, w.value)
				}
				if w.rev != 0 && ev.Revision != w.rev {
					t.Errorf("event %d: revision %d, want %d", i, ev.Revision, w.rev)
				}
			}
			if got[2].Revision <= updated {
				t.Errorf("the delete's revision %d is not after the update's %d", got[2].Revision, updated)
			}
		})
	}
	waitFor(t, ctx, "the store's revision to pass the delete", func() bool { return s.Revision() > updated })

	t.Run("Newest", func(t *testing.T) {
		c.configMap(t, "w", "n1", "a")
		last := c.configMap(t, "w", "n2", "b")
		waitFor(t, ctx, "the backlog to see the writes", func() bool { return s.Revision() >= last })
		items, ok, err := s.Newest(ctx, "/registry/configmaps/w/", 2, 0)
		if err != nil || !ok {
			t.Fatalf("Newest: ok=%v err=%v", ok, err)
		}
		if got := keysOf(items); !slices.Equal(got, []string{"/registry/configmaps/w/n2", "/registry/configmaps/w/n1"}) {
			t.Errorf("Newest = %v", got)
		}
		if items[0].ModRevision != last {
			t.Errorf("Newest's ModRevision = %d, want %d", items[0].ModRevision, last)
		}
		// The backlog started after "before" was written: it cannot tell
		// the third newest; the mirror, listed first, can.
		if _, ok := s.feed.newest("/registry/configmaps/w/", 3, 0); ok {
			t.Error("the backlog answered for more keys than it saw")
		}
		waitFor(t, ctx, "the mirror to hold configmaps", func() bool { return inMirror(s, "configmaps") })
		items, ok, err = s.Newest(ctx, "/registry/configmaps/w/", 3, 0)
		if err != nil || !ok {
			t.Fatalf("Newest of 3: ok=%v err=%v", ok, err)
		}
		if got := keysOf(items); !slices.Equal(got, []string{"/registry/configmaps/w/n2", "/registry/configmaps/w/n1", "/registry/configmaps/w/before"}) {
			t.Errorf("Newest of 3 = %v", got)
		}
	})
}

// TestWatchReplay resumes watches from older revisions: one older than
// the store's backlog (served by the API server's watches from that
// revision) and one within it.
func TestWatchReplay(t *testing.T) {
	c := startCluster(t)
	c.namespace(t, "r")
	before := c.configMap(t, "r", "seed", "x")
	a1 := c.configMap(t, "r", "a", "one")
	a2 := c.configMap(t, "r", "a", "two")
	s := c.runStore(t, Config{})
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	const prefix = "/registry/configmaps/r/"

	old, err := s.Watch(ctx, prefix, before)
	if err != nil {
		t.Fatal(err)
	}
	if n := dedicatedWatches(s); n != 1 {
		t.Fatalf("%d watches apart from the backlog, want 1 (from before the store started)", n)
	}
	for _, want := range []int64{a1, a2} {
		ev := next(t, old, func(source.Event) bool { return true })
		if ev.Key != prefix+"a" || ev.Revision != want || ev.Type != source.EventPut || ev.Created != (want == a1) {
			t.Errorf("replayed %s %q at %d (created=%v), want a put of a at %d", ev.Type, ev.Key, ev.Revision, ev.Created, want)
		}
	}

	mark := s.Revision()
	b := c.configMap(t, "r", "b", "one")
	recent, err := s.Watch(ctx, prefix, mark)
	if err != nil {
		t.Fatal(err)
	}
	if n := dedicatedWatches(s); n != 1 {
		t.Fatalf("%d watches apart from the backlog, want 1: one from a recent revision is served from it", n)
	}
	for name, ch := range map[string]<-chan source.Event{"older": old, "recent": recent} {
		ev := next(t, ch, func(source.Event) bool { return true })
		if ev.Key != prefix+"b" || ev.Revision != b || !ev.Created {
			t.Errorf("%s watch: %s %q at %d, want the creation of b at %d", name, ev.Type, ev.Key, ev.Revision, b)
		}
	}

	_, err = s.Watch(ctx, prefix, s.Revision()+1000)
	isErr(t, "watch from a future revision", err, source.ErrFutureRevision)
}

// TestWatchNewCRD delivers the objects of a custom resource whose CRD was
// created after the watches opened.
func TestWatchNewCRD(t *testing.T) {
	c := startCluster(t)
	c.namespace(t, "crd")
	s := c.runStore(t, Config{})
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	all, err := s.Watch(ctx, source.Root, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.feed.mu.Lock()
	start := s.feed.from
	s.feed.mu.Unlock()
	old, err := s.Watch(ctx, "/registry/example.com/", start-1)
	if err != nil {
		t.Fatal(err)
	}
	if n := dedicatedWatches(s); n != 1 {
		t.Fatalf("%d watches apart from the backlog, want 1", n)
	}
	c.createCRD(t, widgetCRD("gadgets", "Gadget"))
	gadget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": map[string]any{"name": "g1"},
	}}
	gadgets := c.dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}).Namespace("crd")
	g, err := gadgets.Create(ctx, gadget, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const key = "/registry/example.com/gadgets/crd/g1"
	for name, ch := range map[string]<-chan source.Event{"from now": all, "from before": old} {
		ev := next(t, ch, func(ev source.Event) bool { return ev.Key == key })
		if ev.Type != source.EventPut {
			t.Errorf("%s: %s of %q", name, ev.Type, key)
		}
		if ev.Revision < revisionOf(t, g.GetResourceVersion()) {
			t.Errorf("%s: revision %d, before the gadget's %s", name, ev.Revision, g.GetResourceVersion())
		}
	}
	kv, err := s.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if kv.ModRevision != revisionOf(t, g.GetResourceVersion()) {
		t.Errorf("Get: ModRevision %d, want %s", kv.ModRevision, g.GetResourceVersion())
	}
}

// dedicatedWatches counts the store's open watches that are not served
// from its backlog.
func dedicatedWatches(s *Store) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for m := range s.mergers {
		if !m.feed {
			n++
		}
	}
	return n
}

// TestReconnect ends every watch within two seconds (the server's
// timeout) while ConfigMaps are written: the store's watches and the
// audit watch resume where they were, missing and repeating nothing.
func TestReconnect(t *testing.T) {
	shortenWatches(t, time.Second)
	c := startCluster(t)
	c.namespace(t, "re")
	s := c.runStore(t, Config{})
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	events, err := s.Watch(ctx, "/registry/configmaps/re/", 0)
	if err != nil {
		t.Fatal(err)
	}
	log := source.NewAuditLog(0)
	auditDone := make(chan error, 1)
	go func() { auditDone <- WatchAudit(ctx, c.cfg, log, nil) }()
	const n = 12
	for i := range n {
		c.configMap(t, "re", fmt.Sprintf("cm%d", i), "x")
		time.Sleep(300 * time.Millisecond)
	}
	seen := map[string]int{}
	for len(seen) < n {
		ev := next(t, events, func(source.Event) bool { return true })
		seen[ev.Key]++
	}
	for key, count := range seen {
		if count != 1 {
			t.Errorf("%q: %d events, want 1", key, count)
		}
	}
	creates := func() int {
		return len(log.Find(func(ev *auditv1.Event) bool {
			return ev.Verb == "create" && ev.Stage == auditv1.StageResponseComplete && ev.ObjectRef != nil &&
				ev.ObjectRef.Resource == "configmaps" && ev.ObjectRef.Namespace == "re"
		}))
	}
	waitFor(t, ctx, "the audit events of the creates", func() bool { return creates() >= n })
	time.Sleep(200 * time.Millisecond)
	if got := creates(); got != n {
		t.Errorf("%d audit events of creates, want %d", got, n)
	}
	// The audit log also shows that the watches were reopened.
	watches := log.Find(func(ev *auditv1.Event) bool {
		return ev.Verb == "watch" && ev.Stage == auditv1.StageResponseStarted && ev.ObjectRef != nil && ev.ObjectRef.Resource == "configmaps"
	})
	if len(watches) < 2 {
		t.Errorf("%d watches of configmaps started, want the store's reopened", len(watches))
	}
	cancel()
	if err := <-auditDone; err != nil {
		t.Errorf("WatchAudit: %v", err)
	}
}
