package kube

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/glassplane/glassplane/web/source"
)

// change is one event of a resource's watch as the store keeps it.
type change struct {
	source.Event
	// modRevision is the object's resourceVersion: Event.Revision, but
	// for the objects a resource's first list sends as puts, whose
	// Event.Revision is the list's.
	modRevision int64
}

// feed is the backlog of the changes the store's own watches (one per
// resource, from Run) saw, and the watches served from it. Changes of
// different resources arrive in about, not exactly, revision order: each
// resource's watch is its own stream.
type feed struct {
	size int

	mu sync.Mutex // guards the fields below
	// started is set once the watches run from revision from.
	started bool
	// ring holds up to size changes in arrival order, the oldest at
	// ring[start] once full.
	ring  []change
	start int
	// from is the revision after which every change is in ring (or yet
	// to arrive): the watches' start, raised by evictions.
	from int64
	// rev is the newest revision seen (changes and bookmarks).
	rev  int64
	subs map[*subscriber]struct{}
	// stopped is set when Run ends: no watch is served any more.
	stopped bool
}

func newFeed(size int) *feed { return &feed{size: size, subs: map[*subscriber]struct{}{}} }

// begin marks the store's watches started at revision rev.
func (f *feed) begin(rev int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started, f.from, f.rev = true, rev, max(f.rev, rev)
}

// revision is the newest revision seen, 0 before the watches start.
func (f *feed) revision() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.started {
		return 0
	}
	return f.rev
}

// covers reports whether a watch from revision from can be served from
// the backlog: whether every change after it is kept or yet to arrive.
func (f *feed) covers(from int64) (covered, started bool, newest int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.started && !f.stopped && from >= f.from, f.started, f.rev
}

// add keeps c and hands it to the watches it concerns.
func (f *feed) add(c change) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.ring) < f.size {
		f.ring = append(f.ring, c)
	} else {
		f.from = max(f.from, f.ring[f.start].Revision)
		f.ring[f.start] = c
		f.start = (f.start + 1) % f.size
	}
	f.rev = max(f.rev, c.Revision)
	for sub := range f.subs {
		if c.Revision > sub.from && strings.HasPrefix(c.Key, sub.prefix) {
			sub.push(c.Event)
		}
	}
}

// progress records that the watches reached revision rev (a bookmark).
func (f *feed) progress(rev int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rev = max(f.rev, rev)
}

// stop ends every watch served from the backlog, for good.
func (f *feed) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = true
	for sub := range f.subs {
		sub.end()
		delete(f.subs, sub)
	}
}

// inOrder returns the kept changes oldest first; f.mu must be held.
func (f *feed) inOrder() []change {
	return append(slices.Clone(f.ring[f.start:]), f.ring[:f.start]...)
}

// subscribe serves a watch of the changes under prefix after revision
// from (the kept ones first), until ctx ends or the backlog cannot keep
// up with it. ok is false when the backlog does not cover from.
func (f *feed) subscribe(ctx context.Context, prefix string, from int64) (ch <-chan source.Event, ok bool) {
	f.mu.Lock()
	if !f.started || f.stopped || from < f.from {
		f.mu.Unlock()
		return nil, false
	}
	sub := &subscriber{prefix: prefix, from: from, limit: f.size, wake: make(chan struct{}, 1)}
	for _, c := range f.inOrder() {
		if c.Revision > from && strings.HasPrefix(c.Key, prefix) {
			sub.pending = append(sub.pending, c.Event)
		}
	}
	f.subs[sub] = struct{}{}
	f.mu.Unlock()
	out := make(chan source.Event)
	go func() {
		defer close(out)
		sub.pump(ctx, out)
		f.mu.Lock()
		delete(f.subs, sub)
		f.mu.Unlock()
	}()
	return out, true
}

// newest returns the n most recently changed keys under prefix as of rev
// (0: now), newest first, when the backlog holds n of them.
func (f *feed) newest(prefix string, n int, rev int64) ([]source.KeyValue, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.started || (rev > 0 && (rev < f.from || rev > f.rev)) {
		return nil, false
	}
	if n <= 0 {
		return nil, true
	}
	latest := map[string]change{}
	for _, c := range f.ring {
		if !strings.HasPrefix(c.Key, prefix) || (rev > 0 && c.Revision > rev) {
			continue
		}
		if old, ok := latest[c.Key]; !ok || c.Revision >= old.Revision {
			latest[c.Key] = c
		}
	}
	var out []source.KeyValue
	for _, c := range latest {
		if c.Type == source.EventPut {
			out = append(out, source.KeyValue{Key: c.Key, Value: c.Value, ModRevision: c.modRevision})
		}
	}
	if len(out) < n {
		return nil, false
	}
	slices.SortFunc(out, func(a, b source.KeyValue) int {
		return cmp.Or(cmp.Compare(b.ModRevision, a.ModRevision), strings.Compare(a.Key, b.Key))
	})
	return out[:n], true
}

// subscriber is one watch served from the backlog.
type subscriber struct {
	prefix string
	from   int64
	// limit is how many changes may wait for the caller before the watch
	// ends (and its caller resumes from the backlog).
	limit int
	wake  chan struct{}

	mu      sync.Mutex // guards the fields below
	pending []source.Event
	ended   bool
}

// push queues ev, or ends the watch when too many wait.
func (s *subscriber) push(ev source.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	if len(s.pending) >= s.limit {
		s.ended = true
	} else {
		s.pending = append(s.pending, ev)
	}
	s.signal()
}

// end ends the watch once what is queued is delivered.
func (s *subscriber) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	s.signal()
}

func (s *subscriber) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// pump delivers the queued changes to out until the watch ends (and its
// queue is empty) or ctx ends.
func (s *subscriber) pump(ctx context.Context, out chan<- source.Event) {
	for {
		s.mu.Lock()
		batch, ended := s.pending, s.ended
		s.pending = nil
		s.mu.Unlock()
		for _, ev := range batch {
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
		if ended && len(batch) == 0 {
			return
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return
		}
	}
}
