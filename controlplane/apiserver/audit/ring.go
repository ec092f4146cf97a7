package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/glassplane/glassplane/auditring"
)

// DefaultRingSize is how many recent events a Ring keeps.
const DefaultRingSize = auditring.DefaultSize

// Record is a decoded event with its sequence number in the ring.
type Record = auditring.Record[*Event]

// EncodedRecord is an event as the ring keeps it, with its sequence
// number.
type EncodedRecord = auditring.Record[Encoded]

// Encoded is a recorded event as the ring keeps it: its protobuf encoding
// and what names it. A decoded event is dozens of small objects, every
// one of which the garbage collector visits in each cycle; an encoded one
// is one it never scans, and a protobuf watch of auditevents sends it
// without encoding it again.
type Encoded struct {
	// Name is the event's name as an AuditEvent: <auditID>.<stage>.
	Name string
	// Time is when the event reached its stage.
	Time time.Time
	// Proto is the audit.k8s.io/v1 Event's protobuf encoding.
	Proto []byte
}

// Decode returns the event e encodes.
func (e Encoded) Decode() (*Event, error) {
	ev := &Event{}
	if err := ev.Unmarshal(e.Proto); err != nil {
		return nil, fmt.Errorf("failed to decode audit event %s: %w", e.Name, err)
	}
	ev.TypeMeta = eventType
	return ev, nil
}

// Ring keeps the most recent audit events, encoded, and hands new ones to
// subscribers (auditring.Ring), after its policy decided each event's level
// and its log file, if any, got the event as a JSON line. It is safe for
// concurrent use.
type Ring struct {
	ring *auditring.Ring[Encoded]
	mu   sync.Mutex // guards the fields below, and keeps the log in the ring's order
	log  io.Writer
	// policy decides each event's level; nil records every event as given.
	policy *Policy
}

// NewRing returns a ring of the given size (0: DefaultRingSize).
func NewRing(size int) *Ring {
	return &Ring{ring: auditring.New[Encoded](size)}
}

// OpenLog makes the ring also write every event as one JSON line to path.
func (r *Ring) OpenLog(path string) (io.Closer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("failed to open audit log %q: %w", path, err)
	}
	r.mu.Lock()
	r.log = f
	r.mu.Unlock()
	return f, nil
}

// Add records ev, unless the ring's policy says not to; the policy sets
// its level and drops what that level leaves out. The ring keeps ev's
// encoding, not ev.
func (r *Ring) Add(ev *Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.policy != nil && !r.policy.Apply(ev) {
		return
	}
	if r.log != nil {
		if b, err := json.Marshal(ev); err == nil {
			r.log.Write(append(b, '\n'))
		}
	}
	b, err := ev.Marshal()
	if err != nil {
		// Only a bug makes a generated marshaller fail; the event is not
		// kept rather than kept wrong.
		return
	}
	r.ring.Add(Encoded{Name: fmt.Sprintf("%s.%s", ev.AuditID, ev.Stage), Time: ev.StageTimestamp.Time, Proto: b})
}

// Since returns the kept events with Seq greater than seq, oldest first,
// decoded.
func (r *Ring) Since(seq int64) []Record {
	return decoded(r.ring.Since(seq), nil)
}

// Find returns the kept events for which match is true, oldest first.
func (r *Ring) Find(match func(*Event) bool) []Record {
	return decoded(r.ring.Since(0), match)
}

// decoded decodes recs, leaving out those match (if not nil) refuses.
func decoded(recs []EncodedRecord, match func(*Event) bool) []Record {
	out := make([]Record, 0, len(recs))
	for _, rec := range recs {
		ev, err := rec.Event.Decode()
		if err != nil || (match != nil && !match(ev)) {
			continue
		}
		out = append(out, Record{Seq: rec.Seq, Event: ev})
	}
	return out
}

// SinceEncoded returns the kept events with Seq greater than seq, oldest
// first, as the ring keeps them.
func (r *Ring) SinceEncoded(seq int64) []EncodedRecord { return r.ring.Since(seq) }

// Subscribe returns a channel of new events, as the ring keeps them,
// until ctx ends; a subscriber that falls behind misses events, and sees
// a gap in Seq.
func (r *Ring) Subscribe(ctx context.Context) <-chan EncodedRecord { return r.ring.Subscribe(ctx) }

// Last returns the sequence number of the newest event (0 before the
// first).
func (r *Ring) Last() int64 { return r.ring.Last() }
