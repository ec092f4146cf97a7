package auditring

import (
	"context"
	"testing"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// The ring keeps the last size events, oldest first, however many came.
func TestRingKeepsTheNewestInOrder(t *testing.T) {
	r := New[*auditv1.Event](3)
	for i := range 7 {
		r.Add(&auditv1.Event{Verb: string(rune('a' + i))})
	}
	var got string
	for _, rec := range r.Since(0) {
		got += rec.Event.Verb
	}
	if got != "efg" {
		t.Errorf("Since(0) verbs = %q, want efg", got)
	}
	if recs := r.Since(5); len(recs) != 2 || recs[0].Seq != 6 || recs[1].Seq != 7 {
		t.Errorf("Since(5) = %+v, want seqs 6 and 7", recs)
	}
	found := r.Find(func(ev *auditv1.Event) bool { return ev.Verb != "f" })
	if len(found) != 2 || found[0].Event.Verb != "e" || found[1].Event.Verb != "g" {
		t.Errorf("Find = %+v, want e then g", found)
	}
	if r.Last() != 7 {
		t.Errorf("Last = %d, want 7", r.Last())
	}
}

// A subscriber gets the events added after it subscribed, and its channel
// closes when its context ends.
func TestRingSubscribe(t *testing.T) {
	r := New[*auditv1.Event](0)
	r.Add(&auditv1.Event{Verb: "before"})
	ctx, cancel := context.WithCancel(context.Background())
	ch := r.Subscribe(ctx)
	r.Add(&auditv1.Event{Verb: "after"})
	select {
	case rec := <-ch:
		if rec.Seq != 2 || rec.Event.Verb != "after" {
			t.Errorf("got %+v, want seq 2 after", rec)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
	}
	cancel()
	for range ch {
	}
}
