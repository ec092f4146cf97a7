package statefulset

import (
	"context"
	"errors"
	"sort"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllerutil"
)

// updateSet is UpdateStatefulSet: it brings set's pods one step closer to
// its spec (create, repair, scale down, roll), writes the status, and
// trims the revision history. It returns the status it computed.
func (c *Controller) updateSet(ctx context.Context, set *appsv1.StatefulSet, pods []*v1.Pod) (*appsv1.StatefulSetStatus, error) {
	set = set.DeepCopy()
	revisions, err := c.revisionsOf(ctx, set)
	if err != nil {
		return nil, err
	}
	cur, upd, collisionCount, err := c.revisionsFor(ctx, set, revisions)
	if err != nil {
		return nil, errors.Join(err, c.truncateHistory(ctx, set, pods, revisions, cur, upd))
	}
	status, err := c.updatePods(ctx, set, cur, upd, collisionCount, pods)
	if status == nil {
		return nil, errors.Join(err, c.truncateHistory(ctx, set, pods, revisions, cur, upd))
	}
	statusErr := c.updateStatus(ctx, set, status)
	if err == nil {
		err = statusErr
	}
	return status, errors.Join(err, c.truncateHistory(ctx, set, pods, revisions, cur, upd))
}

// countReplicas sets status's counts from the pods of lists.
func countReplicas(status *appsv1.StatefulSetStatus, minReadySeconds int32, cur, upd *appsv1.ControllerRevision, lists ...[]*v1.Pod) {
	status.Replicas, status.ReadyReplicas, status.AvailableReplicas, status.CurrentReplicas, status.UpdatedReplicas = 0, 0, 0, 0, 0
	for _, list := range lists {
		for _, pod := range list {
			if isCreated(pod) {
				status.Replicas++
			}
			if isRunningAndReady(pod) {
				status.ReadyReplicas++
				if isRunningAndAvailable(pod, minReadySeconds) {
					status.AvailableReplicas++
				}
			}
			if isCreated(pod) && !isTerminating(pod) {
				if podRevision(pod) == cur.Name {
					status.CurrentReplicas++
				}
				if podRevision(pod) == upd.Name {
					status.UpdatedReplicas++
				}
			}
		}
	}
}

// updatePods is updateStatefulSet: the pods in the ordinal range are
// replicas (missing ones made at the right revision), the others are
// condemned. Replicas are created or repaired, condemned pods removed from
// the highest ordinal down, and then the update strategy runs. In
// OrderedReady each step waits for the pods before it to be Running, Ready
// and available; in Parallel they all go at once.
func (c *Controller) updatePods(ctx context.Context, set *appsv1.StatefulSet, cur, upd *appsv1.ControllerRevision, collisionCount int32, pods []*v1.Pod) (*appsv1.StatefulSetStatus, error) {
	currentSet, err := applyRevision(set, cur)
	if err != nil {
		return nil, err
	}
	updateSet, err := applyRevision(set, upd)
	if err != nil {
		return nil, err
	}
	status := &appsv1.StatefulSetStatus{
		ObservedGeneration: set.Generation, CurrentRevision: cur.Name, UpdateRevision: upd.Name,
		CollisionCount: &collisionCount,
	}
	countReplicas(status, set.Spec.MinReadySeconds, cur, upd, pods)

	start := startOrdinal(set)
	replicas := make([]*v1.Pod, replicasOf(set))
	var condemned []*v1.Pod
	for _, pod := range pods {
		switch {
		case inOrdinalRange(pod, set):
			replicas[ordinalOf(pod)-start] = pod
		case ordinalOf(pod) >= 0:
			condemned = append(condemned, pod)
		}
	}
	for i := range replicas {
		if replicas[i] == nil {
			replicas[i] = newVersionedPod(currentSet, updateSet, cur.Name, upd.Name, start+i)
		}
	}
	sort.SliceStable(condemned, func(i, j int) bool { return ordinalOf(condemned[i]) > ordinalOf(condemned[j]) })

	var firstUnhealthy *v1.Pod
	for _, p := range replicas {
		if !isHealthy(p) && firstUnhealthy == nil {
			firstUnhealthy = p
		}
	}
	for i := len(condemned) - 1; i >= 0; i-- {
		if !isHealthy(condemned[i]) && firstUnhealthy == nil {
			firstUnhealthy = condemned[i]
		}
	}
	if set.DeletionTimestamp != nil {
		return status, nil
	}
	monotonic := !allowsBurst(set)
	finish := func(err error) (*appsv1.StatefulSetStatus, error) {
		countReplicas(status, set.Spec.MinReadySeconds, cur, upd, replicas, condemned)
		return status, err
	}

	if stop, err := runForAll(len(replicas), monotonic, func(i int) (bool, error) {
		return c.processReplica(ctx, set, updateSet, monotonic, replicas, i)
	}); stop || err != nil {
		return finish(err)
	}
	if len(set.Spec.VolumeClaimTemplates) > 0 {
		if stop, err := runForAll(len(condemned), monotonic, func(i int) (bool, error) {
			match, err := c.claimsMatchRetention(ctx, updateSet, condemned[i])
			if err != nil {
				return true, err
			}
			if !match {
				if err := c.updateClaimsForRetention(ctx, updateSet, condemned[i]); err != nil {
					return true, err
				}
			}
			return false, nil
		}); stop || err != nil {
			return finish(err)
		}
	}
	if stop, err := runForAll(len(condemned), monotonic, func(i int) (bool, error) {
		return c.processCondemned(ctx, set, firstUnhealthy, monotonic, condemned, i)
	}); stop || err != nil {
		return finish(err)
	}
	countReplicas(status, set.Spec.MinReadySeconds, cur, upd, replicas, condemned)

	if set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return status, nil
	}
	return c.rollingUpdate(ctx, set, replicas, upd, status)
}

// runForAll calls fn for 0..n-1: in order, stopping at the first that asks
// to, when monotonic; else in slow-start batches.
func runForAll(n int, monotonic bool, fn func(i int) (bool, error)) (bool, error) {
	if monotonic {
		for i := range n {
			if stop, err := fn(i); stop || err != nil {
				return true, err
			}
		}
		return false, nil
	}
	var next atomic.Int64
	_, err := controllerutil.SlowStartBatch(n, controllerutil.SlowStartInitialBatchSize, func() error {
		_, err := fn(int(next.Add(1) - 1))
		return err
	})
	return err != nil, err
}

// processReplica is upstream's processReplica for replicas[i]. It returns
// true when the monotonic walk must stop here.
func (c *Controller) processReplica(ctx context.Context, set, updateSet *appsv1.StatefulSet, monotonic bool, replicas []*v1.Pod, i int) (bool, error) {
	pod := replicas[i]
	// A pod that failed or exited is deleted and made again on a later
	// sync, once it is gone.
	if isFailed(pod) || isSucceeded(pod) {
		if pod.DeletionTimestamp == nil {
			if err := c.deletePod(ctx, set, pod); err != nil {
				return true, err
			}
		}
		return true, nil
	}
	if !isCreated(pod) {
		if len(set.Spec.VolumeClaimTemplates) > 0 {
			if stale, err := c.claimIsStale(ctx, set, pod); err != nil || stale {
				return true, err
			}
		}
		if err := c.createPod(ctx, set, pod); err != nil {
			return true, err
		}
		if monotonic {
			return true, nil
		}
	}
	if isPending(pod) && len(set.Spec.VolumeClaimTemplates) > 0 {
		if err := c.createClaims(ctx, set, pod); err != nil {
			return true, err
		}
		if err := c.updateClaimsForRetention(ctx, set, pod); err != nil {
			c.recordPodEvent("update", set, pod, err)
			return true, err
		}
	}
	if monotonic && (isTerminating(pod) || !isRunningAndReady(pod) || !isRunningAndAvailable(pod, set.Spec.MinReadySeconds)) {
		return true, nil
	}
	retentionMatch := true
	if len(set.Spec.VolumeClaimTemplates) > 0 {
		if match, err := c.claimsMatchRetention(ctx, updateSet, pod); err == nil {
			retentionMatch = match
		}
	}
	if identityMatches(set, pod) && storageMatches(set, pod) && retentionMatch {
		return false, nil
	}
	if err := c.updatePod(ctx, updateSet, pod.DeepCopy()); err != nil {
		return true, err
	}
	return false, nil
}

// processCondemned deletes condemned[i], in OrderedReady only once every
// pod before it is healthy (or it is the first unhealthy one).
func (c *Controller) processCondemned(ctx context.Context, set *appsv1.StatefulSet, firstUnhealthy *v1.Pod, monotonic bool, condemned []*v1.Pod, i int) (bool, error) {
	pod := condemned[i]
	if isTerminating(pod) {
		return monotonic, nil
	}
	if monotonic && pod != firstUnhealthy && (!isRunningAndReady(pod) || !isRunningAndAvailable(pod, set.Spec.MinReadySeconds)) {
		return true, nil
	}
	c.log.Debug("deleting pod for scale down", "statefulset", set.Namespace+"/"+set.Name, "pod", pod.Name)
	return true, c.deletePod(ctx, set, pod)
}

// rollingUpdate deletes, from the highest ordinal down to the partition,
// pods not at the update revision, while fewer than maxUnavailable replicas
// are unhealthy; the next sync makes them again at the update revision.
func (c *Controller) rollingUpdate(ctx context.Context, set *appsv1.StatefulSet, replicas []*v1.Pod, upd *appsv1.ControllerRevision, status *appsv1.StatefulSetStatus) (*appsv1.StatefulSetStatus, error) {
	updateMin, maxUnavailable := 0, 1
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		if ru.Partition != nil {
			updateMin = int(*ru.Partition)
		}
		var err error
		if maxUnavailable, err = maxUnavailableOf(ru.MaxUnavailable, replicasOf(set)); err != nil {
			return status, err
		}
	}
	unavailable := 0
	for _, p := range replicas {
		if !isHealthy(p) {
			unavailable++
		}
	}
	if unavailable >= maxUnavailable {
		return status, nil
	}
	toDelete := maxUnavailable - unavailable
	for target := len(replicas) - 1; target >= updateMin && toDelete > 0; target-- {
		if podRevision(replicas[target]) == upd.Name || isTerminating(replicas[target]) {
			continue
		}
		if err := c.deletePod(ctx, set, replicas[target]); err != nil && !apierrors.IsNotFound(err) {
			return status, err
		}
		toDelete--
		status.CurrentReplicas--
	}
	return status, nil
}

// updateStatus writes status unless set already has it; a rolling update
// whose pods are all updated and ready becomes the current revision.
func (c *Controller) updateStatus(ctx context.Context, set *appsv1.StatefulSet, status *appsv1.StatefulSetStatus) error {
	replicas := int32(replicasOf(set))
	if set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType &&
		status.UpdatedReplicas == replicas && status.ReadyReplicas == replicas && status.Replicas == replicas {
		status.CurrentReplicas = status.UpdatedReplicas
		status.CurrentRevision = status.UpdateRevision
	}
	if !inconsistentStatus(set, status) {
		return nil
	}
	return c.writeStatus(ctx, set.DeepCopy(), status)
}

func inconsistentStatus(set *appsv1.StatefulSet, status *appsv1.StatefulSetStatus) bool {
	s := set.Status
	return status.ObservedGeneration > s.ObservedGeneration || status.Replicas != s.Replicas || status.CurrentReplicas != s.CurrentReplicas ||
		status.ReadyReplicas != s.ReadyReplicas || status.UpdatedReplicas != s.UpdatedReplicas || status.CurrentRevision != s.CurrentRevision ||
		status.AvailableReplicas != s.AvailableReplicas || status.UpdateRevision != s.UpdateRevision ||
		!equalCollisionCount(status.CollisionCount, s.CollisionCount)
}

func equalCollisionCount(a, b *int32) bool {
	if a == nil || b == nil {
		return (a == nil || *a == 0) && (b == nil || *b == 0)
	}
	return *a == *b
}
