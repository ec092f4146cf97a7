package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	"github.com/glassplane/glassplane/api/v1alpha1"
	"github.com/glassplane/glassplane/controlplane/scheduler/explain"
)

// Writing decision records.
const (
	// recordWorkers write records concurrently with scheduling.
	recordWorkers = 4
	// recordRetries bounds the attempts to write one pod's record.
	recordRetries = 5
	// recordTimeout bounds one request about a record.
	recordTimeout = 30 * time.Second
)

// decisionClient reads and writes SchedulingDecisions
// (glassplane.io/v1alpha1). Errors are the API's Status errors.
type decisionClient interface {
	Get(ctx context.Context, namespace, name string) (*v1alpha1.SchedulingDecision, error)
	Create(ctx context.Context, r *v1alpha1.SchedulingDecision) error
	Update(ctx context.Context, r *v1alpha1.SchedulingDecision) error
}

// decisionStore writes every attempt into the pod's decision record, the
// SchedulingDecision of the pod's name in its namespace (explain.Record),
// off the scheduling loop: record queues the attempt and a worker appends
// the queued attempts of a pod with one write. The record is owned by its
// pod, so the garbage collector deletes it with the pod. Attempts stay in
// memory only until written, and only compressed: when the API is slower
// than the scheduler (thousands of pods bound faster than their records
// are written) the queue holds each attempt as a few kilobytes the garbage
// collector need not scan, not the hundreds of kilobytes of a 1,000-node
// Decision.
type decisionStore struct {
	// api is nil when the scheduler's client cannot reach the API's
	// glassplane.io group (a fake clientset): nothing is recorded then.
	api   decisionClient
	log   *slog.Logger
	max   int
	queue workqueue.TypedRateLimitingInterface[string]

	mu   sync.Mutex // guards pods
	pods map[string]*podRecord
}

// podRecord is what the store knows about one pod's record.
type podRecord struct {
	namespace, name string
	uid             types.UID
	// pending are the attempts not yet written, oldest first, each the
	// compressed History of the pod holding that attempt alone.
	pending [][]byte
	// exists is set once the record is known to be in the API.
	exists bool
}

func newDecisionStore(api decisionClient, log *slog.Logger, max int) *decisionStore {
	return &decisionStore{
		api:   api,
		log:   log,
		max:   max,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), workqueue.TypedRateLimitingQueueConfig[string]{Name: "decision-records"}),
		pods:  map[string]*podRecord{},
	}
}

// record queues d, an attempt for pod, to be appended to its record. It
// compresses d on the caller's goroutine (the binding goroutine, or the
// scheduling loop for a failed attempt).
func (s *decisionStore) record(pod *v1.Pod, d explain.Decision) {
	if blob := s.encode(pod, d); blob != nil {
		s.add(pod, blob)
	}
}

// encode compresses d, an attempt for pod, into what add queues; nil if it
// cannot (logged) or records are not kept.
func (s *decisionStore) encode(pod *v1.Pod, d explain.Decision) []byte {
	if s.api == nil {
		return nil
	}
	key := pod.Namespace + "/" + pod.Name
	blob, err := explain.EncodeHistory(explain.History{Pod: key, UID: string(pod.UID), Attempts: []explain.Decision{d}})
	if err != nil {
		s.log.Error("not recording the scheduling attempt", "pod", key, "err", err)
		return nil
	}
	return blob
}

// add queues blob, an attempt for pod that encode compressed.
func (s *decisionStore) add(pod *v1.Pod, blob []byte) {
	key := pod.Namespace + "/" + pod.Name
	s.mu.Lock()
	r := s.pods[key]
	if r == nil || r.uid != pod.UID {
		r = &podRecord{namespace: pod.Namespace, name: pod.Name, uid: pod.UID}
		s.pods[key] = r
	}
	r.pending = append(r.pending, blob)
	if n := len(r.pending) - s.max; n > 0 {
		r.pending = append([][]byte(nil), r.pending[n:]...)
	}
	s.mu.Unlock()
	s.queue.Add(key)
}

// decodePending returns the attempts of pending blobs, oldest first.
func decodePending(pending [][]byte) ([]explain.Decision, error) {
	var out []explain.Decision
	for _, b := range pending {
		h, err := explain.DecodeHistory(b)
		if err != nil {
			return nil, err
		}
		out = append(out, h.Attempts...)
	}
	return out, nil
}

// pendingFor returns the pod's attempts not yet written, and its uid.
func (s *decisionStore) pendingFor(key string) ([]explain.Decision, types.UID) {
	s.mu.Lock()
	r := s.pods[key]
	if r == nil {
		s.mu.Unlock()
		return nil, ""
	}
	pending, uid := append([][]byte(nil), r.pending...), r.uid
	s.mu.Unlock()
	ds, err := decodePending(pending)
	if err != nil {
		s.log.Error("failed to read pending scheduling attempts", "pod", key, "err", err)
	}
	return ds, uid
}

// forget drops what the store holds about a deleted pod: its attempts not
// yet written are not written (the garbage collector deletes the record).
func (s *decisionStore) forget(pod *v1.Pod) {
	key := pod.Namespace + "/" + pod.Name
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.pods[key]; r != nil && r.uid == pod.UID {
		delete(s.pods, key)
	}
}

// run writes records until ctx ends.
func (s *decisionStore) run(ctx context.Context) {
	if s.api == nil {
		s.log.Warn("not keeping decision records: the scheduler's client cannot reach glassplane.io/v1alpha1 schedulingdecisions")
		<-ctx.Done()
		s.queue.ShutDown()
		return
	}
	var wg sync.WaitGroup
	for range recordWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s.processNext(ctx) {
			}
		}()
	}
	<-ctx.Done()
	s.queue.ShutDown()
	wg.Wait()
}

func (s *decisionStore) processNext(ctx context.Context) bool {
	key, quit := s.queue.Get()
	if quit {
		return false
	}
	defer s.queue.Done(key)
	err := s.sync(ctx, key)
	switch {
	case err == nil:
		s.queue.Forget(key)
	case ctx.Err() != nil:
		s.log.Warn("not writing the decision record", "pod", key, "err", err)
		s.queue.Forget(key)
	case s.queue.NumRequeues(key) < recordRetries:
		s.log.Debug("failed to write decision record, will retry", "pod", key, "err", err)
		s.queue.AddRateLimited(key)
	default:
		s.log.Error("failed to write decision record, giving up", "pod", key, "err", err)
		s.queue.Forget(key)
		s.mu.Lock()
		if r := s.pods[key]; r != nil {
			r.pending = nil
		}
		s.mu.Unlock()
	}
	return true
}

// sync appends the pending attempts of the pod of key's name to its
// record: a Create for a new record, else a read, merge and Update (which
// fails on a concurrent change and is retried). A record left by an
// earlier pod of the same name is replaced, and owned by the new pod.
func (s *decisionStore) sync(ctx context.Context, key string) error {
	s.mu.Lock()
	r := s.pods[key]
	if r == nil || len(r.pending) == 0 {
		s.mu.Unlock()
		return nil
	}
	rec := *r
	pending := append([][]byte(nil), r.pending...)
	s.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, recordTimeout)
	defer cancel()
	attempts, err := decodePending(pending)
	if err != nil {
		return err
	}
	h := explain.History{Pod: key, UID: string(rec.uid), Attempts: attempts}

	written := false
	if !rec.exists {
		err := s.api.Create(ctx, explain.Record(rec.namespace, rec.name, rec.uid, explain.Cap(h, s.max)))
		switch {
		case err == nil:
			written = true
		case !apierrors.IsAlreadyExists(err):
			return fmt.Errorf("failed to create decision record %q: %w", key, err)
		}
	}
	if !written {
		cur, err := s.api.Get(ctx, rec.namespace, rec.name)
		if apierrors.IsNotFound(err) {
			s.markExists(key, rec.uid, false)
			return fmt.Errorf("decision record %q disappeared", key)
		}
		if err != nil {
			return fmt.Errorf("failed to read decision record %q: %w", key, err)
		}
		if cur.PodUID == rec.uid {
			old := explain.HistoryOf(cur)
			h.Attempts, h.Dropped = append(old.Attempts, attempts...), old.Dropped
		}
		next := explain.Record(rec.namespace, rec.name, rec.uid, explain.Cap(h, s.max))
		owners := next.OwnerReferences
		next.ObjectMeta = *cur.ObjectMeta.DeepCopy()
		next.ManagedFields = nil
		if cur.PodUID != rec.uid {
			next.OwnerReferences = owners
		}
		if err := s.api.Update(ctx, next); err != nil {
			return fmt.Errorf("failed to update decision record %q: %w", key, err)
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.pods[key]; r != nil && r.uid == rec.uid {
		r.exists = true
		// Attempts recorded meanwhile stay pending.
		if len(r.pending) >= len(pending) {
			r.pending = append([][]byte(nil), r.pending[len(pending):]...)
		}
		if len(r.pending) > 0 {
			s.queue.Add(key)
		}
	}
	return nil
}

func (s *decisionStore) markExists(key string, uid types.UID, exists bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.pods[key]; r != nil && r.uid == uid {
		r.exists = exists
	}
}

// errNoRecords is Decisions' cause when records are not kept.
var errNoRecords = errors.New("decision records are not kept")

// readRecord reads the record of pod namespace/name from the API; a
// missing record is an empty History.
func (s *decisionStore) readRecord(ctx context.Context, namespace, name string) (explain.History, error) {
	if s.api == nil {
		return explain.History{}, errNoRecords
	}
	r, err := s.api.Get(ctx, namespace, name)
	if apierrors.IsNotFound(err) {
		return explain.History{}, nil
	}
	if err != nil {
		return explain.History{}, err
	}
	return explain.HistoryOf(r), nil
}

// Decisions returns the pod's recorded attempts, oldest first: those in
// its decision record in the API and those not yet written.
func (s *Scheduler) Decisions(namespace, name string) []explain.Decision {
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	h, err := s.decisions.readRecord(ctx, namespace, name)
	if err != nil {
		s.log.Debug("failed to read decision record", "pod", namespace+"/"+name, "err", err)
	}
	pending, uid := s.decisions.pendingFor(namespace + "/" + name)
	switch {
	case uid == "":
		// Nothing of the pod's waits to be written.
		return h.Attempts
	case h.UID != string(uid):
		// The record is missing, or an earlier pod's of the same name.
		return pending
	}
	// A write may land between reading the record and the pending list:
	// the attempts it wrote are then in both.
	out := h.Attempts
	for _, d := range pending {
		if len(out) == 0 || d.Attempt > out[len(out)-1].Attempt {
			out = append(out, d)
		}
	}
	return out
}
