package audit

import "testing"

// The ring keeps the last size events, oldest first, however many came.
func TestRingKeepsTheNewestInOrder(t *testing.T) {
	r := NewRing(3)
	for i := range 7 {
		r.Add(&Event{Verb: string(rune('a' + i))})
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
	found := r.Find(func(ev *Event) bool { return ev.Verb != "f" })
	if len(found) != 2 || found[0].Event.Verb != "e" || found[1].Event.Verb != "g" {
		t.Errorf("Find = %+v, want e then g", found)
	}
}
