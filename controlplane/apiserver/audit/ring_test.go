package audit

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The ring's log file gets every event it records, one JSON line each, in
// the ring's order.
func TestRingWritesItsLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	r := NewRing(2)
	closer, err := r.OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"get", "list", "watch"} {
		ev := NewEvent()
		ev.Verb = verb
		r.Add(ev)
	}
	closer.Close()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var verbs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if ev.APIVersion != "audit.k8s.io/v1" || ev.Kind != "Event" {
			t.Errorf("line %q: want an audit.k8s.io/v1 Event", sc.Text())
		}
		verbs = append(verbs, ev.Verb)
	}
	if len(verbs) != 3 || verbs[0] != "get" || verbs[2] != "watch" {
		t.Errorf("log verbs %v, want get list watch", verbs)
	}
	if recs := r.Since(0); len(recs) != 2 || recs[0].Seq != 2 {
		t.Errorf("the ring keeps %+v, want the last two", recs)
	}
}
