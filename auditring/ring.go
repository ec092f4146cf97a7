package auditring

import (
	"context"
	"iter"
	"sync"
)

// DefaultSize is how many recent events a Ring keeps.
const DefaultSize = 4096

// subscriberBuffer is how many events may wait for one subscriber; a
// subscriber that falls further behind misses events (and is told so by a
// gap in Seq).
const subscriberBuffer = 256

// Record is an event with its sequence number in the ring.
type Record[E any] struct {
	// Seq grows by one per event, from 1.
	Seq   int64 `json:"seq"`
	Event E     `json:"event"`
}

// Ring keeps the most recent events, in whatever form E its owner keeps
// them, and hands new ones to subscribers. It is safe for concurrent use.
type Ring[E any] struct {
	mu   sync.Mutex // guards the fields below
	size int
	// events is a circular buffer of up to size records; the oldest is at
	// events[start] once it is full.
	events []Record[E]
	start  int
	seq    int64
	subs   map[chan Record[E]]struct{}
}

// New returns a ring of the given size (0: DefaultSize).
func New[E any](size int) *Ring[E] {
	if size <= 0 {
		size = DefaultSize
	}
	return &Ring[E]{size: size, subs: make(map[chan Record[E]]struct{})}
}

// Add records ev. The ring owns ev afterwards; callers must not change it.
func (r *Ring[E]) Add(ev E) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	rec := Record[E]{Seq: r.seq, Event: ev}
	if len(r.events) < r.size {
		r.events = append(r.events, rec)
	} else {
		r.events[r.start] = rec
		r.start = (r.start + 1) % r.size
	}
	for ch := range r.subs {
		select {
		case ch <- rec:
		default:
		}
	}
}

// Since returns the kept events with Seq greater than seq, oldest first.
func (r *Ring[E]) Since(seq int64) []Record[E] {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Record[E]
	for rec := range r.inOrder() {
		if rec.Seq > seq {
			out = append(out, rec)
		}
	}
	return out
}

// inOrder yields the kept records oldest first; r.mu must be held.
func (r *Ring[E]) inOrder() iter.Seq[Record[E]] {
	return func(yield func(Record[E]) bool) {
		for i := range r.events {
			if !yield(r.events[(r.start+i)%len(r.events)]) {
				return
			}
		}
	}
}

// Find returns the kept events for which match is true, oldest first.
func (r *Ring[E]) Find(match func(E) bool) []Record[E] {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Record[E]
	for rec := range r.inOrder() {
		if match(rec.Event) {
			out = append(out, rec)
		}
	}
	return out
}

// Subscribe returns a channel of new events until ctx ends.
func (r *Ring[E]) Subscribe(ctx context.Context) <-chan Record[E] {
	ch := make(chan Record[E], subscriberBuffer)
	r.mu.Lock()
	r.subs[ch] = struct{}{}
	r.mu.Unlock()
	go func() {
		<-ctx.Done()
		r.mu.Lock()
		delete(r.subs, ch)
		close(ch)
		r.mu.Unlock()
	}()
	return ch
}

// Last returns the sequence number of the newest event (0 before the
// first).
func (r *Ring[E]) Last() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seq
}
