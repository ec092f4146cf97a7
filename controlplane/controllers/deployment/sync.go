package deployment

import (
	"context"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllerutil"
)

// splitReplicaSets returns the new ReplicaSet (nil if none) and the others.
func splitReplicaSets(d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet) {
	newRS := findNewReplicaSet(d, rsList)
	var old []*appsv1.ReplicaSet
	for _, rs := range rsList {
		if newRS == nil || rs.UID != newRS.UID {
			old = append(old, rs)
		}
	}
	return newRS, old
}

// allReplicaSetsAndSyncRevision returns the new and old ReplicaSets,
// creating the new one when create is set, and keeps the revision
// annotations in step.
func (c *Controller) allReplicaSetsAndSyncRevision(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet, error) {
	existing, old := splitReplicaSets(d, rsList)
	newRS, err := c.newReplicaSet(ctx, d, rsList, existing, old, create)
	if err != nil {
		return nil, nil, err
	}
	return newRS, old, nil
}

// newReplicaSet syncs the existing new ReplicaSet's annotations, or creates
// it (named <deployment>-<hash>) when create is set.
func (c *Controller) newReplicaSet(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, existing *appsv1.ReplicaSet, old []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, error) {
	newRevision := strconv.FormatInt(maxRevision(old)+1, 10)
	if existing != nil {
		rs := existing.DeepCopy()
		changed := setNewReplicaSetAnnotations(d, rs, newRevision, true)
		if changed || rs.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
			rs.Spec.MinReadySeconds = d.Spec.MinReadySeconds
			updated, err := c.client.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{})
			if err != nil {
				return nil, fmt.Errorf("failed to update replica set %q: %w", rs.Name, err)
			}
			rs = updated
		}
		if err := c.syncDeploymentRevision(ctx, d, rs.Annotations[RevisionAnnotation]); err != nil {
			return nil, err
		}
		if cond := condition(d.Status, appsv1.DeploymentProgressing); hasProgressDeadline(d) && cond == nil {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, v1.ConditionTrue, FoundNewRSReason, fmt.Sprintf("Found new replica set %q", rs.Name)))
			if err := c.updateStatus(ctx, d); err != nil {
				return nil, err
			}
		}
		return rs, nil
	}
	if !create {
		return nil, nil
	}

	hash := controllerutil.ComputeHash(&d.Spec.Template, d.Status.CollisionCount)
	template := *d.Spec.Template.DeepCopy()
	if template.Labels == nil {
		template.Labels = map[string]string{}
	}
	template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	selector := d.Spec.Selector.DeepCopy()
	if selector.MatchLabels == nil {
		selector.MatchLabels = map[string]string{}
	}
	selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	labels := map[string]string{}
	for k, v := range template.Labels {
		labels[k] = v
	}
	zero := int32(0)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            d.Name + "-" + hash,
			Namespace:       d.Namespace,
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{*controllerutil.NewControllerRef(d, controllerKind)},
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: &zero, MinReadySeconds: d.Spec.MinReadySeconds, Selector: selector, Template: template},
	}
	all := append(append([]*appsv1.ReplicaSet(nil), rsList...), rs)
	count := newRSNewReplicas(d, all, rs)
	rs.Spec.Replicas = &count
	setNewReplicaSetAnnotations(d, rs, newRevision, false)

	created, err := c.client.AppsV1().ReplicaSets(d.Namespace).Create(ctx, rs, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		current, getErr := c.rsLister.ReplicaSets(d.Namespace).Get(rs.Name)
		if getErr != nil {
			return nil, getErr
		}
		ref := metav1.GetControllerOf(current)
		if ref != nil && ref.UID == d.UID && equalIgnoreHash(&d.Spec.Template, &current.Spec.Template) {
			return current, nil
		}
		// A hash collision: bump collisionCount so the next sync names the
		// ReplicaSet differently.
		n := int32(0)
		if d.Status.CollisionCount != nil {
			n = *d.Status.CollisionCount
		}
		n++
		d.Status.CollisionCount = &n
		if err := c.updateStatus(ctx, d); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("found a hash collision for deployment %q - bumping collisionCount to %d to resolve it", d.Name, n)
	}
	if err != nil {
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", rs.Name, err)
		if hasProgressDeadline(d) {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, v1.ConditionFalse, FailedRSCreateReason, msg))
			_ = c.updateStatus(ctx, d)
		}
		c.recorder.Event(d, v1.EventTypeWarning, FailedRSCreateReason, msg)
		return nil, err
	}
	if count > 0 {
		c.recorder.Eventf(d, v1.EventTypeNormal, "ScalingReplicaSet", "Scaled up replica set %s from 0 to %d", created.Name, count)
	}
	if err := c.syncDeploymentRevision(ctx, d, newRevision); err != nil {
		return nil, err
	}
	if hasProgressDeadline(d) {
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, v1.ConditionTrue, NewReplicaSetReason, fmt.Sprintf("Created new replica set %q", created.Name)))
		if err := c.updateStatus(ctx, d); err != nil {
			return nil, err
		}
	}
	return created, nil
}

// syncDeploymentRevision sets the deployment's revision annotation.
func (c *Controller) syncDeploymentRevision(ctx context.Context, d *appsv1.Deployment, rev string) error {
	if d.Annotations[RevisionAnnotation] == rev {
		return nil
	}
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[RevisionAnnotation] = rev
	updated, err := c.client.AppsV1().Deployments(d.Namespace).Update(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("failed to update deployment %q: %w", d.Name, err)
	}
	*d = *updated
	return nil
}

func (c *Controller) updateStatus(ctx context.Context, d *appsv1.Deployment) error {
	updated, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("failed to update status of deployment %q: %w", d.Name, err)
	}
	*d = *updated
	return nil
}

// isScalingEvent reports whether spec.replicas changed since the active
// ReplicaSets were last annotated.
func (c *Controller) isScalingEvent(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (bool, error) {
	newRS, old, err := c.allReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return false, err
	}
	for _, rs := range activeReplicaSets(append(old, newRS)) {
		desired, ok := intAnnotation(rs, DesiredReplicasAnnotation)
		if ok && desired != *d.Spec.Replicas {
			return true, nil
		}
	}
	return false, nil
}

// syncScale scales without rolling: for a scaling event or a paused
// deployment.
func (c *Controller) syncScale(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, old, err := c.allReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	if err := c.scale(ctx, d, newRS, old); err != nil {
		return err
	}
	if d.Spec.Paused {
		if err := c.cleanup(ctx, old, d); err != nil {
			return err
		}
	}
	return c.syncDeploymentStatus(ctx, append(old, newRS), newRS, d)
}

// scale resizes the ReplicaSets to spec.replicas: the one active one
// directly, a saturated new one by zeroing the old, otherwise
// proportionally.
func (c *Controller) scale(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) error {
	if rs := activeOrLatest(newRS, old); rs != nil {
		if replicas(rs) == *d.Spec.Replicas {
			return nil
		}
		_, _, err := c.scaleReplicaSet(ctx, rs, *d.Spec.Replicas, d)
		return err
	}
	if isSaturated(d, newRS) {
		for _, rs := range activeReplicaSets(old) {
			if _, _, err := c.scaleReplicaSet(ctx, rs, 0, d); err != nil {
				return err
			}
		}
		return nil
	}
	if !isRollingUpdate(d) {
		return nil
	}
	all := activeReplicaSets(append(append([]*appsv1.ReplicaSet(nil), old...), newRS))
	allowed := *d.Spec.Replicas
	if allowed > 0 {
		allowed += maxSurge(d)
	}
	toAdd := allowed - specReplicas(all)
	if toAdd > 0 {
		sortBySize(all, true)
	} else if toAdd < 0 {
		sortBySize(all, false)
	}
	var added int32
	sizes := map[string]int32{}
	for _, rs := range all {
		p := proportion(rs, d, toAdd, added)
		sizes[rs.Name] = replicas(rs) + p
		added += p
	}
	for i, rs := range all {
		size := sizes[rs.Name]
		if i == 0 && toAdd != 0 {
			size = max(size+toAdd-added, 0)
		}
		if _, _, err := c.scaleReplicaSet(ctx, rs, size, d); err != nil {
			return err
		}
	}
	return nil
}

// activeOrLatest returns the only active ReplicaSet, or the newest one when
// none is active; nil when several are.
func activeOrLatest(newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	if newRS == nil && len(old) == 0 {
		return nil
	}
	all := append([]*appsv1.ReplicaSet(nil), old...)
	if newRS != nil {
		all = append(all, newRS)
	}
	sortBySize(all, true)
	active := activeReplicaSets(all)
	switch len(active) {
	case 0:
		if newRS != nil {
			return newRS
		}
		return all[0]
	case 1:
		return active[0]
	}
	return nil
}

// scaleReplicaSet sets rs to size with the deployment's replica
// annotations, recording ScalingReplicaSet when the size changes.
func (c *Controller) scaleReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet, size int32, d *appsv1.Deployment) (bool, *appsv1.ReplicaSet, error) {
	sizeChanged := replicas(rs) != size
	cp := rs.DeepCopy()
	annotationsChanged := setReplicasAnnotations(cp, *d.Spec.Replicas, *d.Spec.Replicas+maxSurge(d))
	if !sizeChanged && !annotationsChanged {
		return false, rs, nil
	}
	from := replicas(rs)
	cp.Spec.Replicas = &size
	updated, err := c.client.AppsV1().ReplicaSets(cp.Namespace).Update(ctx, cp, metav1.UpdateOptions{})
	if err != nil {
		return false, nil, fmt.Errorf("failed to scale replica set %q: %w", rs.Name, err)
	}
	if sizeChanged {
		direction := "up"
		if size < from {
			direction = "down"
		}
		c.recorder.Eventf(d, v1.EventTypeNormal, "ScalingReplicaSet", "Scaled %s replica set %s from %d to %d", direction, rs.Name, from, size)
	}
	*rs = *updated
	return sizeChanged, updated, nil
}

// cleanup deletes the oldest scaled-down ReplicaSets beyond
// revisionHistoryLimit.
func (c *Controller) cleanup(ctx context.Context, old []*appsv1.ReplicaSet, d *appsv1.Deployment) error {
	if d.Spec.RevisionHistoryLimit == nil {
		return nil
	}
	var cleanable []*appsv1.ReplicaSet
	for _, rs := range old {
		if rs != nil && rs.DeletionTimestamp == nil {
			cleanable = append(cleanable, rs)
		}
	}
	diff := len(cleanable) - int(*d.Spec.RevisionHistoryLimit)
	if diff <= 0 {
		return nil
	}
	sortByRevision(cleanable)
	for _, rs := range cleanable[:diff] {
		if rs.Status.Replicas != 0 || replicas(rs) != 0 || rs.Generation > rs.Status.ObservedGeneration {
			continue
		}
		c.log.Debug("deleting old replica set", "replicaset", rs.Namespace+"/"+rs.Name)
		err := c.client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("failed to delete replica set %q: %w", rs.Name, err)
		}
	}
	return nil
}

// calculateStatus derives the deployment status from its ReplicaSets.
func calculateStatus(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) appsv1.DeploymentStatus {
	available := availableReplicas(all)
	unavailable := max(specReplicas(all)-available, 0)
	status := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            statusReplicas(all),
		UpdatedReplicas:     statusReplicas([]*appsv1.ReplicaSet{newRS}),
		ReadyReplicas:       readyReplicas(all),
		AvailableReplicas:   available,
		UnavailableReplicas: unavailable,
		CollisionCount:      d.Status.CollisionCount,
	}
	status.Conditions = append(status.Conditions, d.Status.Conditions...)
	if available >= *d.Spec.Replicas-maxUnavailable(d) {
		setCondition(&status, newCondition(appsv1.DeploymentAvailable, v1.ConditionTrue, MinimumReplicasAvailable, availableMessage))
	} else {
		setCondition(&status, newCondition(appsv1.DeploymentAvailable, v1.ConditionFalse, MinimumReplicasUnavailable, unavailableMessage))
	}
	return status
}

func nonNil(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		if rs != nil {
			out = append(out, rs)
		}
	}
	return out
}

// syncDeploymentStatus writes the calculated status if it changed.
func (c *Controller) syncDeploymentStatus(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	status := calculateStatus(nonNil(all), newRS, d)
	if equality.Semantic.DeepEqual(d.Status, status) {
		return nil
	}
	d.Status = status
	return c.updateStatus(ctx, d)
}

// syncStatusOnly reports the status of a deployment being deleted.
func (c *Controller) syncStatusOnly(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, old, err := c.allReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	return c.syncDeploymentStatus(ctx, append(old, newRS), newRS, d)
}

// syncRolloutStatus writes the status with the Progressing condition
// advanced for a rollout.
func (c *Controller) syncRolloutStatus(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	status := calculateStatus(nonNil(all), newRS, d)
	if !hasProgressDeadline(d) {
		removeCondition(&status, appsv1.DeploymentProgressing)
	}
	cur := condition(d.Status, appsv1.DeploymentProgressing)
	complete := status.Replicas == status.UpdatedReplicas && cur != nil && cur.Reason == NewRSAvailableReason
	if hasProgressDeadline(d) && !complete {
		switch {
		case deploymentComplete(d, &status):
			msg := fmt.Sprintf("Deployment %q has successfully progressed.", d.Name)
			if newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q has successfully progressed.", newRS.Name)
			}
			setCondition(&status, newCondition(appsv1.DeploymentProgressing, v1.ConditionTrue, NewRSAvailableReason, msg))
		case deploymentProgressing(d, &status):
			msg := fmt.Sprintf("Deployment %q is progressing.", d.Name)
			if newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q is progressing.", newRS.Name)
			}
			progressing := newCondition(appsv1.DeploymentProgressing, v1.ConditionTrue, ReplicaSetUpdatedReason, msg)
			if cur != nil && cur.Status == v1.ConditionTrue {
				progressing.LastTransitionTime = cur.LastTransitionTime
			}
			removeCondition(&status, appsv1.DeploymentProgressing)
			status.Conditions = append(status.Conditions, progressing)
		case timedOut(d, &status):
			msg := fmt.Sprintf("Deployment %q has timed out progressing.", d.Name)
			if newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q has timed out progressing.", newRS.Name)
			}
			setCondition(&status, newCondition(appsv1.DeploymentProgressing, v1.ConditionFalse, TimedOutReason, msg))
		}
	}
	if equality.Semantic.DeepEqual(d.Status, status) {
		c.requeueStuck(d, status)
		return nil
	}
	d.Status = status
	if err := c.updateStatus(ctx, d); err != nil {
		return err
	}
	c.requeueStuck(d, status)
	return nil
}

// timedOut reports whether the rollout has made no progress for
// progressDeadlineSeconds.
func timedOut(d *appsv1.Deployment, s *appsv1.DeploymentStatus) bool {
	if !hasProgressDeadline(d) {
		return false
	}
	cond := condition(*s, appsv1.DeploymentProgressing)
	if cond == nil || cond.Reason == NewRSAvailableReason {
		return false
	}
	if cond.Reason == TimedOutReason {
		return true
	}
	return cond.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Before(time.Now())
}
