package scheduler

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/scheduler/explain"
	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/queuesort"
)

// Preemption wording and limits, as kube-scheduler's DefaultPreemption.
const (
	ReasonPreempted = "Preempted"

	msgPreemptionNotHelpful = "Preemption is not helpful for scheduling"
	msgNoVictims            = "No preemption victims found for incoming pod"

	// minCandidateNodesPercentage and minCandidateNodesAbsolute bound how
	// many candidate nodes a preemption looks at.
	minCandidateNodesPercentage = 10
	minCandidateNodesAbsolute   = 100
)

// candidate is a node where evicting victims makes the pod fit.
type candidate struct {
	node    string
	victims []*v1.Pod
}

// preemptionResult is what the PostFilter step decided.
type preemptionResult struct {
	// nominatedNode is the node the pod will go to once the victims are
	// gone; empty if preemption found nothing to do.
	nominatedNode string
	victims       []*v1.Pod
	// message is the "preemption: ..." part of the FailedScheduling
	// message, empty when preemption succeeded.
	message string
}

// preempt runs kube-scheduler's DefaultPreemption for a pod no node fit:
// on every node where eviction might help, it removes the pods of lower
// priority, checks the pod then fits, and gives back as many of them as
// still let it fit (higher priority first); among the candidate nodes it
// picks the one with the lowest highest-victim priority, then the lowest
// sum of victim priorities, then the fewest victims, then the latest start
// of the highest-priority victims. The victims are deleted after they get a
// DisruptionTarget condition and a Preempted event.
func (s *Scheduler) preempt(ctx context.Context, prof *profile, state *framework.CycleState, pod *v1.Pod, fitErr *framework.FitError) preemptionResult {
	if ok, msg := s.podEligibleToPreemptOthers(pod); !ok {
		return preemptionResult{message: "preemption: " + msg}
	}
	priority := queuesort.PodPriority(pod)
	statuses := make(map[string]*framework.Status, len(fitErr.Diagnosis.NodeToStatus))
	var potential []string
	for node, st := range fitErr.Diagnosis.NodeToStatus {
		if st.Code() == framework.UnschedulableAndUnresolvable {
			statuses[node] = framework.NewStatus(framework.UnschedulableAndUnresolvable, msgPreemptionNotHelpful)
			continue
		}
		potential = append(potential, node)
	}
	sort.Strings(potential)
	limit := max(len(s.snapshot.List())*minCandidateNodesPercentage/100, minCandidateNodesAbsolute)

	var candidates []candidate
	for _, node := range potential {
		if len(candidates) >= limit {
			break
		}
		victims, st := s.selectVictimsOnNode(ctx, prof.fwk, state, pod, priority, node)
		if !st.IsSuccess() {
			statuses[node] = st
			continue
		}
		candidates = append(candidates, candidate{node: node, victims: victims})
	}
	if len(candidates) == 0 {
		inner := framework.FitError{Pod: pod, NumAllNodes: fitErr.NumAllNodes, Diagnosis: framework.Diagnosis{NodeToStatus: statuses}}
		return preemptionResult{message: "preemption: " + inner.Error()}
	}
	best := pickOneNodeForPreemption(candidates)
	if err := s.evictVictims(ctx, prof, pod, best); err != nil {
		s.log.Error("failed to preempt", "pod", pod.Namespace+"/"+pod.Name, "node", best.node, "err", err)
		return preemptionResult{message: "preemption: " + err.Error()}
	}
	return preemptionResult{nominatedNode: best.node, victims: best.victims}
}

// podEligibleToPreemptOthers refuses a pod whose preemptionPolicy is Never,
// and a pod already nominated to a node where a lower-priority pod is still
// terminating (its earlier preemption is still under way).
func (s *Scheduler) podEligibleToPreemptOthers(pod *v1.Pod) (bool, string) {
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == v1.PreemptNever {
		return false, "not eligible due to preemptionPolicy=Never."
	}
	if nominated := pod.Status.NominatedNodeName; nominated != "" {
		if ni, err := s.snapshot.Get(nominated); err == nil {
			priority := queuesort.PodPriority(pod)
			for _, pi := range ni.Pods {
				if pi.Pod.DeletionTimestamp != nil && queuesort.PodPriority(pi.Pod) < priority {
					return false, "not eligible due to a terminating pod on the nominated node."
				}
			}
		}
	}
	return true, ""
}

// selectVictimsOnNode finds the fewest, least important pods to evict from
// node so that pod fits.
func (s *Scheduler) selectVictimsOnNode(ctx context.Context, fwk *framework.Framework, state *framework.CycleState, pod *v1.Pod, priority int32, node string) ([]*v1.Pod, *framework.Status) {
	orig, err := s.snapshot.Get(node)
	if err != nil {
		return nil, framework.AsStatus(err)
	}
	ni := orig.Clone()
	var potential []*v1.Pod
	for _, pi := range orig.Pods {
		if queuesort.PodPriority(pi.Pod) < priority {
			potential = append(potential, pi.Pod)
			if err := ni.RemovePod(pi.Pod); err != nil {
				return nil, framework.AsStatus(err)
			}
		}
	}
	if len(potential) == 0 {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, msgNoVictims)
	}
	if st := fwk.RunFilterPlugins(ctx, state, pod, ni); !st.IsSuccess() {
		return nil, st
	}
	sort.SliceStable(potential, func(i, j int) bool { return moreImportantPod(potential[i], potential[j]) })
	var victims []*v1.Pod
	for _, p := range potential {
		ni.AddPod(p)
		if st := fwk.RunFilterPlugins(ctx, state, pod, ni); !st.IsSuccess() {
			if err := ni.RemovePod(p); err != nil {
				return nil, framework.AsStatus(err)
			}
			victims = append(victims, p)
		}
	}
	return victims, nil
}

// moreImportantPod orders pods by priority, then the earlier start.
func moreImportantPod(a, b *v1.Pod) bool {
	pa, pb := queuesort.PodPriority(a), queuesort.PodPriority(b)
	if pa != pb {
		return pa > pb
	}
	return podStartTime(a).Before(podStartTime(b))
}

func podStartTime(p *v1.Pod) time.Time {
	if p.Status.StartTime != nil {
		return p.Status.StartTime.Time
	}
	return p.CreationTimestamp.Time
}

// pickOneNodeForPreemption applies kube-scheduler's criteria in order (there
// are no PodDisruptionBudgets to count): lowest highest-victim priority,
// lowest sum of priorities, fewest victims, latest start of the highest
// priority victims, then the first.
func pickOneNodeForPreemption(cs []candidate) candidate {
	filter := func(cs []candidate, score func(candidate) int64) []candidate {
		best := int64(math.MinInt64)
		var out []candidate
		for _, c := range cs {
			switch v := score(c); {
			case v > best:
				best, out = v, []candidate{c}
			case v == best:
				out = append(out, c)
			}
		}
		return out
	}
	highest := func(c candidate) int32 {
		h := int32(math.MinInt32)
		for _, v := range c.victims {
			h = max(h, queuesort.PodPriority(v))
		}
		return h
	}
	cs = filter(cs, func(c candidate) int64 {
		if len(c.victims) == 0 {
			return math.MaxInt64
		}
		return -int64(highest(c))
	})
	cs = filter(cs, func(c candidate) int64 {
		var sum int64
		for _, v := range c.victims {
			sum += int64(queuesort.PodPriority(v)) + math.MaxInt32 + 1
		}
		return -sum
	})
	cs = filter(cs, func(c candidate) int64 { return -int64(len(c.victims)) })
	cs = filter(cs, func(c candidate) int64 {
		h := highest(c)
		earliest := int64(math.MaxInt64)
		for _, v := range c.victims {
			if queuesort.PodPriority(v) == h {
				earliest = min(earliest, podStartTime(v).UnixNano())
			}
		}
		return earliest
	})
	return cs[0]
}

// evictVictims marks each victim with the DisruptionTarget condition,
// records a Preempted event on it and deletes it.
func (s *Scheduler) evictVictims(ctx context.Context, prof *profile, preemptor *v1.Pod, c candidate) error {
	schedulerName := preemptor.Spec.SchedulerName
	if schedulerName == "" {
		schedulerName = DefaultSchedulerName
	}
	for _, victim := range c.victims {
		cond := v1.PodCondition{
			Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonPreemptionByScheduler,
			Message: fmt.Sprintf("%s: preempting to accommodate a higher priority pod", schedulerName),
		}
		latest := victim.DeepCopy()
		if updatePodCondition(&latest.Status, cond) {
			if _, err := s.client.CoreV1().Pods(victim.Namespace).UpdateStatus(ctx, latest, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
				s.log.Debug("failed to set DisruptionTarget on victim", "pod", victim.Namespace+"/"+victim.Name, "err", err)
			}
		}
		err := s.client.CoreV1().Pods(victim.Namespace).Delete(ctx, victim.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &victim.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("failed to delete victim %q: %w", victim.Namespace+"/"+victim.Name, err)
		}
		prof.recorder.Eventf(victim, v1.EventTypeNormal, ReasonPreempted, "Preempted by pod %v on node %v", preemptor.UID, c.node)
		s.log.Info("preempted pod", "victim", victim.Namespace+"/"+victim.Name, "preemptor", preemptor.Namespace+"/"+preemptor.Name, "node", c.node)
	}
	return nil
}

// explainPreemption records the preemption outcome in the decision.
func explainPreemption(d *explain.Decision, r preemptionResult) {
	d.NominatedNode = r.nominatedNode
	for _, v := range r.victims {
		d.Victims = append(d.Victims, v.Namespace+"/"+v.Name)
	}
}
