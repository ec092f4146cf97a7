package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

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

// candidate is a node where evicting victims makes the pod fit;
// numPDBViolations of the victims are pods whose eviction violates a
// PodDisruptionBudget.
type candidate struct {
	node             string
	victims          []*v1.Pod
	numPDBViolations int
}

// preemptionResult is what the PostFilter step decided.
type preemptionResult struct {
	// nominatedNode is the node the pod will go to once the victims are
	// gone; empty if preemption found nothing to do.
	nominatedNode string
	victims       []*v1.Pod
	// pdbViolations counts the victims whose eviction violates a
	// PodDisruptionBudget.
	pdbViolations int
	// message is the "preemption: ..." part of the FailedScheduling
	// message, empty when preemption succeeded.
	message string
}

// preempt runs kube-scheduler's DefaultPreemption for a pod no node fit:
// on every node where eviction might help, it removes the pods of lower
// priority, checks the pod then fits, and gives back as many of them as
// still let it fit, first those whose eviction would violate a
// PodDisruptionBudget, then the others (each group higher priority first).
// Among the candidate nodes it picks the one with the fewest
// PodDisruptionBudget violations, then the lowest highest-victim priority,
// then the lowest sum of victim priorities, then the fewest victims, then
// the latest start of the highest-priority victims. Budgets are best
// effort, as in kube-scheduler: when every candidate violates one, the
// pod still preempts on the node that violates the fewest. The victims are
// deleted after they get a DisruptionTarget condition and a Preempted
// event.
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
	pdbs, err := s.pdbLister.List(labels.Everything())
	if err != nil {
		return preemptionResult{message: fmt.Sprintf("preemption: failed to list PodDisruptionBudgets: %v", err)}
	}
	limit := max(len(s.snapshot.List())*minCandidateNodesPercentage/100, minCandidateNodesAbsolute)

	var candidates []candidate
	for _, node := range potential {
		if len(candidates) >= limit {
			break
		}
		victims, numPDBViolations, st := s.selectVictimsOnNode(ctx, prof.fwk, state, pod, priority, node, pdbs)
		if !st.IsSuccess() {
			statuses[node] = st
			continue
		}
		candidates = append(candidates, candidate{node: node, victims: victims, numPDBViolations: numPDBViolations})
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
	return preemptionResult{nominatedNode: best.node, victims: best.victims, pdbViolations: best.numPDBViolations}
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
// node so that pod fits, as kube-scheduler's SelectVictimsOnNode: it
// removes every pod of lower priority, checks the pod then fits, and gives
// back as many as still let it fit, first the pods whose eviction would
// violate one of pdbs, then the others, each group higher priority first.
// It returns the victims, higher priority first, and how many of them
// violate a budget.
func (s *Scheduler) selectVictimsOnNode(ctx context.Context, fwk *framework.Framework, state *framework.CycleState, pod *v1.Pod, priority int32, node string, pdbs []*policyv1.PodDisruptionBudget) ([]*v1.Pod, int, *framework.Status) {
	orig, err := s.snapshot.Get(node)
	if err != nil {
		return nil, 0, framework.AsStatus(err)
	}
	ni := orig.Clone()
	var potential []*v1.Pod
	for _, pi := range orig.Pods {
		if queuesort.PodPriority(pi.Pod) < priority {
			potential = append(potential, pi.Pod)
			if err := ni.RemovePod(pi.Pod); err != nil {
				return nil, 0, framework.AsStatus(err)
			}
		}
	}
	if len(potential) == 0 {
		return nil, 0, framework.NewStatus(framework.UnschedulableAndUnresolvable, msgNoVictims)
	}
	if st := fwk.RunFilterPlugins(ctx, state, pod, ni); !st.IsSuccess() {
		return nil, 0, st
	}
	sort.SliceStable(potential, func(i, j int) bool { return moreImportantPod(potential[i], potential[j]) })
	violating, nonViolating := filterPodsWithPDBViolation(potential, pdbs)
	var victims []*v1.Pod
	// reprieve gives p back to the node and reports whether the pod still
	// fits; if not, p is a victim.
	reprieve := func(p *v1.Pod) (bool, error) {
		ni.AddPod(p)
		if fwk.RunFilterPlugins(ctx, state, pod, ni).IsSuccess() {
			return true, nil
		}
		if err := ni.RemovePod(p); err != nil {
			return false, err
		}
		victims = append(victims, p)
		return false, nil
	}
	numViolating := 0
	for _, p := range violating {
		fits, err := reprieve(p)
		if err != nil {
			return nil, 0, framework.AsStatus(err)
		}
		if !fits {
			numViolating++
		}
	}
	for _, p := range nonViolating {
		if _, err := reprieve(p); err != nil {
			return nil, 0, framework.AsStatus(err)
		}
	}
	if len(violating) != 0 && len(nonViolating) != 0 {
		sort.SliceStable(victims, func(i, j int) bool { return moreImportantPod(victims[i], victims[j]) })
	}
	return victims, numViolating, nil
}

// filterPodsWithPDBViolation splits pods, in their order, into those whose
// eviction would violate a PodDisruptionBudget and the others, as
// kube-scheduler's filterPodsWithPDBViolation: a budget covers a pod of
// its namespace its selector matches (a nil or empty selector matches
// none), unless the pod is already among its status.disruptedPods; each
// covered pod uses up one of the budget's status.disruptionsAllowed, and a
// pod that takes a budget below zero violates it.
func filterPodsWithPDBViolation(pods []*v1.Pod, pdbs []*policyv1.PodDisruptionBudget) (violating, nonViolating []*v1.Pod) {
	allowed := make([]int32, len(pdbs))
	for i, pdb := range pdbs {
		allowed[i] = pdb.Status.DisruptionsAllowed
	}
	for _, p := range pods {
		violates := false
		// A pod without labels matches no budget.
		if len(p.Labels) != 0 {
			for i, pdb := range pdbs {
				if pdb.Namespace != p.Namespace {
					continue
				}
				selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
				if err != nil || selector.Empty() || !selector.Matches(labels.Set(p.Labels)) {
					continue
				}
				// The API server already counted a disrupted pod.
				if _, ok := pdb.Status.DisruptedPods[p.Name]; ok {
					continue
				}
				allowed[i]--
				if allowed[i] < 0 {
					violates = true
				}
			}
		}
		if violates {
			violating = append(violating, p)
		} else {
			nonViolating = append(nonViolating, p)
		}
	}
	return violating, nonViolating
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

// pickOneNodeForPreemption applies kube-scheduler's criteria in order:
// fewest PodDisruptionBudget violations, lowest highest-victim priority,
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
	cs = filter(cs, func(c candidate) int64 { return -int64(c.numPDBViolations) })
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
			// A strategic merge patch of the one condition, as upstream's
			// preemption applies it: no resourceVersion to conflict on
			// (the victim's copy may be behind), the other conditions kept.
			cond.LastTransitionTime = metav1.Now()
			patch, err := json.Marshal(map[string]any{
				"metadata": map[string]any{"uid": victim.UID},
				"status":   map[string]any{"conditions": []v1.PodCondition{cond}},
			})
			if err == nil {
				_, err = s.client.CoreV1().Pods(victim.Namespace).Patch(ctx, victim.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
			}
			if err != nil && !apierrors.IsNotFound(err) {
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
	d.PDBViolations = r.pdbViolations
	for _, v := range r.victims {
		d.Victims = append(d.Victims, v.Namespace+"/"+v.Name)
	}
}
