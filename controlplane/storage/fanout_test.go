package storage

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestFanOutMatchesEveryWatchersFilter publishes random events to random
// watchers (plain and indexed, on nested prefixes) and checks that each
// watcher got exactly, in order, the events its prefix and index value
// select; then that closing the watchers leaves no routing behind.
func TestFanOutMatchesEveryWatchersFilter(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s := New(nil, Config{WatcherBuffer: 10000})
	podIndex := "/registry/pods/"
	nodeOf := func(v []byte) string {
		n, _, _ := strings.Cut(string(v), ":")
		return n
	}
	s.SetIndexer(podIndex, func(ev Event) (string, string) {
		prev := ""
		if ev.Type == EventPut && !ev.Created {
			prev = nodeOf(ev.PrevValue)
		}
		return nodeOf(ev.Value), prev
	})
	prefixes := []string{"/registry/", "/registry/pods/", "/registry/pods/ns1/", "/registry/pods/ns2/", "/registry/pods/ns1/p1", "/registry/nodes/", "/registry/configmaps/ns1/"}
	nodes := []string{"", "n1", "n2", "n3"}

	var watchers []*watcher
	s.mu.Lock()
	for range 200 {
		w := newWatcher(prefixes[rng.IntN(len(prefixes))], 10000)
		if strings.HasPrefix(w.prefix, podIndex) && rng.IntN(2) == 0 {
			w.index, w.value = podIndex, nodes[rng.IntN(len(nodes))]
		}
		s.addWatcher(w)
		watchers = append(watchers, w)
	}
	s.mu.Unlock()

	var events []Event
	for i := range 2000 {
		kind := []string{"pods", "pods", "nodes", "configmaps"}[rng.IntN(4)]
		key := fmt.Sprintf("/registry/%s/ns%d/p%d", kind, 1+rng.IntN(2), 1+rng.IntN(3))
		ev := Event{Type: EventPut, Key: key, Revision: int64(i + 1), Value: []byte(nodes[rng.IntN(len(nodes))] + ":x")}
		switch rng.IntN(3) {
		case 0:
			ev.Created = true
		case 1:
			ev.PrevValue = []byte(nodes[rng.IntN(len(nodes))] + ":y")
		default:
			ev.Type, ev.PrevValue = EventDelete, ev.Value
		}
		events = append(events, ev)
	}
	for i := 0; i < len(events); i += 7 {
		s.publish(events[i:min(i+7, len(events))], events[min(i+7, len(events))-1].Revision)
	}

	for i, w := range watchers {
		var want []int64
		for _, ev := range events {
			if !strings.HasPrefix(ev.Key, w.prefix) {
				continue
			}
			if w.index != "" {
				cur, prev := s.indexers[w.index](ev)
				if cur != w.value && prev != w.value {
					continue
				}
			}
			want = append(want, ev.Revision)
		}
		// Most wait in the watcher's overflow, moved on by its drain
		// goroutine as they are read.
		var got []int64
		for len(got) < len(want) {
			select {
			case ev := <-w.ch:
				got = append(got, ev.Revision)
			case <-time.After(10 * time.Second):
				t.Fatalf("watcher %d got %d events, then nothing; want %d", i, len(got), len(want))
			}
		}
		select {
		case ev := <-w.ch:
			t.Fatalf("watcher %d got an event it did not select: revision %d", i, ev.Revision)
		default:
		}
		if !slices.Equal(got, want) {
			t.Fatalf("watcher %d (prefix %q, index value %q) got %d events, want %d", i, w.prefix, w.value, len(got), len(want))
		}
	}

	s.mu.Lock()
	for _, w := range watchers {
		s.closeWatcher(w)
	}
	groups, left := len(s.groups), len(s.watchers)
	s.mu.Unlock()
	if groups != 0 || left != 0 {
		t.Errorf("after closing every watcher: %d groups and %d watchers left", groups, left)
	}
}

// TestFanOutClosesAFullWatcherOnly: a watcher with more events waiting
// than its limit is closed and forgotten, after the events its channel
// holds, in order; the others of its group keep getting every event.
func TestFanOutClosesAFullWatcherOnly(t *testing.T) {
	s := New(nil, Config{})
	const n = watcherChanSize + 30
	slow := newWatcher("/registry/pods/", 2)
	fast := newWatcher("/registry/pods/", n-watcherChanSize) // room for all n, exactly
	s.mu.Lock()
	s.addWatcher(slow)
	s.addWatcher(fast)
	s.mu.Unlock()
	publish := func(i int) {
		s.publish([]Event{{Type: EventPut, Key: "/registry/pods/ns/p", Revision: int64(i + 1), Created: true}}, int64(i+1))
	}
	// The channels fill, one event overflows; once the slow watcher's
	// drain goroutine holds it (waiting for room in the channel), it still
	// counts against the limit.
	for i := range watcherChanSize + 1 {
		publish(i)
	}
	deadline := time.Now().Add(10 * time.Second)
	for slow.inFlight.Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the slow watcher's drain goroutine did not take the overflowing event")
		}
		time.Sleep(time.Millisecond)
	}
	closed := func(w *watcher) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return w.closed
	}
	publish(watcherChanSize + 1) // two wait: the limit
	if closed(slow) {
		t.Fatal("the slow watcher was closed with no more events waiting than its limit")
	}
	publish(watcherChanSize + 2) // one too many
	if !closed(slow) {
		t.Fatal("the slow watcher was not closed with more events waiting than its limit")
	}
	for i := watcherChanSize + 3; i < n; i++ {
		publish(i)
	}
	s.mu.Lock()
	slowClosed, fastClosed := slow.closed, fast.closed
	g, watchers := s.groups["/registry/pods/"], len(s.watchers)
	s.mu.Unlock()
	if !slowClosed || fastClosed {
		t.Fatalf("after %d events read by nobody: slow closed %v, fast closed %v", n, slowClosed, fastClosed)
	}
	if g == nil || g.size != 1 || watchers != 1 {
		t.Errorf("routing after closing the slow watcher: %+v, %d watchers", g, watchers)
	}
	read := func(w *watcher) (revs []int64) {
		for {
			select {
			case ev, ok := <-w.ch:
				if !ok {
					return revs
				}
				revs = append(revs, ev.Revision)
				if w == fast && len(revs) == n {
					return revs
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("stuck after %d events", len(revs))
			}
		}
	}
	slowGot := read(slow)
	// What waited behind the channel is dropped: the watcher resumes
	// from the last event it read.
	if want := watcherChanSize; len(slowGot) != want || !slices.IsSorted(slowGot) || slowGot[0] != 1 {
		t.Errorf("the slow watcher got %v before its channel closed; want the first %d, in order", slowGot, want)
	}
	for i, rev := range read(fast) {
		if rev != int64(i+1) {
			t.Fatalf("the fast watcher's event %d is revision %d", i, rev)
		}
	}
}

// TestPrevMemoFollowsTheKey checks that an event gets the Memo of the event
// that wrote its previous value while the store keeps it, that Recent
// hands out the same Memo, and that the Memo is let go after memoWindow
// more changes or after memoMaxAge.
func TestPrevMemoFollowsTheKey(t *testing.T) {
	s := New(nil, Config{})
	now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	put := func(key string, rev, prevRev int64) *Event {
		ev := &Event{Type: EventPut, Key: key, Value: []byte(fmt.Sprint(rev)), Revision: rev, Memo: &Memo{}}
		if prevRev > 0 {
			ev.PrevValue, ev.PrevRevision = []byte(fmt.Sprint(prevRev)), prevRev
		} else {
			ev.Created = true
		}
		s.mu.Lock()
		s.noteLatest(ev, 1, now)
		s.mu.Unlock()
		return ev
	}
	first := put("/registry/pods/ns/a", 1, 0)
	if first.PrevMemo != nil {
		t.Error("a created key's event has a PrevMemo")
	}
	second := put("/registry/pods/ns/a", 2, 1)
	if second.PrevMemo != first.Memo {
		t.Error("the second change of a key does not carry the first change's Memo")
	}
	if kv, ok := s.Recent("/registry/pods/ns/a"); !ok || kv.Memo != second.Memo || kv.ModRevision != 2 {
		t.Errorf("Recent = %+v, %v; want revision 2 with the second change's Memo", kv, ok)
	}
	// A previous value the store did not see written gets no Memo.
	if ev := put("/registry/pods/ns/a", 4, 3); ev.PrevMemo != nil {
		t.Error("an event whose previous revision the store did not deliver carries a PrevMemo")
	}

	// Past the window.
	rev := int64(5)
	put("/registry/pods/ns/b", rev, 0)
	for range memoWindow {
		rev++
		put("/registry/configmaps/ns/c", rev, rev-1)
	}
	if kv, ok := s.Recent("/registry/pods/ns/b"); !ok || kv.Memo != nil {
		t.Errorf("Recent of a key unchanged for %d changes = %+v, %v; want its value without a Memo", memoWindow, kv, ok)
	}
	if ev := put("/registry/pods/ns/b", rev+1, 5); ev.PrevMemo != nil {
		t.Error("an event carries the Memo of a change older than the memo window")
	}
	rev++
	if kv, _ := s.Recent("/registry/configmaps/ns/c"); kv == nil || kv.Memo == nil {
		t.Error("the newest change of a key has no Memo in Recent")
	}

	// Past the age: a quiet store lets go of its Memos at its next change.
	now = now.Add(memoMaxAge + time.Second)
	rev++
	last := put("/registry/configmaps/ns/c", rev, rev-2)
	if last.PrevMemo != nil {
		t.Error("an event carries the Memo of a change older than memoMaxAge")
	}
	if kv, _ := s.Recent("/registry/pods/ns/b"); kv == nil || kv.Memo != nil {
		t.Errorf("Recent of a key changed more than memoMaxAge ago = %+v; want its value without a Memo", kv)
	}
	if live := len(s.memoOrder) - s.memoHead; live != 1 {
		t.Errorf("%d changes hold Memos after a quiet spell, want 1 (the newest)", live)
	}
}
