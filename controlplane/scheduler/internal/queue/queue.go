package queue

import (
	"context"
	"reflect"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

// Defaults match kube-scheduler.
const (
	DefaultPodInitialBackoff = 1 * time.Second
	DefaultPodMaxBackoff     = 10 * time.Second
	// DefaultMaxInUnschedulable is how long a pod waits for a cluster change
	// before it is retried anyway.
	DefaultMaxInUnschedulable = 5 * time.Minute
)

// Options tune a PriorityQueue; zero values mean the defaults.
type Options struct {
	Clock              clock.WithTicker
	PodInitialBackoff  time.Duration
	PodMaxBackoff      time.Duration
	MaxInUnschedulable time.Duration
}

// PriorityQueue holds the pods waiting to be scheduled.
type PriorityQueue struct {
	clock              clock.WithTicker
	initialBackoff     time.Duration
	maxBackoff         time.Duration
	maxInUnschedulable time.Duration

	mu   sync.Mutex // guards everything below
	cond *sync.Cond // signalled when activeQ grows or the queue closes

	activeQ       *podHeap
	backoffQ      *podHeap
	unschedulable map[string]*framework.QueuedPodInfo
	// inFlight holds pods popped and not yet Done, with the newest object
	// seen for them while in flight (nil if none).
	inFlight map[string]*v1.Pod
	// schedulingCycle counts Pops; moveRequestCycle is the cycle during
	// which the last cluster change asked to retry unschedulable pods.
	schedulingCycle  int64
	moveRequestCycle int64
	closed           bool
}

// New returns a queue ordered by less.
func New(less func(a, b *framework.QueuedPodInfo) bool, opts Options) *PriorityQueue {
	q := &PriorityQueue{
		clock:              opts.Clock,
		initialBackoff:     opts.PodInitialBackoff,
		maxBackoff:         opts.PodMaxBackoff,
		maxInUnschedulable: opts.MaxInUnschedulable,
		activeQ:            newPodHeap(less),
		unschedulable:      map[string]*framework.QueuedPodInfo{},
		inFlight:           map[string]*v1.Pod{},
		moveRequestCycle:   -1,
	}
	if q.clock == nil {
		q.clock = clock.RealClock{}
	}
	if q.initialBackoff <= 0 {
		q.initialBackoff = DefaultPodInitialBackoff
	}
	if q.maxBackoff <= 0 {
		q.maxBackoff = DefaultPodMaxBackoff
	}
	if q.maxInUnschedulable <= 0 {
		q.maxInUnschedulable = DefaultMaxInUnschedulable
	}
	q.backoffQ = newPodHeap(func(a, b *framework.QueuedPodInfo) bool {
		return q.backoffExpiry(a).Before(q.backoffExpiry(b))
	})
	q.cond = sync.NewCond(&q.mu)
	return q
}

func podKey(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }

// Run moves pods whose backoff ended to the active queue every second and
// retries pods left unschedulable too long every 30 seconds, until ctx ends;
// then it closes the queue.
func (q *PriorityQueue) Run(ctx context.Context) {
	backoff := q.clock.NewTicker(time.Second)
	defer backoff.Stop()
	leftover := q.clock.NewTicker(30 * time.Second)
	defer leftover.Stop()
	for {
		select {
		case <-ctx.Done():
			q.Close()
			return
		case <-backoff.C():
			q.FlushBackoffQCompleted()
		case <-leftover.C():
			q.FlushUnschedulableLeftover()
		}
	}
}

// Close wakes every Pop, which then returns nil.
func (q *PriorityQueue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.cond.Broadcast()
}

func (q *PriorityQueue) newQueuedPodInfo(pod *v1.Pod) *framework.QueuedPodInfo {
	return &framework.QueuedPodInfo{Pod: pod, Timestamp: q.clock.Now()}
}

// Add queues a new pending pod on the active queue.
func (q *PriorityQueue) Add(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := podKey(pod)
	if _, ok := q.inFlight[key]; ok {
		q.inFlight[key] = pod
		return
	}
	q.backoffQ.remove(key)
	delete(q.unschedulable, key)
	if existing, ok := q.activeQ.get(key); ok {
		existing.Pod = pod
		q.activeQ.addOrUpdate(existing)
		return
	}
	q.activeQ.addOrUpdate(q.newQueuedPodInfo(pod))
	q.cond.Broadcast()
}

// Update replaces the queued pod. An unschedulable pod whose spec or
// metadata changed is retried (after its backoff); a pod the queue doesn't
// hold is added.
func (q *PriorityQueue) Update(oldPod, newPod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := podKey(newPod)
	if _, ok := q.inFlight[key]; ok {
		q.inFlight[key] = newPod
		return
	}
	if pi, ok := q.activeQ.get(key); ok {
		pi.Pod = newPod
		q.activeQ.addOrUpdate(pi)
		return
	}
	if pi, ok := q.backoffQ.get(key); ok {
		pi.Pod = newPod
		q.backoffQ.addOrUpdate(pi)
		return
	}
	if pi, ok := q.unschedulable[key]; ok {
		pi.Pod = newPod
		if oldPod != nil && isPodUpdated(oldPod, newPod) {
			delete(q.unschedulable, key)
			q.requeueLocked(pi)
		}
		return
	}
	q.activeQ.addOrUpdate(q.newQueuedPodInfo(newPod))
	q.cond.Broadcast()
}

// Delete removes the pod from every queue.
func (q *PriorityQueue) Delete(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := podKey(pod)
	q.activeQ.remove(key)
	q.backoffQ.remove(key)
	delete(q.unschedulable, key)
	if _, ok := q.inFlight[key]; ok {
		delete(q.inFlight, key)
	}
}

// Pop blocks until a pod is active and returns it, counting an attempt, or
// returns nil once the queue is closed. The caller must call Done or
// AddUnschedulableIfNotPresent for it.
func (q *PriorityQueue) Pop() *framework.QueuedPodInfo {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.activeQ.Len() == 0 && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		return nil
	}
	pi := q.activeQ.pop()
	pi.Attempts++
	if pi.InitialAttemptTimestamp == nil {
		now := q.clock.Now()
		pi.InitialAttemptTimestamp = &now
	}
	q.schedulingCycle++
	q.inFlight[podKey(pi.Pod)] = nil
	return pi
}

// SchedulingCycle returns the number of the current (last popped) cycle.
func (q *PriorityQueue) SchedulingCycle() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.schedulingCycle
}

// Done ends the in-flight period of a popped pod that needs no requeue
// (it was assumed onto a node, or it is gone).
func (q *PriorityQueue) Done(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.inFlight, podKey(pod))
}

// AddUnschedulableIfNotPresent requeues a pod whose attempt in cycle
// podCycle failed. A pod that was rejected (unschedulable) waits for a
// cluster change, unless one already happened during its attempt; a pod
// that hit an error, or that changed while in flight, waits out its backoff.
func (q *PriorityQueue) AddUnschedulableIfNotPresent(pi *framework.QueuedPodInfo, podCycle int64, rejected bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := podKey(pi.Pod)
	newer, wasInFlight := q.inFlight[key]
	delete(q.inFlight, key)
	if !wasInFlight {
		// Deleted while in flight.
		return
	}
	if _, ok := q.activeQ.get(key); ok {
		return
	}
	if _, ok := q.backoffQ.get(key); ok {
		return
	}
	if _, ok := q.unschedulable[key]; ok {
		return
	}
	pi.Timestamp = q.clock.Now()
	if newer != nil {
		changed := isPodUpdated(pi.Pod, newer)
		pi.Pod = newer
		if changed {
			q.requeueLocked(pi)
			return
		}
	}
	if !rejected || q.moveRequestCycle >= podCycle {
		q.backoffQ.addOrUpdate(pi)
		return
	}
	q.unschedulable[key] = pi
}

// MoveAllToActiveOrBackoffQueue retries every unschedulable pod after a
// cluster change: to the backoff queue if still backing off, else active.
func (q *PriorityQueue) MoveAllToActiveOrBackoffQueue() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for key, pi := range q.unschedulable {
		delete(q.unschedulable, key)
		q.requeueLocked(pi)
	}
	q.moveRequestCycle = q.schedulingCycle
}

// FlushBackoffQCompleted moves pods whose backoff ended to the active queue.
func (q *PriorityQueue) FlushBackoffQCompleted() {
	q.mu.Lock()
	defer q.mu.Unlock()
	moved := false
	for {
		pi := q.backoffQ.peek()
		if pi == nil || q.isBackingOff(pi) {
			break
		}
		q.backoffQ.pop()
		q.activeQ.addOrUpdate(pi)
		moved = true
	}
	if moved {
		q.cond.Broadcast()
	}
}

// FlushUnschedulableLeftover retries pods that waited longer than the
// maximum for a cluster change.
func (q *PriorityQueue) FlushUnschedulableLeftover() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	for key, pi := range q.unschedulable {
		if now.Sub(pi.Timestamp) > q.maxInUnschedulable {
			delete(q.unschedulable, key)
			q.requeueLocked(pi)
		}
	}
}

// Len returns how many pods wait in the active, backoff and unschedulable
// queues.
func (q *PriorityQueue) Len() (active, backoff, unschedulable int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.activeQ.Len(), q.backoffQ.Len(), len(q.unschedulable)
}

// requeueLocked puts pi on the backoff queue if it is still backing off,
// else on the active queue.
func (q *PriorityQueue) requeueLocked(pi *framework.QueuedPodInfo) {
	if q.isBackingOff(pi) {
		q.backoffQ.addOrUpdate(pi)
		return
	}
	q.activeQ.addOrUpdate(pi)
	q.cond.Broadcast()
}

func (q *PriorityQueue) isBackingOff(pi *framework.QueuedPodInfo) bool {
	return q.backoffExpiry(pi).After(q.clock.Now())
}

// backoffExpiry is when the pod's backoff ends: its last enqueue time plus
// the initial backoff doubled per attempt after the first, capped.
func (q *PriorityQueue) backoffExpiry(pi *framework.QueuedPodInfo) time.Time {
	return pi.Timestamp.Add(q.BackoffDuration(pi.Attempts))
}

// BackoffDuration is the backoff after attempts failed attempts.
func (q *PriorityQueue) BackoffDuration(attempts int) time.Duration {
	if attempts <= 0 {
		return 0
	}
	d := q.initialBackoff
	for i := 1; i < attempts; i++ {
		if d > q.maxBackoff-d {
			return q.maxBackoff
		}
		d += d
	}
	return min(d, q.maxBackoff)
}

// isPodUpdated reports whether the pod changed beyond its status and
// bookkeeping fields, which is what could make it schedulable.
func isPodUpdated(oldPod, newPod *v1.Pod) bool {
	strip := func(p *v1.Pod) *v1.Pod {
		c := p.DeepCopy()
		c.ResourceVersion = ""
		c.Generation = 0
		c.ManagedFields = nil
		c.Finalizers = nil
		c.Status = v1.PodStatus{}
		return c
	}
	return !reflect.DeepEqual(strip(oldPod), strip(newPod))
}
