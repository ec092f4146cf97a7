package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/glassplane/glassplane/controlplane/scheduler/explain"
	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
	"github.com/glassplane/glassplane/controlplane/tempo"
)

// ErrNoNodesAvailable is the failure of a cycle that found no node at all.
var ErrNoNodesAvailable = errors.New("no nodes available to schedule pods")

// Event reasons, as kube-scheduler writes them.
const (
	ReasonScheduled        = "Scheduled"
	ReasonFailedScheduling = "FailedScheduling"
)

// Limits of kube-scheduler's numFeasibleNodesToFind.
const (
	minFeasibleNodesToFind           = 100
	minFeasibleNodesPercentageToFind = 5
	// eventNoteLengthLimit is the API's limit on an event message.
	eventNoteLengthLimit = 1024
)

// scheduleOne runs one scheduling cycle for a popped pod: filter, score,
// pick a node, assume the pod there and hand it to a binding goroutine.
func (s *Scheduler) scheduleOne(ctx context.Context, pi *framework.QueuedPodInfo) {
	pod := pi.Pod
	key := pod.Namespace + "/" + pod.Name
	cycle := s.queue.SchedulingCycle()
	prof := s.profileFor(pod)
	if prof == nil || s.skipPodSchedule(prof, pod) {
		s.queue.Done(pod)
		return
	}
	if tempo.Wait(ctx, "schedule pod "+key) != nil {
		s.queue.Done(pod)
		return
	}

	start := time.Now()
	d := explain.Decision{Attempt: pi.Attempts, Time: metav1.NewTime(start), Pod: key, FilterPlugins: prof.filterPlugins}
	state := framework.NewCycleState()
	s.cache.UpdateSnapshot(s.snapshot)
	host, err := s.schedulePod(ctx, prof.fwk, state, pod, &d)
	if err != nil {
		var fitErr *framework.FitError
		if errors.As(err, &fitErr) && !prof.disablePreemption {
			r := s.preempt(ctx, prof, state, pod, fitErr)
			fitErr.Diagnosis.PostFilterMsg = r.message
			explainPreemption(&d, r)
		}
		s.handleSchedulingFailure(ctx, prof, pi, cycle, err, d)
		state.ReleaseScores()
		return
	}

	assumed := pod.DeepCopy()
	assumed.Spec.NodeName = host
	if err := s.cache.AssumePod(assumed); err != nil {
		s.handleSchedulingFailure(ctx, prof, pi, cycle, err, d)
		state.ReleaseScores()
		return
	}
	d.Node = host
	s.log.Debug("pod fits", "pod", key, "node", host, "evaluatedNodes", len(d.Filter), "feasibleNodes", d.Feasible, "attempt", pi.Attempts)

	s.binds.Add(1)
	go func() {
		defer s.binds.Done()
		if st := prof.fwk.RunPreBindPlugins(ctx, state, assumed, host); !st.IsSuccess() {
			if ferr := s.cache.ForgetPod(assumed); ferr != nil {
				s.log.Error("failed to forget assumed pod", "pod", key, "err", ferr)
			}
			d.Node = ""
			s.handleSchedulingFailure(ctx, prof, pi, cycle, st.AsError(), d)
			state.ReleaseScores()
			return
		}
		s.bind(ctx, prof, pi, cycle, assumed, d)
		// bind encoded d's scores (record, summary) or
		// recorded the failure: they are not needed any more.
		state.ReleaseScores()
	}()
}

// skipPodSchedule reports whether the popped pod must not be scheduled:
// it is being deleted, or it is already assumed onto a node.
func (s *Scheduler) skipPodSchedule(prof *profile, pod *v1.Pod) bool {
	if pod.DeletionTimestamp != nil {
		prof.recorder.Eventf(pod, v1.EventTypeWarning, ReasonFailedScheduling, "skip schedule deleting pod: %v/%v", pod.Namespace, pod.Name)
		return true
	}
	return s.cache.IsAssumedPod(pod)
}

// schedulePod finds the node for the pod, recording every step in d. It
// returns a *framework.FitError when no node fits.
func (s *Scheduler) schedulePod(ctx context.Context, fwk *framework.Framework, state *framework.CycleState, pod *v1.Pod, d *explain.Decision) (string, error) {
	nodes := s.snapshot.List()
	d.Nodes = len(nodes)
	if len(nodes) == 0 {
		return "", ErrNoNodesAvailable
	}
	diagnosis := framework.Diagnosis{NodeToStatus: map[string]*framework.Status{}}

	if st := fwk.RunPreFilterPlugins(ctx, state, pod); !st.IsSuccess() {
		if !st.IsRejected() {
			return "", fmt.Errorf("running PreFilter plugin %q: %w", st.Plugin(), st.AsError())
		}
		for _, ni := range nodes {
			name := ni.Node().Name
			diagnosis.NodeToStatus[name] = st
			d.Filter = append(d.Filter, explain.NodeFilter{Node: name, Plugin: st.Plugin(), Reason: st.Message()})
		}
		diagnosis.PreFilterMsg = st.Message()
		return "", &framework.FitError{Pod: pod, NumAllNodes: len(nodes), Diagnosis: diagnosis}
	}

	results, err := fwk.FilterNodes(ctx, state, pod, nodes, s.nextStartNodeIndex, s.numFeasibleNodesToFind(len(nodes)))
	if err != nil {
		return "", err
	}
	s.nextStartNodeIndex = (s.nextStartNodeIndex + len(results)) % len(nodes)
	feasible := make([]*framework.NodeInfo, 0, len(results))
	d.Filter = make([]explain.NodeFilter, 0, len(results))
	for _, r := range results {
		name := r.NodeInfo.Node().Name
		if r.Status.IsSuccess() {
			feasible = append(feasible, r.NodeInfo)
			d.Filter = append(d.Filter, explain.NodeFilter{Node: name, Passed: true})
			continue
		}
		diagnosis.NodeToStatus[name] = r.Status
		d.Filter = append(d.Filter, explain.NodeFilter{Node: name, Plugin: r.Status.Plugin(), Reason: r.Status.Message()})
	}
	d.Feasible = len(feasible)
	switch len(feasible) {
	case 0:
		return "", &framework.FitError{Pod: pod, NumAllNodes: len(nodes), Diagnosis: diagnosis}
	case 1:
		// Like kube-scheduler, don't score a single candidate.
		return feasible[0].Node().Name, nil
	}

	if st := fwk.RunPreScorePlugins(ctx, state, pod, feasible); !st.IsSuccess() {
		return "", fmt.Errorf("running PreScore plugin %q: %w", st.Plugin(), st.AsError())
	}
	scores, st := fwk.RunScorePlugins(ctx, state, pod, feasible)
	if !st.IsSuccess() {
		return "", fmt.Errorf("running Score plugin %q: %w", st.Plugin(), st.AsError())
	}
	host, err := framework.SelectHost(scores, s.rng)
	sortScores(scores)
	d.Scores = scores
	return host, err
}

// sortScores orders a cycle's scores best first, as the explanation lists
// them.
func sortScores(scores []explain.NodeScore) {
	slices.SortFunc(scores, func(a, b explain.NodeScore) int {
		if c := cmp.Compare(b.Total, a.Total); c != 0 {
			return c
		}
		return strings.Compare(a.Node, b.Node)
	})
}

// numFeasibleNodesToFind is kube-scheduler's cap on how many feasible nodes
// a cycle looks for: every node below 100 nodes, else a percentage that
// shrinks as the cluster grows, but never fewer than 100.
func (s *Scheduler) numFeasibleNodesToFind(numAllNodes int) int {
	if numAllNodes < minFeasibleNodesToFind {
		return numAllNodes
	}
	percentage := s.cfg.PercentageOfNodesToScore
	if percentage >= 100 {
		return numAllNodes
	}
	if percentage <= 0 {
		percentage = max(50-numAllNodes/125, minFeasibleNodesPercentageToFind)
	}
	return max(numAllNodes*percentage/100, minFeasibleNodesToFind)
}

// bind posts the Binding, queues the attempt for the pod's decision record
// and reports the outcome as an event.
func (s *Scheduler) bind(ctx context.Context, prof *profile, pi *framework.QueuedPodInfo, cycle int64, assumed *v1.Pod, d explain.Decision) {
	key := assumed.Namespace + "/" + assumed.Name
	d.Message = fmt.Sprintf("Successfully assigned %v/%v to %v", assumed.Namespace, assumed.Name, d.Node)
	binding := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: assumed.Namespace, Name: assumed.Name, UID: assumed.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: d.Node},
	}
	// The attempt is compressed for its record before the bind, so that
	// it is queued the moment the bind succeeds.
	blob := s.decisions.encode(assumed, d)
	bctx, cancel := context.WithTimeout(ctx, s.cfg.BindTimeout)
	err := s.client.CoreV1().Pods(assumed.Namespace).Bind(bctx, binding, metav1.CreateOptions{})
	cancel()
	if err != nil {
		if ferr := s.cache.ForgetPod(assumed); ferr != nil {
			s.log.Error("failed to forget assumed pod", "pod", key, "err", ferr)
		}
		d.Node = ""
		s.handleSchedulingFailure(ctx, prof, pi, cycle, fmt.Errorf("binding rejected: %w", err), d)
		return
	}
	if blob != nil {
		s.decisions.add(assumed, blob)
	}
	s.queue.Done(assumed)
	prof.recorder.AnnotatedEventf(assumed, map[string]string{explain.SummaryAnnotation: explain.SummaryJSON(d)}, v1.EventTypeNormal, ReasonScheduled, "Successfully assigned %v/%v to %v", assumed.Namespace, assumed.Name, d.Node)
	s.log.Debug("pod bound", "pod", key, "node", d.Node, "attempt", d.Attempt)
}

// handleSchedulingFailure records the failed decision, requeues the pod,
// and reports the failure as a FailedScheduling event and the pod's
// PodScheduled=False condition.
func (s *Scheduler) handleSchedulingFailure(ctx context.Context, prof *profile, pi *framework.QueuedPodInfo, cycle int64, err error, d explain.Decision) {
	pod := pi.Pod
	key := pod.Namespace + "/" + pod.Name
	reason := v1.PodReasonSchedulerError
	rejected := false
	var fitErr *framework.FitError
	switch {
	case errors.As(err, &fitErr):
		reason, rejected = v1.PodReasonUnschedulable, true
	case errors.Is(err, ErrNoNodesAvailable):
		reason, rejected = v1.PodReasonUnschedulable, true
	}
	msg := err.Error()
	d.Message = msg
	s.decisions.record(pod, d)
	if rejected {
		s.log.Debug("pod is unschedulable", "pod", key, "reason", msg, "attempt", pi.Attempts)
	} else {
		s.log.Error("failed to schedule pod", "pod", key, "err", err, "attempt", pi.Attempts)
	}

	cached, getErr := s.podLister.Pods(pod.Namespace).Get(pod.Name)
	if getErr != nil || cached.UID != pod.UID {
		s.queue.Done(pod)
		s.log.Debug("pod is gone, not requeued", "pod", key)
		return
	}
	if cached.Spec.NodeName != "" {
		s.queue.Done(pod)
		s.log.Debug("pod was assigned elsewhere, not requeued", "pod", key, "node", cached.Spec.NodeName)
		return
	}
	s.queue.AddUnschedulableIfNotPresent(pi, cycle, rejected)

	prof.recorder.AnnotatedEventf(cached, map[string]string{explain.SummaryAnnotation: explain.SummaryJSON(d)}, v1.EventTypeWarning, ReasonFailedScheduling, "%s", truncateMessage(msg))
	if err := s.setPodScheduledFalse(ctx, cached, reason, msg, d.NominatedNode); err != nil {
		s.log.Error("failed to update pod condition", "pod", key, "condition", v1.PodScheduled, "err", err)
	}
}

// setPodScheduledFalse sets the pod's PodScheduled condition to False with
// reason and message, and status.nominatedNodeName when preemption
// nominated a node, unless the pod already says exactly that.
func (s *Scheduler) setPodScheduledFalse(ctx context.Context, pod *v1.Pod, reason, msg, nominatedNode string) error {
	cond := v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: reason, Message: msg}
	current := pod.DeepCopy()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		changed := updatePodCondition(&current.Status, cond)
		if nominatedNode != "" && current.Status.NominatedNodeName != nominatedNode {
			current.Status.NominatedNodeName = nominatedNode
			changed = true
		}
		if !changed {
			return nil
		}
		_, err := s.client.CoreV1().Pods(current.Namespace).UpdateStatus(ctx, current, metav1.UpdateOptions{})
		if err == nil {
			return nil
		}
		latest, getErr := s.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if getErr != nil || latest.UID != pod.UID || latest.Spec.NodeName != "" {
			return err
		}
		current = latest
		return err
	})
}

// updatePodCondition sets cond in status as Kubernetes' podutil does: the
// transition time moves only when the status flips. It reports whether
// anything changed.
func updatePodCondition(status *v1.PodStatus, cond v1.PodCondition) bool {
	cond.LastTransitionTime = metav1.Now()
	for i := range status.Conditions {
		old := &status.Conditions[i]
		if old.Type != cond.Type {
			continue
		}
		if old.Status == cond.Status {
			cond.LastTransitionTime = old.LastTransitionTime
		}
		equal := old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message &&
			old.LastProbeTime.Equal(&cond.LastProbeTime) && old.LastTransitionTime.Equal(&cond.LastTransitionTime)
		*old = cond
		return !equal
	}
	status.Conditions = append(status.Conditions, cond)
	return true
}

// truncateMessage keeps an event message within the API's limit.
func truncateMessage(msg string) string {
	if len(msg) <= eventNoteLengthLimit {
		return msg
	}
	const suffix = " ..."
	return msg[:eventNoteLengthLimit-len(suffix)] + suffix
}
