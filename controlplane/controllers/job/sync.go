package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllerutil"
)

// Condition reasons and messages, as Kubernetes' job controller writes
// them.
const (
	reasonBackoffLimitExceeded = "BackoffLimitExceeded"
	reasonDeadlineExceeded     = "DeadlineExceeded"
	reasonCompletionsReached   = "CompletionsReached"
	msgBackoffLimitExceeded    = "Job has reached the specified backoff limit"
	msgDeadlineExceeded        = "Job was active longer than specified deadline"
	msgCompletionsReached      = "Reached expected number of succeeded pods"
	msgMaxFailedIndexes        = "Job has exceeded the specified maximal number of failed indexes"
	msgFailedIndexes           = "Job has failed indexes"
)

// sync brings one Job's pods and status in line with its spec: it counts
// finished pods once (through status.uncountedTerminatedPods and the
// job-tracking finalizer), decides success or failure, creates or deletes
// pods, and writes the status.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.jobLister.Jobs(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.expectations.Delete(key)
		c.mu.Lock()
		delete(c.backoff, key)
		c.mu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	job := cached.DeepCopy()
	selector, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil || selector.Empty() {
		c.log.Info("job has an invalid selector", "job", key, "err", err)
		return nil
	}
	needsSync := c.expectations.Satisfied(key)
	all, err := c.podLister.Pods(namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	claimer := &controllerutil.Claimer{
		Controller: job, ControllerKind: controllerKind, Selector: selector,
		Patch: func(ctx context.Context, ns, name string, pt types.PatchType, data []byte) error {
			_, err := c.client.CoreV1().Pods(ns).Patch(ctx, name, pt, data, metav1.PatchOptions{})
			return err
		},
	}
	pods, err := controllerutil.ClaimAll(ctx, claimer, all)
	if err != nil {
		return err
	}

	if isFinished(job) {
		job, err = c.trackFinishedPods(ctx, key, job, pods, all, indexFailures{})
		if err != nil {
			return err
		}
		return c.expireFinished(ctx, key, job)
	}
	if job, err = c.recordFailJob(ctx, job, pods); err != nil {
		return err
	}
	perIndex := perIndexFailures(job, pods)
	job, err = c.trackFinishedPods(ctx, key, job, pods, all, perIndex)
	if err != nil {
		return err
	}

	now := c.now()
	status := job.Status.DeepCopy()
	var active, terminatingPods []*v1.Pod
	var ready int32
	for _, p := range pods {
		switch {
		case p.DeletionTimestamp != nil:
			if p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
				terminatingPods = append(terminatingPods, p)
			}
		case p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed:
			active = append(active, p)
			if controllerutil.IsPodReady(p) {
				ready++
			}
		}
	}
	terminating := int32(len(terminatingPods))
	suspended := job.Spec.Suspend != nil && *job.Spec.Suspend
	c.updateSuspension(job, status, suspended, now)
	if status.StartTime == nil && !suspended {
		status.StartTime = &metav1.Time{Time: now}
	}

	succeeded := status.Succeeded + int32(len(uncounted(status).Succeeded))
	// Failed pods whose index waits for a replacement still hold the
	// finalizer: the job may not finish before they are counted.
	pending := len(uncounted(status).Succeeded) + len(uncounted(status).Failed) + len(perIndex.delayed)
	var failReason, failMessage, doneReason, doneMessage string
	if c := findCondition(status, batchv1.JobSuccessCriteriaMet); c != nil && c.Status == v1.ConditionTrue {
		doneReason, doneMessage = c.Reason, c.Message
	} else if failReason, failMessage = failureOf(job, status, active, now); failReason == "" {
		doneReason, doneMessage = successOf(job, status, succeeded, len(active))
	}

	var created, deleted int
	var requeue time.Duration
	var manageErr error
	switch {
	case failReason != "":
		setCondition(status, batchv1.JobFailureTarget, failReason, failMessage, now)
		if needsSync {
			deleted, manageErr = c.deletePods(ctx, key, job, active)
		}
		if len(active) == 0 && terminating == 0 && pending == 0 {
			setCondition(status, batchv1.JobFailed, failReason, failMessage, now)
			c.recorder.Event(job, v1.EventTypeWarning, failReason, failMessage)
		}
	case doneReason != "":
		setCondition(status, batchv1.JobSuccessCriteriaMet, doneReason, doneMessage, now)
		if needsSync {
			deleted, manageErr = c.deletePods(ctx, key, job, active)
		}
		if len(active) == 0 && terminating == 0 && pending == 0 {
			setCondition(status, batchv1.JobComplete, doneReason, doneMessage, now)
			status.CompletionTime = &metav1.Time{Time: now}
			c.recorder.Event(job, v1.EventTypeNormal, "Completed", "Job completed")
		}
	case needsSync && job.DeletionTimestamp == nil:
		created, deleted, requeue, manageErr = c.manageActive(ctx, key, job, active, terminatingPods, succeeded, suspended, perIndex)
	}
	status.Active = int32(len(active) + created - deleted)
	// Deleted pods are no longer active, ready or not.
	ready = min(ready, status.Active)
	status.Ready = &ready
	terminating += int32(deleted)
	status.Terminating = &terminating
	if _, err := c.updateStatus(ctx, job, status); err != nil {
		return errors.Join(manageErr, err)
	}
	if requeue > 0 {
		c.queue.AddAfter(key, requeue)
	}
	if d := job.Spec.ActiveDeadlineSeconds; d != nil && status.StartTime != nil && !suspended && failReason == "" {
		left := status.StartTime.Add(time.Duration(*d) * time.Second).Sub(now)
		c.queue.AddAfter(key, max(left, 0)+10*time.Millisecond)
	}
	return manageErr
}

// onlyReplaceFailedPods reports whether the job replaces a pod only once
// it has failed (podReplacementPolicy Failed, the default with a
// podFailurePolicy), not while it terminates.
func onlyReplaceFailedPods(job *batchv1.Job) bool {
	if job.Spec.PodReplacementPolicy != nil && *job.Spec.PodReplacementPolicy == batchv1.Failed {
		return true
	}
	// With a pod failure policy, a terminating pod counts only once it
	// failed, so that its conditions (DisruptionTarget) and exit codes can
	// be matched, as upstream's job controller waits for them.
	return job.Spec.PodFailurePolicy != nil
}

// uncounted returns status.uncountedTerminatedPods, never nil.
func uncounted(s *batchv1.JobStatus) *batchv1.UncountedTerminatedPods {
	if s.UncountedTerminatedPods == nil {
		s.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	return s.UncountedTerminatedPods
}

// isPodFailed is Kubernetes' isPodFailed for podReplacementPolicy
// TerminatingOrFailed: a failed pod, or a deleted one that did not
// succeed; with Failed, only a failed pod.
func isPodFailed(job *batchv1.Job, p *v1.Pod) bool {
	if p.Status.Phase == v1.PodFailed {
		return true
	}
	if onlyReplaceFailedPods(job) {
		return false
	}
	return p.DeletionTimestamp != nil && p.Status.Phase != v1.PodSucceeded
}

// trackFinishedPods counts each finished pod exactly once. A finished pod
// still holding the finalizer first goes into
// status.uncountedTerminatedPods (written before anything else), then
// loses its finalizer; a uid in that list whose pod has no finalizer any
// more (or is gone) then moves into succeeded or failed. It returns the
// job as stored after the first write.
//
// A failed pod whose failure spec.podFailurePolicy ignores loses its
// finalizer without being counted; a failed pod in perIndex.delayed keeps
// it, and status.failedIndexes is written with the counts.
func (c *Controller) trackFinishedPods(ctx context.Context, key string, job *batchv1.Job, pods, all []*v1.Pod, perIndex indexFailures) (*batchv1.Job, error) {
	status := job.Status.DeepCopy()
	u := uncounted(status)
	inSucceeded, inFailed := sets.New(u.Succeeded...), sets.New(u.Failed...)
	succeeded := status.Succeeded + int32(len(u.Succeeded))
	var release []*v1.Pod
	added := false
	var newSucceeded, newFailed int
	indexed := isIndexed(job)
	completed := parseIndexes(status.CompletedIndexes)
	for _, p := range pods {
		if !hasTrackingFinalizer(p) {
			continue
		}
		if d, ok := perIndex.delayed[podIndex(job, p)]; ok && d.UID == p.UID {
			continue
		}
		switch {
		case p.Status.Phase == v1.PodSucceeded && indexed:
			// The index is enough to count it once.
			if ix := podIndex(job, p); ix >= 0 && !completed.Has(ix) {
				completed.Insert(ix)
				newSucceeded++
				added = true
			}
		case p.Status.Phase == v1.PodSucceeded:
			if !inSucceeded.Has(p.UID) && !inFailed.Has(p.UID) && (job.Spec.Completions == nil || succeeded < *job.Spec.Completions) {
				u.Succeeded = append(u.Succeeded, p.UID)
				inSucceeded.Insert(p.UID)
				succeeded++
				newSucceeded++
				added = true
			}
		case isPodFailed(job, p):
			if _, counts, _ := matchPodFailurePolicy(job.Spec.PodFailurePolicy, p); counts && !inFailed.Has(p.UID) && !inSucceeded.Has(p.UID) {
				u.Failed = append(u.Failed, p.UID)
				inFailed.Insert(p.UID)
				newFailed++
				added = true
			}
		default:
			if !isFinished(job) {
				continue
			}
		}
		release = append(release, p)
	}
	if indexed {
		status.CompletedIndexes = formatIndexes(completed)
		status.Succeeded = int32(completed.Len())
	}
	if perIndex.failed != nil {
		if s := formatIndexes(perIndex.failed); status.FailedIndexes == nil || *status.FailedIndexes != s {
			status.FailedIndexes = &s
			added = true
		}
	}
	if added {
		updated, err := c.updateStatus(ctx, job, status)
		if err != nil {
			return nil, err
		}
		job = updated.DeepCopy()
		c.recordBackoff(key, newSucceeded, newFailed)
	}
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range release {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.removeFinalizer(ctx, p); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()

	// Flush the uids whose pods the informer shows without the finalizer.
	holding := sets.New[types.UID]()
	for _, p := range all {
		if hasTrackingFinalizer(p) {
			holding.Insert(p.UID)
		}
	}
	status = job.Status.DeepCopy()
	u = uncounted(status)
	var keepS, keepF []types.UID
	var movedS, movedF int
	for _, uid := range u.Succeeded {
		if holding.Has(uid) {
			keepS = append(keepS, uid)
		} else {
			movedS++
		}
	}
	for _, uid := range u.Failed {
		if holding.Has(uid) {
			keepF = append(keepF, uid)
		} else {
			movedF++
		}
	}
	if movedS+movedF > 0 {
		u.Succeeded, u.Failed = keepS, keepF
		status.Succeeded += int32(movedS)
		status.Failed += int32(movedF)
		updated, err := c.updateStatus(ctx, job, status)
		if err != nil {
			return nil, errors.Join(append(errs, err)...)
		}
		job = updated.DeepCopy()
	}
	return job, errors.Join(errs...)
}

// removeFinalizer removes the job-tracking finalizer from pod, as
// Kubernetes does with a strategic merge patch.
func (c *Controller) removeFinalizer(ctx context.Context, pod *v1.Pod) error {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"$deleteFromPrimitiveList/finalizers": []string{batchv1.JobTrackingFinalizer}},
	})
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to remove the job-tracking finalizer from pod %q: %w", pod.Namespace+"/"+pod.Name, err)
	}
	return nil
}

// failureOf reports why the job fails, if it does: the reason of a
// FailureTarget already set, too many failures (pod failures, or container
// restarts for restartPolicy OnFailure), or the active deadline.
func failureOf(job *batchv1.Job, status *batchv1.JobStatus, active []*v1.Pod, now time.Time) (string, string) {
	if c := findCondition(status, batchv1.JobFailureTarget); c != nil && c.Status == v1.ConditionTrue {
		return c.Reason, c.Message
	}
	limit := int32(6)
	if job.Spec.BackoffLimit != nil {
		limit = *job.Spec.BackoffLimit
	}
	failed := status.Failed + int32(len(uncounted(status).Failed))
	if failed > limit {
		return reasonBackoffLimitExceeded, msgBackoffLimitExceeded
	}
	if pastBackoffLimitOnFailure(job, active, limit) {
		return reasonBackoffLimitExceeded, msgBackoffLimitExceeded
	}
	suspended := job.Spec.Suspend != nil && *job.Spec.Suspend
	if d := job.Spec.ActiveDeadlineSeconds; d != nil && status.StartTime != nil && !suspended {
		if !now.Before(status.StartTime.Add(time.Duration(*d) * time.Second)) {
			return reasonDeadlineExceeded, msgDeadlineExceeded
		}
	}
	if hasBackoffLimitPerIndex(job) && status.FailedIndexes != nil {
		failed := parseIndexes(*status.FailedIndexes).Len()
		if m := job.Spec.MaxFailedIndexes; m != nil && failed > int(*m) {
			return batchv1.JobReasonMaxFailedIndexesExceeded, msgMaxFailedIndexes
		}
		if failed > 0 && failed+parseIndexes(status.CompletedIndexes).Len() >= int(*job.Spec.Completions) {
			return batchv1.JobReasonFailedIndexes, msgFailedIndexes
		}
	}
	return "", ""
}

// successOf reports why the job succeeds, if it does: an Indexed job's
// spec.successPolicy is met, or completions pods succeeded (for a job
// without completions, one succeeded and none is left running).
func successOf(job *batchv1.Job, status *batchv1.JobStatus, succeeded int32, active int) (string, string) {
	if isIndexed(job) {
		if msg, ok := matchSuccessPolicy(job.Spec.SuccessPolicy, *job.Spec.Completions, parseIndexes(status.CompletedIndexes)); ok {
			return batchv1.JobReasonSuccessPolicy, msg
		}
	}
	if job.Spec.Completions != nil && succeeded >= *job.Spec.Completions || job.Spec.Completions == nil && succeeded > 0 && active == 0 {
		return reasonCompletionsReached, msgCompletionsReached
	}
	return "", ""
}

// recordFailJob sets FailureTarget (PodFailurePolicy) when a failed pod
// matches a FailJob rule of spec.podFailurePolicy, and writes it before
// any finalizer goes so the message outlives the pod, as Kubernetes does.
// A job already failing or succeeding is left alone.
func (c *Controller) recordFailJob(ctx context.Context, job *batchv1.Job, pods []*v1.Pod) (*batchv1.Job, error) {
	for _, t := range []batchv1.JobConditionType{batchv1.JobFailureTarget, batchv1.JobSuccessCriteriaMet} {
		if cond := findCondition(&job.Status, t); cond != nil && cond.Status == v1.ConditionTrue {
			return job, nil
		}
	}
	msg := failJobMessage(job, pods)
	if msg == "" {
		return job, nil
	}
	status := job.Status.DeepCopy()
	setCondition(status, batchv1.JobFailureTarget, batchv1.JobReasonPodFailurePolicy, msg, c.now())
	updated, err := c.updateStatus(ctx, job, status)
	if err != nil {
		return nil, err
	}
	return updated.DeepCopy(), nil
}

// indexFailures is what an Indexed job with spec.backoffLimitPerIndex
// knows of its failures in one sync.
type indexFailures struct {
	// failed holds the indexes that failed for good; nil without
	// backoffLimitPerIndex.
	failed sets.Set[int]
	// delayed holds, per index to retry, the failed pod its replacement
	// takes the failure counts and backoff from.
	delayed map[int]*v1.Pod
}

// perIndexFailures computes the job's indexFailures. While the job is
// finishing or deleted no pod is delayed: every finalizer may go.
func perIndexFailures(job *batchv1.Job, pods []*v1.Pod) indexFailures {
	if !hasBackoffLimitPerIndex(job) {
		return indexFailures{}
	}
	out := indexFailures{failed: failedIndexes(job, pods)}
	if job.DeletionTimestamp != nil {
		return out
	}
	for _, t := range []batchv1.JobConditionType{batchv1.JobFailureTarget, batchv1.JobSuccessCriteriaMet} {
		if cond := findCondition(&job.Status, t); cond != nil && cond.Status == v1.ConditionTrue {
			return out
		}
	}
	succeeded := parseIndexes(job.Status.CompletedIndexes)
	for _, p := range pods {
		if ix := podIndex(job, p); ix >= 0 && p.Status.Phase == v1.PodSucceeded && hasTrackingFinalizer(p) {
			succeeded.Insert(ix)
		}
	}
	out.delayed = delayedFailedPods(job, pods, succeeded, out.failed)
	return out
}

// pastBackoffLimitOnFailure is Kubernetes' check for restartPolicy
// OnFailure, whose failures are container restarts inside running or
// pending pods: their restarts reach the limit (any restart for limit 0).
func pastBackoffLimitOnFailure(job *batchv1.Job, active []*v1.Pod, limit int32) bool {
	if job.Spec.Template.Spec.RestartPolicy != v1.RestartPolicyOnFailure {
		return false
	}
	var restarts int32
	for _, p := range active {
		if p.Status.Phase != v1.PodRunning && p.Status.Phase != v1.PodPending {
			continue
		}
		for _, cs := range p.Status.InitContainerStatuses {
			restarts += cs.RestartCount
		}
		for _, cs := range p.Status.ContainerStatuses {
			restarts += cs.RestartCount
		}
	}
	if limit == 0 {
		return restarts > 0
	}
	return restarts >= limit
}

// manageActive creates or deletes pods so the job runs as many as it
// wants: parallelism, capped by the completions still missing; none when
// suspended. Creation waits out the failure backoff, and with
// podReplacementPolicy Failed a terminating pod is not replaced until it
// has failed.
func (c *Controller) manageActive(ctx context.Context, key string, job *batchv1.Job, active, terminating []*v1.Pod, succeeded int32, suspended bool, perIndex indexFailures) (created, deleted int, requeue time.Duration, err error) {
	parallelism := int32(1)
	if job.Spec.Parallelism != nil {
		parallelism = *job.Spec.Parallelism
	}
	var want int32
	switch {
	case suspended:
		want = 0
	case job.Spec.Completions == nil:
		want = parallelism
		if succeeded > 0 {
			want = int32(len(active))
		}
	default:
		want = min(max(*job.Spec.Completions-succeeded, 0), parallelism)
	}
	if !onlyReplaceFailedPods(job) {
		terminating = nil
	}
	if isIndexed(job) {
		return c.manageIndexed(ctx, key, job, active, terminating, int(want), perIndex)
	}
	diff := len(active) - int(want)
	if diff > 0 {
		ranked := append([]*v1.Pod(nil), active...)
		controllerutil.RankPodsForDeletion(ranked, active)
		deleted, err = c.deletePods(ctx, key, job, ranked[:min(diff, MaxPodCreateDeletePerSync)])
		return 0, deleted, 0, err
	}
	if diff+len(terminating) >= 0 {
		return 0, 0, 0, nil
	}
	if wait := c.remainingBackoff(key); wait > 0 {
		return 0, 0, wait, nil
	}
	n := min(-diff-len(terminating), MaxPodCreateDeletePerSync)
	c.expectations.Expect(key, n, 0)
	ref := controllerutil.NewControllerRef(job, controllerKind)
	created, err = controllerutil.SlowStartBatch(n, controllerutil.SlowStartInitialBatchSize, func() error {
		return c.createPod(ctx, job, ref, -1, nil)
	})
	if skipped := n - created; skipped > 0 {
		c.expectations.LowerExpectations(key, skipped, 0)
	}
	return created, 0, 0, err
}

// manageIndexed is manageActive for an Indexed job: it deletes pods of no
// or finished indexes and duplicates, deletes the highest indexes above
// want, and starts the lowest indexes still to run (not failed ones).
// With backoffLimitPerIndex each index waits out its own backoff.
func (c *Controller) manageIndexed(ctx context.Context, key string, job *batchv1.Job, active, terminating []*v1.Pod, want int, perIndex indexFailures) (created, deleted int, requeue time.Duration, err error) {
	completed := parseIndexes(job.Status.CompletedIndexes)
	keep, surplus := surplusIndexedPods(job, completed, active)
	if len(keep) > want {
		sort.Slice(keep, func(i, j int) bool { return podIndex(job, keep[i]) < podIndex(job, keep[j]) })
		surplus = append(surplus, keep[want:]...)
		keep = keep[:want]
	}
	if len(surplus) > 0 {
		deleted, err = c.deletePods(ctx, key, job, surplus[:min(len(surplus), MaxPodCreateDeletePerSync)])
		return 0, deleted, 0, err
	}
	ixs := indexesToRun(job, completed.Union(perIndex.failed), slices.Concat(keep, terminating), min(want-len(keep)-len(terminating), MaxPodCreateDeletePerSync))
	if len(ixs) == 0 {
		return 0, 0, 0, nil
	}
	if hasBackoffLimitPerIndex(job) {
		if ixs, requeue = readyIndexes(ixs, perIndex.delayed, c.now()); len(ixs) == 0 {
			return 0, 0, requeue, nil
		}
	} else if wait := c.remainingBackoff(key); wait > 0 {
		return 0, 0, wait, nil
	}
	c.expectations.Expect(key, len(ixs), 0)
	ref := controllerutil.NewControllerRef(job, controllerKind)
	var mu sync.Mutex
	next := 0
	created, err = controllerutil.SlowStartBatch(len(ixs), controllerutil.SlowStartInitialBatchSize, func() error {
		mu.Lock()
		ix := ixs[next]
		next++
		mu.Unlock()
		return c.createPod(ctx, job, ref, ix, perIndex.delayed[ix])
	})
	if skipped := len(ixs) - created; skipped > 0 {
		c.expectations.LowerExpectations(key, skipped, 0)
	}
	return created, 0, 0, err
}

// createPod creates one pod of the job, running completion index ix when
// ix is not negative; with backoffLimitPerIndex it carries the failure
// counts of its index, those of replaced (the index's last failed pod,
// nil for none) plus that failure.
func (c *Controller) createPod(ctx context.Context, job *batchv1.Job, ref *metav1.OwnerReference, ix int, replaced *v1.Pod) error {
	pod := controllerutil.PodFromTemplate(&job.Spec.Template, job, ref)
	pod.Finalizers = append(pod.Finalizers, batchv1.JobTrackingFinalizer)
	if ix >= 0 {
		setIndex(job, pod, ix)
		if hasBackoffLimitPerIndex(job) {
			setIndexFailureCounts(job, pod, replaced)
		}
	}
	created, err := c.client.CoreV1().Pods(job.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		if !apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause) {
			c.recorder.Eventf(job, v1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
		}
		return err
	}
	c.recorder.Eventf(job, v1.EventTypeNormal, "SuccessfulCreate", "Created pod: %v", created.Name)
	return nil
}

// deletePods deletes pods in parallel and returns how many it deleted.
func (c *Controller) deletePods(ctx context.Context, key string, job *batchv1.Job, pods []*v1.Pod) (int, error) {
	if len(pods) == 0 {
		return 0, nil
	}
	c.expectations.Expect(key, 0, len(pods))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	deleted := 0
	for _, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				c.expectations.DeletionObserved(key)
				if !apierrors.IsNotFound(err) {
					c.recorder.Eventf(job, v1.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
					errs = append(errs, err)
				}
				return
			}
			deleted++
			c.recorder.Eventf(job, v1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %v", p.Name)
		}()
	}
	wg.Wait()
	return deleted, errors.Join(errs...)
}

// recordBackoff notes newly counted successes and failures: a success
// resets the failure streak.
func (c *Controller) recordBackoff(key string, succeeded, failed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.backoff[key]
	if succeeded > 0 {
		r = backoffRecord{}
	}
	if failed > 0 {
		r.failures += failed
		r.lastFailure = c.now()
	}
	c.backoff[key] = r
}

// remainingBackoff is how long the job must still wait before replacing
// a failed pod: DefaultPodFailureBackOff doubled per failure since the
// last success, capped at MaxPodFailureBackOff, from the last failure.
func (c *Controller) remainingBackoff(key string) time.Duration {
	c.mu.Lock()
	r := c.backoff[key]
	c.mu.Unlock()
	if r.failures == 0 {
		return 0
	}
	delay := DefaultPodFailureBackOff
	for i := 1; i < r.failures && delay < MaxPodFailureBackOff; i++ {
		delay *= 2
	}
	delay = min(delay, MaxPodFailureBackOff)
	return r.lastFailure.Add(delay).Sub(c.now())
}

// updateSuspension sets the Suspended condition and its events, and
// restarts the clock of a resumed job.
func (c *Controller) updateSuspension(job *batchv1.Job, status *batchv1.JobStatus, suspended bool, now time.Time) {
	cond := findCondition(status, batchv1.JobSuspended)
	switch {
	case suspended && (cond == nil || cond.Status != v1.ConditionTrue):
		setConditionStatus(status, batchv1.JobSuspended, v1.ConditionTrue, "JobSuspended", "Job suspended", now)
		c.recorder.Event(job, v1.EventTypeNormal, "Suspended", "Job suspended")
	case !suspended && cond != nil && cond.Status == v1.ConditionTrue:
		setConditionStatus(status, batchv1.JobSuspended, v1.ConditionFalse, "JobResumed", "Job resumed", now)
		status.StartTime = &metav1.Time{Time: now}
		c.recorder.Event(job, v1.EventTypeNormal, "Resumed", "Job resumed")
	}
}

// expireFinished deletes a finished job once its ttlSecondsAfterFinished
// has passed, as the ttl-after-finished controller does (foreground, so
// its pods go first).
func (c *Controller) expireFinished(ctx context.Context, key string, job *batchv1.Job) error {
	ttl := job.Spec.TTLSecondsAfterFinished
	if ttl == nil || job.DeletionTimestamp != nil {
		return nil
	}
	var finishedAt time.Time
	for _, cond := range job.Status.Conditions {
		if (cond.Type == batchv1.JobComplete || cond.Type == batchv1.JobFailed) && cond.Status == v1.ConditionTrue {
			finishedAt = cond.LastTransitionTime.Time
		}
	}
	if left := finishedAt.Add(time.Duration(*ttl) * time.Second).Sub(c.now()); left > 0 {
		c.queue.AddAfter(key, left)
		return nil
	}
	policy := metav1.DeletePropagationForeground
	err := c.client.BatchV1().Jobs(job.Namespace).Delete(ctx, job.Name, metav1.DeleteOptions{
		PropagationPolicy: &policy,
		Preconditions:     &metav1.Preconditions{UID: &job.UID, ResourceVersion: &job.ResourceVersion},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to delete finished job %q: %w", key, err)
	}
	return nil
}

// isFinished reports whether the job has its Complete or Failed condition.
func isFinished(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == v1.ConditionTrue {
			return true
		}
	}
	return false
}

func findCondition(s *batchv1.JobStatus, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// setCondition sets a True condition unless it is already True.
func setCondition(s *batchv1.JobStatus, t batchv1.JobConditionType, reason, message string, now time.Time) {
	setConditionStatus(s, t, v1.ConditionTrue, reason, message, now)
}

func setConditionStatus(s *batchv1.JobStatus, t batchv1.JobConditionType, st v1.ConditionStatus, reason, message string, now time.Time) {
	if c := findCondition(s, t); c != nil {
		if c.Status == st {
			return
		}
		*c = batchv1.JobCondition{Type: t, Status: st, Reason: reason, Message: message,
			LastProbeTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)}
		return
	}
	s.Conditions = append(s.Conditions, batchv1.JobCondition{Type: t, Status: st, Reason: reason, Message: message,
		LastProbeTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)})
}

// updateStatus writes status unless nothing changed.
func (c *Controller) updateStatus(ctx context.Context, job *batchv1.Job, status *batchv1.JobStatus) (*batchv1.Job, error) {
	if status.UncountedTerminatedPods != nil && len(status.UncountedTerminatedPods.Succeeded)+len(status.UncountedTerminatedPods.Failed) == 0 &&
		job.Status.UncountedTerminatedPods == nil {
		status.UncountedTerminatedPods = nil
	}
	if equality.Semantic.DeepEqual(&job.Status, status) {
		return job, nil
	}
	next := job.DeepCopy()
	next.Status = *status
	updated, err := c.client.BatchV1().Jobs(job.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("failed to update status of job %q: %w", job.Namespace+"/"+job.Name, err)
	}
	return updated, nil
}
