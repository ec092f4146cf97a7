package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
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
// ConfigMap in explain.RecordNamespace (see explain.RecordName), off the
// scheduling loop: record queues the attempt and a worker appends the
// queued attempts of a pod with one write. It also deletes the record of a
// deleted pod (forget), and at start those of pods deleted while no
// scheduler ran (sweep). Attempts stay in memory only
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

	mu   sync.Mutex // guards pods and gone
	pods map[string]*podRecord
	// gone holds, by "namespace/name", the uid of a deleted pod whose
	// record is still to be deleted.
	gone map[string]types.UID
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
		gone:   map[string]types.UID{},
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

// forget drops what the store holds about a deleted pod and queues the
// deletion of its record.
func (s *decisionStore) forget(pod *v1.Pod) {
	key := pod.Namespace + "/" + pod.Name
	s.mu.Lock()
	if r := s.pods[key]; r == nil || r.uid == pod.UID {
		delete(s.pods, key)
	}
	s.gone[key] = pod.UID
	s.mu.Unlock()
	s.queue.Add(key)
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

// sync deletes the record of a deleted pod of key's name, then appends
// the pending attempts of the pod now of that name to its record: a Create
// for a new record, else a read, merge and Update (which fails on a
// concurrent change and is retried).
func (s *decisionStore) sync(ctx context.Context, key string) error {
	if err := s.deleteGone(ctx, key); err != nil {
		return err
	}
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
	cms := s.client.CoreV1().ConfigMaps(explain.RecordNamespace)
	name := explain.RecordName(rec.namespace, rec.name)
	path := explain.RecordNamespace + "/" + name
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
		case !apierrors.IsAlreadyExists(err):
			return fmt.Errorf("failed to create decision record %q: %w", path, err)
		}
	}
	if !written {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			s.markExists(key, rec.uid, false)
			return fmt.Errorf("decision record %q disappeared", path)
		}
		if err != nil {
			return fmt.Errorf("failed to read decision record %q: %w", path, err)
		}
		if cm.Labels[explain.RecordLabel] != explain.RecordLabelValue {
			return errRecordInTheWay
		}
		if len(attempts) == 0 {
			if attempts, err = decodePending(pending); err != nil {
				return err
			}
		}
		if old, err := explain.DecodeHistory(cm.BinaryData[explain.RecordKey]); err == nil && old.UID == string(rec.uid) && cm.Labels[explain.PodUIDLabel] == string(rec.uid) {
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
			return fmt.Errorf("failed to update decision record %q: %w", path, err)
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

// recordObject is the ConfigMap holding data (a compressed History),
// labelled with its pod.
func (s *decisionStore) recordObject(rec *podRecord, name string, data []byte) *v1.ConfigMap {
	return &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   explain.RecordNamespace,
			Labels:      explain.RecordLabels(rec.namespace, rec.name, string(rec.uid)),
			Annotations: map[string]string{explain.PodAnnotation: rec.namespace + "/" + rec.name},
		},
		BinaryData: map[string][]byte{explain.RecordKey: data},
	}
}

// deleteGone deletes the record of the deleted pod forget noted under key,
// if the record is that pod's: a record a later pod of the same name wrote
// meanwhile stays.
func (s *decisionStore) deleteGone(ctx context.Context, key string) error {
	s.mu.Lock()
	uid, ok := s.gone[key]
	s.mu.Unlock()
	if !ok {
		return nil
	}
	namespace, name, _ := strings.Cut(key, "/")
	ctx, cancel := context.WithTimeout(ctx, recordTimeout)
	defer cancel()
	cm, err := s.client.CoreV1().ConfigMaps(explain.RecordNamespace).Get(ctx, explain.RecordName(namespace, name), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("failed to read the decision record of deleted pod %q: %w", key, err)
	case cm.Labels[explain.RecordLabel] == explain.RecordLabelValue && cm.Labels[explain.PodUIDLabel] == string(uid):
		if err := deleteRecord(ctx, s.client, cm); err != nil {
			return err
		}
		s.log.Debug("deleted the decision record of a deleted pod", "pod", key, "record", cm.Name)
	}
	s.mu.Lock()
	if s.gone[key] == uid {
		delete(s.gone, key)
	}
	s.mu.Unlock()
	return nil
}

// deleteRecord deletes cm as read: not a record written after the read.
func deleteRecord(ctx context.Context, client kubernetes.Interface, cm *v1.ConfigMap) error {
	err := client.CoreV1().ConfigMaps(cm.Namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &cm.UID, ResourceVersion: &cm.ResourceVersion},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("failed to delete decision record %q: %w", cm.Namespace+"/"+cm.Name, err)
	}
	return nil
}

// sweep deletes the records whose pod is gone: pods deleted while no
// scheduler ran. pods is the scheduler's synced pod lister; a record whose
// pod it does not know is checked against the API before it goes.
func (s *decisionStore) sweep(ctx context.Context, pods corelisters.PodLister) error {
	ctx, cancel := context.WithTimeout(ctx, recordTimeout)
	defer cancel()
	list, err := s.client.CoreV1().ConfigMaps(explain.RecordNamespace).List(ctx, metav1.ListOptions{LabelSelector: explain.RecordLabel + "=" + explain.RecordLabelValue})
	if err != nil {
		return fmt.Errorf("failed to list decision records: %w", err)
	}
	deleted := 0
	for i := range list.Items {
		cm := &list.Items[i]
		namespace, name, _ := strings.Cut(cm.Annotations[explain.PodAnnotation], "/")
		uid := types.UID(cm.Labels[explain.PodUIDLabel])
		if p, err := pods.Pods(namespace).Get(name); err == nil && p.UID == uid {
			continue
		}
		p, err := s.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil && p.UID == uid:
			continue
		case err != nil && !apierrors.IsNotFound(err):
			return fmt.Errorf("failed to read pod %q of decision record %q: %w", namespace+"/"+name, cm.Name, err)
		}
		if err := deleteRecord(ctx, s.client, cm); err != nil {
			return err
		}
		deleted++
	}
	if deleted > 0 {
		s.log.Info("deleted the decision records of deleted pods", "records", deleted)
	}
	return nil
}

// readRecord reads the record of pod namespace/name from the API; a
// missing record is an empty History.
func readRecord(ctx context.Context, client kubernetes.Interface, namespace, name string) (explain.History, error) {
	cm, err := client.CoreV1().ConfigMaps(explain.RecordNamespace).Get(ctx, explain.RecordName(namespace, name), metav1.GetOptions{})
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
