package scheduler

import (
	"sync"

	"github.com/glassplane/glassplane/controlplane/scheduler/explain"
)

// decisionStore keeps the last decisions of each pod.
type decisionStore struct {
	max   int
	mu    sync.Mutex // guards byPod
	byPod map[string][]explain.Decision
}

func newDecisionStore(max int) *decisionStore {
	return &decisionStore{max: max, byPod: map[string][]explain.Decision{}}
}

func (s *decisionStore) record(d explain.Decision) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ds := append(s.byPod[d.Pod], d)
	if len(ds) > s.max {
		ds = append([]explain.Decision(nil), ds[len(ds)-s.max:]...)
	}
	s.byPod[d.Pod] = ds
}

func (s *decisionStore) get(key string) []explain.Decision {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]explain.Decision(nil), s.byPod[key]...)
}

func (s *decisionStore) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byPod, key)
}

// Decisions returns the last decisions the scheduler made for the pod,
// oldest first. They are forgotten when the pod is deleted.
func (s *Scheduler) Decisions(namespace, name string) []explain.Decision {
	return s.decisions.get(namespace + "/" + name)
}
