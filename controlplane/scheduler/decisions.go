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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"

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

// errRecordInTheWay is a ConfigMap of the record's name that is not a
// record: the scheduler leaves it alone.
var errRecordInTheWay = errors.New("a ConfigMap that is not a decision record has the record's name")

// decisionStore writes every attempt into the pod's decision record, a
// ConfigMap in the pod's namespace (see explain.RecordName), off the
// scheduling loop: record queues the attempt and a worker appends the
// queued attempts of a pod with one write. Attempts stay in memory only
// until written, and only compressed: when the API is slower than the
// scheduler (thousands of pods bound faster than their records are
// written) the queue holds each attempt as the bytes of its record, a few
// kilobytes the garbage collector need not scan, not the hundreds of
// kilobytes of a 1,000-node Decision.
type decisionStore struct {
	client kubernetes.Interface
	log    *slog.Logger
	max    int
	queue  workqueue.TypedRateLimitingInterface[string]

	mu   sync.Mutex // guards pods
	pods map[string]*podRecord
}

// podRecord is what the store knows about one pod's record.
type podRecord struct {
	namespace, name string
	uid             types.UID
	// pending are the attempts not yet written, oldest first, each the
	// compressed History of the pod holding that attempt alone (a new
	// record's whole content when it is the only one).
	pending [][]byte
	// exists is set once the record is known to be in the API.
	exists bool
}

func newDecisionStore(client kubernetes.Interface, log *slog.Logger, max int) *decisionStore {
	return &decisionStore{
		client: client,
		log:    log,
		max:    max,
		queue:  workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), workqueue.TypedRateLimitingQueueConfig[string]{Name: "decision-records"}),
		pods:   map[string]*podRecord{},
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
// cannot (logged).
func (s *decisionStore) encode(pod *v1.Pod, d explain.Decision) []byte {
	key := pod.Namespace + "/" + pod.Name
	blob, _, err := explain.EncodeHistory(explain.History{Pod: key, UID: string(pod.UID), Attempts: []explain.Decision{d}}, s.max)
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

// forget drops what the store holds about a deleted pod; its record goes
// with the pod through the garbage collector.
func (s *decisionStore) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pods, key)
}

// run writes records until ctx ends.
func (s *decisionStore) run(ctx context.Context) {
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
	case errors.Is(err, errRecordInTheWay), ctx.Err() != nil:
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

// sync appends the pod's pending attempts to its record: a Create for a
// new record, else a read, merge and Update (which fails on a concurrent
// change and is retried).
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
	cms := s.client.CoreV1().ConfigMaps(rec.namespace)
	name := explain.RecordName(rec.name)
	h := explain.History{Pod: key, UID: string(rec.uid)}
	var attempts []explain.Decision
	var err error
	if len(pending) > 1 || rec.exists {
		// The pending attempts join others: decode them.
		if attempts, err = decodePending(pending); err != nil {
			return err
		}
	}

	written := false
	if !rec.exists {
		var data []byte
		if len(pending) == 1 {
			// A new record of one attempt: the pending bytes are its content.
			data = pending[0]
		} else {
			h.Attempts = attempts
			if data, _, err = explain.EncodeHistory(h, s.max); err != nil {
				return err
			}
		}
		_, err = cms.Create(ctx, s.recordObject(&rec, name, data), metav1.CreateOptions{})
		switch {
		case err == nil:
			written = true
		case apierrors.IsNotFound(err):
			// The namespace is gone, and the pod with it.
			return nil
		case !apierrors.IsAlreadyExists(err):
			return fmt.Errorf("failed to create decision record %q: %w", rec.namespace+"/"+name, err)
		}
	}
	if !written {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			s.markExists(key, rec.uid, false)
			return fmt.Errorf("decision record %q disappeared", rec.namespace+"/"+name)
		}
		if err != nil {
			return fmt.Errorf("failed to read decision record %q: %w", rec.namespace+"/"+name, err)
		}
		if cm.Labels[explain.RecordLabel] != explain.RecordLabelValue {
			return errRecordInTheWay
		}
		if len(attempts) == 0 {
			if attempts, err = decodePending(pending); err != nil {
				return err
			}
		}
		if old, err := explain.DecodeHistory(cm.BinaryData[explain.RecordKey]); err == nil && old.UID == string(rec.uid) {
			h.Attempts, h.Dropped = old.Attempts, old.Dropped
		}
		h.Attempts = append(h.Attempts, attempts...)
		data, _, err := explain.EncodeHistory(h, s.max)
		if err != nil {
			return err
		}
		next := s.recordObject(&rec, name, data)
		next.ResourceVersion = cm.ResourceVersion
		if _, err := cms.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("failed to update decision record %q: %w", rec.namespace+"/"+name, err)
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

// recordObject is the ConfigMap holding data (a compressed History), owned
// by the pod.
func (s *decisionStore) recordObject(rec *podRecord, name string, data []byte) *v1.ConfigMap {
	return &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: rec.namespace,
			Labels:    map[string]string{explain.RecordLabel: explain.RecordLabelValue},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: rec.name, UID: rec.uid,
			}},
		},
		BinaryData: map[string][]byte{explain.RecordKey: data},
	}
}

// readRecord reads the pod's record from the API; a missing record is an
// empty History.
func readRecord(ctx context.Context, client kubernetes.Interface, namespace, name string) (explain.History, error) {
	cm, err := client.CoreV1().ConfigMaps(namespace).Get(ctx, explain.RecordName(name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return explain.History{}, nil
	}
	if err != nil {
		return explain.History{}, err
	}
	if cm.Labels[explain.RecordLabel] != explain.RecordLabelValue {
		return explain.History{}, errRecordInTheWay
	}
	return explain.DecodeHistory(cm.BinaryData[explain.RecordKey])
}

// Decisions returns the pod's recorded attempts, oldest first: those in
// its decision record in the API and those not yet written.
func (s *Scheduler) Decisions(namespace, name string) []explain.Decision {
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	h, err := readRecord(ctx, s.client, namespace, name)
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
