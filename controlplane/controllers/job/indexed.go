package job

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// completionIndexEnv is the variable an Indexed job's containers read
// their index from.
const completionIndexEnv = "JOB_COMPLETION_INDEX"

// isIndexed reports whether the job's completionMode is Indexed: each
// pod runs one index in [0, completions), and the job completes when every
// index has succeeded once.
func isIndexed(job *batchv1.Job) bool {
	return job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion && job.Spec.Completions != nil
}

// podIndex returns the pod's completion index, or -1 when it has none or
// it is out of range.
func podIndex(job *batchv1.Job, p *v1.Pod) int {
	v, ok := p.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		return -1
	}
	ix, err := strconv.Atoi(v)
	if err != nil || ix < 0 || ix >= int(*job.Spec.Completions) {
		return -1
	}
	return ix
}

// parseIndexes reads status.completedIndexes ("1,3-5,7").
func parseIndexes(s string) sets.Set[int] {
	out := sets.New[int]()
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		for i := a; i <= b; i++ {
			out.Insert(i)
		}
	}
	return out
}

// formatIndexes writes indexes as Kubernetes does: sorted, a run of three
// or more as "a-b", "a,b" for two.
func formatIndexes(set sets.Set[int]) string {
	ixs := sets.List(set)
	var parts []string
	for i := 0; i < len(ixs); {
		j := i
		for j+1 < len(ixs) && ixs[j+1] == ixs[j]+1 {
			j++
		}
		switch j - i {
		case 0:
			parts = append(parts, strconv.Itoa(ixs[i]))
		case 1:
			parts = append(parts, strconv.Itoa(ixs[i]), strconv.Itoa(ixs[j]))
		default:
			parts = append(parts, fmt.Sprintf("%d-%d", ixs[i], ixs[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// indexesToRun returns up to n indexes that have neither succeeded nor an
// active pod, lowest first.
func indexesToRun(job *batchv1.Job, completed sets.Set[int], active []*v1.Pod, n int) []int {
	running := sets.New[int]()
	for _, p := range active {
		if ix := podIndex(job, p); ix >= 0 {
			running.Insert(ix)
		}
	}
	var out []int
	for ix := 0; ix < int(*job.Spec.Completions) && len(out) < n; ix++ {
		if !completed.Has(ix) && !running.Has(ix) {
			out = append(out, ix)
		}
	}
	return out
}

// surplusIndexedPods returns the active pods an Indexed job must delete:
// those without a valid index, those whose index has succeeded, and all
// but one per index.
func surplusIndexedPods(job *batchv1.Job, completed sets.Set[int], active []*v1.Pod) (keep, surplus []*v1.Pod) {
	seen := sets.New[int]()
	for _, p := range active {
		ix := podIndex(job, p)
		if ix < 0 || completed.Has(ix) || seen.Has(ix) {
			surplus = append(surplus, p)
			continue
		}
		seen.Insert(ix)
		keep = append(keep, p)
	}
	return keep, surplus
}

// setIndex makes pod run index ix, as Kubernetes does: the index
// annotation and label, "<job>-<ix>-" names, hostname "<job>-<ix>", and
// JOB_COMPLETION_INDEX in every container from the annotation.
func setIndex(job *batchv1.Job, pod *v1.Pod, ix int) {
	v := strconv.Itoa(ix)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[batchv1.JobCompletionIndexAnnotation] = v
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[batchv1.JobCompletionIndexAnnotation] = v
	pod.GenerateName = fmt.Sprintf("%s-%d-", job.Name, ix)
	if pod.Spec.Hostname == "" {
		pod.Spec.Hostname = fmt.Sprintf("%s-%d", job.Name, ix)
	}
	env := v1.EnvVar{Name: completionIndexEnv, ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{
		APIVersion: "v1", FieldPath: fmt.Sprintf("metadata.annotations['%s']", batchv1.JobCompletionIndexAnnotation),
	}}}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			has := false
			for _, e := range list[i].Env {
				has = has || e.Name == completionIndexEnv
			}
			if !has {
				list[i].Env = append(list[i].Env, env)
			}
		}
	}
}

// hasBackoffLimitPerIndex reports whether an Indexed job counts failures
// per index (spec.backoffLimitPerIndex) rather than for the whole job.
func hasBackoffLimitPerIndex(job *batchv1.Job) bool {
	return isIndexed(job) && job.Spec.BackoffLimitPerIndex != nil
}

// failedIndexes is Kubernetes' calculateFailedIndexes: status.failedIndexes
// and the indexes of failed pods still holding the finalizer that either
// matched a FailIndex rule or, counted, used up backoffLimitPerIndex.
func failedIndexes(job *batchv1.Job, pods []*v1.Pod) sets.Set[int] {
	failed := sets.New[int]()
	if job.Status.FailedIndexes != nil {
		failed = parseIndexes(*job.Status.FailedIndexes)
	}
	for _, p := range pods {
		if ix := podIndex(job, p); ix >= 0 && hasTrackingFinalizer(p) && isIndexFailed(job, p) {
			failed.Insert(ix)
		}
	}
	return failed
}

// isIndexFailed reports whether a pod fails its index for good.
func isIndexFailed(job *batchv1.Job, p *v1.Pod) bool {
	if !isPodFailed(job, p) {
		return false
	}
	_, counts, action := matchPodFailurePolicy(job.Spec.PodFailurePolicy, p)
	if action != nil && *action == batchv1.PodFailurePolicyActionFailIndex {
		return true
	}
	return counts && indexFailureCount(p, batchv1.JobIndexFailureCountAnnotation) >= *job.Spec.BackoffLimitPerIndex
}

// indexFailureCount reads a per-index failure count annotation, 0 when it
// is missing or invalid.
func indexFailureCount(p *v1.Pod, annotation string) int32 {
	n, err := strconv.ParseInt(p.Annotations[annotation], 10, 32)
	if err != nil || n < 0 {
		return 0
	}
	return int32(n)
}

// delayedFailedPods is Kubernetes' getPodsWithDelayedDeletionPerIndex: per
// index still to retry (not succeeded, not failed, no active pod), the
// latest failed pod holding the finalizer. That pod keeps its finalizer
// until its replacement exists, which inherits its failure counts and
// waits out its backoff.
func delayedFailedPods(job *batchv1.Job, pods []*v1.Pod, succeeded, failed sets.Set[int]) map[int]*v1.Pod {
	active := sets.New[int]()
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
			active.Insert(podIndex(job, p))
		}
	}
	delayed := map[int]*v1.Pod{}
	for _, p := range pods {
		ix := podIndex(job, p)
		if ix < 0 || !hasTrackingFinalizer(p) || !isPodFailed(job, p) || succeeded.Has(ix) || failed.Has(ix) || active.Has(ix) {
			continue
		}
		if last, ok := delayed[ix]; ok && (absoluteFailureCount(last) > absoluteFailureCount(p) || finishedTime(p).Before(finishedTime(last))) {
			continue
		}
		delayed[ix] = p
	}
	return delayed
}

// absoluteFailureCount counts a pod's index failures, ignored ones too.
func absoluteFailureCount(p *v1.Pod) int32 {
	return indexFailureCount(p, batchv1.JobIndexFailureCountAnnotation) + indexFailureCount(p, batchv1.JobIndexIgnoredFailureCountAnnotation)
}

// setIndexFailureCounts gives a pod replacing failed pod the failure
// counts of its index, this failure included, as Kubernetes'
// addIndexFailureCountAnnotation.
func setIndexFailureCounts(job *batchv1.Job, pod, failed *v1.Pod) {
	var count, ignored int32
	if failed != nil {
		count = indexFailureCount(failed, batchv1.JobIndexFailureCountAnnotation)
		ignored = indexFailureCount(failed, batchv1.JobIndexIgnoredFailureCountAnnotation)
		if _, counts, _ := matchPodFailurePolicy(job.Spec.PodFailurePolicy, failed); counts {
			count++
		} else {
			ignored++
		}
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[batchv1.JobIndexFailureCountAnnotation] = strconv.Itoa(int(count))
	if ignored > 0 {
		pod.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] = strconv.Itoa(int(ignored))
	}
}

// indexBackoff is how long an index must still wait before replacing its
// failed pod: DefaultPodFailureBackOff doubled per failure of the index,
// capped at MaxPodFailureBackOff, from when the pod finished.
func indexBackoff(failed *v1.Pod, now time.Time) time.Duration {
	if failed == nil {
		return 0
	}
	delay := DefaultPodFailureBackOff
	for i := int32(1); i < absoluteFailureCount(failed)+1 && delay < MaxPodFailureBackOff; i++ {
		delay *= 2
	}
	delay = min(delay, MaxPodFailureBackOff)
	return max(finishedTime(failed).Add(delay).Sub(now), 0)
}

// finishedTime is when a pod finished, as Kubernetes' getFinishedTime: its
// containers' latest finish, else when it stopped being ready, else its
// deletion, else its creation.
func finishedTime(p *v1.Pod) time.Time {
	var latest time.Time
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.FinishedAt.After(latest) {
			latest = t.FinishedAt.Time
		}
	}
	if !latest.IsZero() {
		return latest
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady && c.Status == v1.ConditionFalse {
			return c.LastTransitionTime.Time
		}
	}
	if p.DeletionTimestamp != nil {
		return p.DeletionTimestamp.Time
	}
	return p.CreationTimestamp.Time
}

// readyIndexes returns the indexes whose backoff has passed, as
// Kubernetes' getPodCreationInfoForIndependentIndexes; when none has, it
// returns the shortest wait.
func readyIndexes(ixs []int, delayed map[int]*v1.Pod, now time.Time) ([]int, time.Duration) {
	var ready []int
	var wait time.Duration
	for _, ix := range ixs {
		d := indexBackoff(delayed[ix], now)
		switch {
		case d == 0:
			ready = append(ready, ix)
		case wait == 0 || d < wait:
			wait = d
		}
	}
	if len(ready) > 0 {
		return ready, 0
	}
	return nil, wait
}
