package auditring

import (
	"context"
	"iter"
	"sync"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// DefaultSize is how many recent events a Ring keeps.
const DefaultSize = 4096

// subscriberBuffer is how many events may wait for one subscriber; a
// subscriber that falls further behind misses events (and is told so by a
// gap in Seq).
const subscriberBuffer = 256

// Record is an event with its sequence number in the ring.
type Record struct {
	// Seq grows by one per event, from 1.
	Seq   int64          `json:"seq"`
	Event *auditv1.Event `json:"event"`
}

// Ring keeps the most recent events and hands new ones to subscribers. It
// is safe for concurrent use.
type Ring struct {
	mu   sync.Mutex // guards the fields below
	size int
	// events is a circular buffer of up to size records; the oldest is at
	// events[start] once it is full.
	events []Record
	start  int
	seq    int64
	subs   map[chan Record]struct{}
}

// New returns a ring of the given size (0: DefaultSize).
func New(size int) *Ring {
	if size <= 0 {
		size = DefaultSize
	}
	return &Ring{size: size, subs: make(map[chan Record]struct{})}
}

// Add records ev. The ring owns ev afterwards; callers must not change it.
func (r *Ring) Add(ev *auditv1.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	rec := Record{Seq: r.seq, Event: ev}
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
func (r *Ring) Since(seq int64) []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Record
	for rec := range r.inOrder() {
		if rec.Seq > seq {
			out = append(out, rec)
		}
	}
	return out
}

// inOrder yields the kept records oldest first; r.mu must be held.
func (r *Ring) inOrder() iter.Seq[Record] {
	return func(yield func(Record) bool) {
		for i := range r.events {
			if !yield(r.events[(r.start+i)%len(r.events)]) {
				return
			}
		}
	}
}

// Find returns the kept events for which match is true, oldest first.
func (r *Ring) Find(match func(*auditv1.Event) bool) []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Record
	for rec := range r.inOrder() {
		if match(rec.Event) {
			out = append(out, rec)
		}
	}
	return out
}

// Subscribe returns a channel of new events until ctx ends.
func (r *Ring) Subscribe(ctx context.Context) <-chan Record {
	ch := make(chan Record, subscriberBuffer)
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
func (r *Ring) Last() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seq
}
