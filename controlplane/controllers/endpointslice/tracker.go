package endpointslice

import (
	"sync"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// deletionExpected marks a slice the controller deleted.
const deletionExpected = -1

// tracker remembers the generation of every slice the controller wrote, by
// Service, as upstream's EndpointSliceTracker does: a sync whose informer
// cache has not yet seen those writes (a created slice missing, an older
// generation, a deleted slice still there) would write again, and make a
// second slice for the same endpoints; it waits instead.
type tracker struct {
	mu   sync.Mutex
	gens map[types.UID]map[types.UID]int64
}

func newTracker() *tracker { return &tracker{gens: map[types.UID]map[types.UID]int64{}} }

// wrote records a slice as the API server returned it from a create or an
// update for the Service svcUID.
func (t *tracker) wrote(svcUID types.UID, s *discoveryv1.EndpointSlice) {
	t.set(svcUID, s.UID, s.Generation)
}

// deleting records that the controller deleted s.
func (t *tracker) deleting(svcUID types.UID, s *discoveryv1.EndpointSlice) {
	t.set(svcUID, s.UID, deletionExpected)
}

func (t *tracker) set(svcUID, sliceUID types.UID, gen int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.gens[svcUID]
	if m == nil {
		m = map[types.UID]int64{}
		t.gens[svcUID] = m
	}
	m[sliceUID] = gen
}

// gone forgets a slice the informer saw deleted.
func (t *tracker) gone(s *discoveryv1.EndpointSlice) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for svc, m := range t.gens {
		if _, ok := m[s.UID]; ok {
			delete(m, s.UID)
			if len(m) == 0 {
				delete(t.gens, svc)
			}
		}
	}
}

// forget drops what is known of a Service that is gone.
func (t *tracker) forget(svcUID types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.gens, svcUID)
}

// stale reports whether the cached slices of the Service svcUID are older
// than what the controller wrote.
func (t *tracker) stale(svcUID types.UID, cached []*discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.gens[svcUID]
	seen := make(map[types.UID]bool, len(cached))
	for _, s := range cached {
		seen[s.UID] = true
		gen, ok := m[s.UID]
		if !ok {
			continue
		}
		if gen == deletionExpected || gen > s.Generation {
			return true
		}
	}
	for uid, gen := range m {
		if gen != deletionExpected && !seen[uid] {
			return true
		}
	}
	return false
}
