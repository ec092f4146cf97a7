package controllerutil

import (
	"sort"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodDeletionCostAnnotation ranks pods for scale-down: lower cost goes first.
const PodDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

// IsPodActive reports whether pod counts toward its controller: not
// finished and not being deleted.
func IsPodActive(pod *v1.Pod) bool {
	return pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed && pod.DeletionTimestamp == nil
}

// FilterActivePods returns the active pods of pods.
func FilterActivePods(pods []*v1.Pod) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range pods {
		if IsPodActive(p) {
			out = append(out, p)
		}
	}
	return out
}

// podReadyCondition returns the pod's Ready condition or nil.
func podReadyCondition(pod *v1.Pod) *v1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == v1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// IsPodReady reports whether the pod's Ready condition is True.
func IsPodReady(pod *v1.Pod) bool {
	c := podReadyCondition(pod)
	return c != nil && c.Status == v1.ConditionTrue
}

// IsPodAvailable reports whether pod has been ready for at least
// minReadySeconds at now.
func IsPodAvailable(pod *v1.Pod, minReadySeconds int32, now time.Time) bool {
	c := podReadyCondition(pod)
	if c == nil || c.Status != v1.ConditionTrue {
		return false
	}
	if minReadySeconds == 0 {
		return true
	}
	d := time.Duration(minReadySeconds) * time.Second
	return !c.LastTransitionTime.IsZero() && c.LastTransitionTime.Add(d).Before(now)
}

// RankPodsForDeletion sorts pods so the least valuable come first, as
// Kubernetes' ActivePodsWithRanks orders them: unassigned before assigned,
// pending before unknown before running, not ready before ready, lower
// deletion cost first, pods doubled up on a node first, ready for less
// time first, more restarts first, newer first. related are the pods that
// count for doubling up (the controller's own and its siblings').
func RankPodsForDeletion(pods, related []*v1.Pod) {
	perNode := map[string]int{}
	for _, p := range related {
		if p.Spec.NodeName != "" && IsPodActive(p) {
			perNode[p.Spec.NodeName]++
		}
	}
	rank := make(map[*v1.Pod]int, len(pods))
	for _, p := range pods {
		rank[p] = perNode[p.Spec.NodeName]
	}
	now := time.Now()
	sort.SliceStable(pods, func(i, j int) bool { return podLess(pods[i], pods[j], rank, now) })
}

var phaseRank = map[v1.PodPhase]int{v1.PodPending: 0, v1.PodUnknown: 1, v1.PodRunning: 2}

func podLess(a, b *v1.Pod, rank map[*v1.Pod]int, now time.Time) bool {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if phaseRank[a.Status.Phase] != phaseRank[b.Status.Phase] {
		return phaseRank[a.Status.Phase] < phaseRank[b.Status.Phase]
	}
	if IsPodReady(a) != IsPodReady(b) {
		return !IsPodReady(a)
	}
	if ca, cb := deletionCost(a), deletionCost(b); ca != cb {
		return ca < cb
	}
	if rank[a] != rank[b] {
		return rank[a] > rank[b]
	}
	if IsPodReady(a) && IsPodReady(b) {
		ta, tb := podReadyCondition(a).LastTransitionTime, podReadyCondition(b).LastTransitionTime
		if !ta.Equal(&tb) {
			return afterOrZero(&ta, &tb)
		}
	}
	if ra, rb := maxRestarts(a), maxRestarts(b); ra != rb {
		return ra > rb
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return afterOrZero(&a.CreationTimestamp, &b.CreationTimestamp)
	}
	return false
}

// afterOrZero orders a zero time first, then the later time first.
func afterOrZero(a, b *metav1.Time) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero()
	}
	return a.After(b.Time)
}

func deletionCost(p *v1.Pod) int64 {
	v, ok := p.Annotations[PodDeletionCostAnnotation]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0
	}
	return n
}

func maxRestarts(p *v1.Pod) int32 {
	var n int32
	for _, c := range p.Status.ContainerStatuses {
		n = max(n, c.RestartCount)
	}
	return n
}
