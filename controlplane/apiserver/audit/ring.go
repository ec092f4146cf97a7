package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/glassplane/glassplane/auditring"
)

// DefaultRingSize is how many recent events a Ring keeps.
const DefaultRingSize = auditring.DefaultSize

// Record is an event with its sequence number in the ring.
type Record = auditring.Record

// Ring keeps the most recent audit events and hands new ones to
// subscribers (auditring.Ring), after its policy decided each event's level
// and its log file, if any, got the event as a JSON line. It is safe for
// concurrent use.
type Ring struct {
	*auditring.Ring
	mu  sync.Mutex // guards the fields below, and keeps the log in the ring's order
	log io.Writer
	// policy decides each event's level; nil records every event as given.
	policy *Policy
}

// NewRing returns a ring of the given size (0: DefaultRingSize).
func NewRing(size int) *Ring {
	return &Ring{Ring: auditring.New(size)}
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

// Add records ev, unless the ring's policy says not to. The ring owns ev
// afterwards; callers must not change it.
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
	r.Ring.Add(ev)
}
