package endpointslicemirroring

import (
	"sync"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// deletionExpected marks a slice the controller deleted.
const deletionExpected = -1

// tracker remembers the generation of every slice the controller wrote, by
// the Endpoints key (namespace/name) the slice's service-name label names,
// as upstream's EndpointSliceTracker: a sync whose informer cache has not
// yet seen those writes would write again and make a second slice for the
// same addresses; it waits instead.
type tracker struct {
	// mu guards gens.
	mu   sync.Mutex
	gens map[string]map[types.UID]int64
}

func newTracker() *tracker { return &tracker{gens: map[string]map[types.UID]int64{}} }

// keyOf is the Endpoints key a slice mirrors.
func keyOf(s *discoveryv1.EndpointSlice) string {
	return s.Namespace + "/" + s.Labels[discoveryv1.LabelServiceName]
}

// wrote records a slice as the API server returned it from a create or an
// update.
func (t *tracker) wrote(s *discoveryv1.EndpointSlice) { t.set(s, s.Generation) }

// deleting records that the controller deleted s.
func (t *tracker) deleting(s *discoveryv1.EndpointSlice) { t.set(s, deletionExpected) }

func (t *tracker) set(s *discoveryv1.EndpointSlice, gen int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.gens[keyOf(s)]
	if m == nil {
		m = map[types.UID]int64{}
		t.gens[keyOf(s)] = m
	}
	m[s.UID] = gen
}

// has reports whether s is tracked.
func (t *tracker) has(s *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.gens[keyOf(s)][s.UID]
	return ok
}

// shouldSync reports whether the informer's s is news to the controller:
// not a slice it wrote, or newer than what it wrote.
func (t *tracker) shouldSync(s *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	gen, ok := t.gens[keyOf(s)][s.UID]
	return !ok || s.Generation > gen
}

// gone forgets a slice the informer saw deleted, and reports whether the
// controller expected that deletion.
func (t *tracker) gone(s *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	m, ok := t.gens[keyOf(s)]
	if !ok {
		return true
	}
	gen, ok := m[s.UID]
	delete(m, s.UID)
	return !ok || gen == deletionExpected
}

// forget drops what is known of the Endpoints key.
func (t *tracker) forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.gens, key)
}

// stale reports whether the cached slices of the Endpoints key are older
// than what the controller wrote: one it wrote is missing or of an older
// generation, or one it deleted is still there.
func (t *tracker) stale(key string, cached []*discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.gens[key]
	seen := make(map[types.UID]bool, len(cached))
	for _, s := range cached {
		seen[s.UID] = true
		if gen, ok := m[s.UID]; ok && (gen == deletionExpected || gen > s.Generation) {
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
