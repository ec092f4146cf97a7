package controllerutil

import (
	"sync"
	"time"
)

// ExpectationsTimeout is how long a controller trusts its expectations
// before syncing anyway, as Kubernetes' ExpectationsTimeout.
const ExpectationsTimeout = 5 * time.Minute

// Expectations remembers, per controller key, how many creations and
// deletions it has asked for and not yet seen in its informer, so a slow
// watch never makes it act twice (Kubernetes' ControllerExpectations).
type Expectations struct {
	mu sync.Mutex // guards byKey
	// byKey maps a controller key to its outstanding adds and deletes.
	byKey map[string]*expectation
}

type expectation struct {
	add, del  int64
	timestamp time.Time
}

// NewExpectations returns empty expectations.
func NewExpectations() *Expectations {
	return &Expectations{byKey: map[string]*expectation{}}
}

// Satisfied reports whether key may sync: it has no outstanding
// expectations, or they have expired.
func (e *Expectations) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.byKey[key]
	if !ok {
		return true
	}
	if x.add <= 0 && x.del <= 0 {
		return true
	}
	return time.Since(x.timestamp) > ExpectationsTimeout
}

// Expect sets key's expected creations and deletions.
func (e *Expectations) Expect(key string, add, del int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.byKey[key] = &expectation{add: int64(add), del: int64(del), timestamp: time.Now()}
}

// CreationObserved lowers key's expected creations by one.
func (e *Expectations) CreationObserved(key string) { e.lower(key, 1, 0) }

// DeletionObserved lowers key's expected deletions by one.
func (e *Expectations) DeletionObserved(key string) { e.lower(key, 0, 1) }

// LowerExpectations lowers key's expectations by add and del, for
// requests that failed or were skipped.
func (e *Expectations) LowerExpectations(key string, add, del int) {
	e.lower(key, int64(add), int64(del))
}

func (e *Expectations) lower(key string, add, del int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.byKey[key]; ok {
		x.add -= add
		x.del -= del
	}
}

// Delete forgets key.
func (e *Expectations) Delete(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byKey, key)
}
