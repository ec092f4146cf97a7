package source

import (
	"context"
	"iter"
	"sync"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// DefaultAuditSize is how many recent audit events an AuditLog keeps.
const DefaultAuditSize = 4096

// auditSubscriberBuffer is how many events may wait for one subscriber; a
// subscriber that falls further behind misses events (and is told so by a
// gap in Seq).
const auditSubscriberBuffer = 256

// AuditRecord is an audit event with its place in the dashboard's log.
type AuditRecord struct {
	// Seq grows by one per event, from 1.
	Seq   int64          `json:"seq"`
	Event *auditv1.Event `json:"event"`
}

// AuditLog keeps the most recent audit.k8s.io/v1 events the dashboard
// was given, from whichever source (Glassplane's auditevents API, an API
// server's audit webhook), and hands new ones to subscribers. It is safe
// for concurrent use.
type AuditLog struct {
	mu   sync.Mutex // guards the fields below
	size int
	// events is a circular buffer of up to size records; the oldest is at
	// events[start] once it is full.
	events []AuditRecord
	start  int
	seq    int64
	subs   map[chan AuditRecord]struct{}
}

// NewAuditLog returns a log of the given size (0: DefaultAuditSize).
func NewAuditLog(size int) *AuditLog {
	if size <= 0 {
		size = DefaultAuditSize
	}
	return &AuditLog{size: size, subs: make(map[chan AuditRecord]struct{})}
}

// Add records ev. The log owns ev afterwards; callers must not change it.
func (l *AuditLog) Add(ev *auditv1.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	rec := AuditRecord{Seq: l.seq, Event: ev}
	if len(l.events) < l.size {
		l.events = append(l.events, rec)
	} else {
		l.events[l.start] = rec
		l.start = (l.start + 1) % l.size
	}
	for ch := range l.subs {
		select {
		case ch <- rec:
		default:
		}
	}
}

// Since returns the kept events with Seq greater than seq, oldest first.
func (l *AuditLog) Since(seq int64) []AuditRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []AuditRecord
	for rec := range l.inOrder() {
		if rec.Seq > seq {
			out = append(out, rec)
		}
	}
	return out
}

// inOrder yields the kept records oldest first; l.mu must be held.
func (l *AuditLog) inOrder() iter.Seq[AuditRecord] {
	return func(yield func(AuditRecord) bool) {
		for i := range l.events {
			if !yield(l.events[(l.start+i)%len(l.events)]) {
				return
			}
		}
	}
}

// Find returns the kept events for which match is true, oldest first.
func (l *AuditLog) Find(match func(*auditv1.Event) bool) []AuditRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []AuditRecord
	for rec := range l.inOrder() {
		if match(rec.Event) {
			out = append(out, rec)
		}
	}
	return out
}

// Subscribe returns a channel of new events until ctx ends.
func (l *AuditLog) Subscribe(ctx context.Context) <-chan AuditRecord {
	ch := make(chan AuditRecord, auditSubscriberBuffer)
	l.mu.Lock()
	l.subs[ch] = struct{}{}
	l.mu.Unlock()
	go func() {
		<-ctx.Done()
		l.mu.Lock()
		delete(l.subs, ch)
		close(ch)
		l.mu.Unlock()
	}()
	return ch
}

// Last returns the sequence number of the newest event (0 before the
// first).
func (l *AuditLog) Last() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}
