package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
)

// rolloutRolling moves a RollingUpdate deployment one step: scale the new
// ReplicaSet up within maxSurge, or the old ones down within
// maxUnavailable, then clean up history once complete.
func (c *Controller) rolloutRolling(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, old, err := c.allReplicaSetsAndSyncRevision(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	all := append(append([]*appsv1.ReplicaSet(nil), old...), newRS)

	scaledUp, err := c.reconcileNewReplicaSet(ctx, all, newRS, d)
	if err != nil {
		return err
	}
	if scaledUp {
		return c.syncRolloutStatus(ctx, all, newRS, d)
	}
	scaledDown, err := c.reconcileOldReplicaSets(ctx, all, activeReplicaSets(old), newRS, d)
	if err != nil {
		return err
	}
	if scaledDown {
		return c.syncRolloutStatus(ctx, all, newRS, d)
	}
	if deploymentComplete(d, &d.Status) {
		if err := c.cleanup(ctx, old, d); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, all, newRS, d)
}

func (c *Controller) reconcileNewReplicaSet(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	if replicas(newRS) == *d.Spec.Replicas {
		return false, nil
	}
	if replicas(newRS) > *d.Spec.Replicas {
		scaled, _, err := c.scaleReplicaSet(ctx, newRS, *d.Spec.Replicas, d)
		return scaled, err
	}
	scaled, _, err := c.scaleReplicaSet(ctx, newRS, newRSNewReplicas(d, all, newRS), d)
	return scaled, err
}

// reconcileOldReplicaSets scales old ReplicaSets down as far as
// maxUnavailable allows: first their unhealthy pods, then available ones.
func (c *Controller) reconcileOldReplicaSets(ctx context.Context, all, old []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	if specReplicas(old) == 0 {
		return false, nil
	}
	allPods := specReplicas(all)
	minAvailable := *d.Spec.Replicas - maxUnavailable(d)
	newUnavailable := replicas(newRS) - newRS.Status.AvailableReplicas
	maxScaledDown := allPods - minAvailable - newUnavailable
	if maxScaledDown <= 0 {
		return false, nil
	}
	cleaned, err := c.cleanupUnhealthyReplicas(ctx, old, d, maxScaledDown)
	if err != nil {
		return false, err
	}
	all = append(append([]*appsv1.ReplicaSet(nil), old...), newRS)
	scaled, err := c.scaleDownOldForRollingUpdate(ctx, all, old, d)
	if err != nil {
		return false, err
	}
	return cleaned+scaled > 0, nil
}

// cleanupUnhealthyReplicas scales old ReplicaSets down by their
// unavailable pods, oldest first, up to maxCleanup.
func (c *Controller) cleanupUnhealthyReplicas(ctx context.Context, old []*appsv1.ReplicaSet, d *appsv1.Deployment, maxCleanup int32) (int32, error) {
	sortByCreation(old)
	var total int32
	for _, rs := range old {
		if total >= maxCleanup {
			break
		}
		if replicas(rs) == 0 || replicas(rs) == rs.Status.AvailableReplicas {
			continue
		}
		down := min(maxCleanup-total, replicas(rs)-rs.Status.AvailableReplicas)
		if _, _, err := c.scaleReplicaSet(ctx, rs, replicas(rs)-down, d); err != nil {
			return total, err
		}
		total += down
	}
	return total, nil
}

// scaleDownOldForRollingUpdate scales old ReplicaSets down, oldest first,
// by as many available pods as keep minAvailable.
func (c *Controller) scaleDownOldForRollingUpdate(ctx context.Context, all, old []*appsv1.ReplicaSet, d *appsv1.Deployment) (int32, error) {
	minAvailable := *d.Spec.Replicas - maxUnavailable(d)
	available := availableReplicas(all)
	if available <= minAvailable {
		return 0, nil
	}
	want := available - minAvailable
	sortByCreation(old)
	var total int32
	for _, rs := range old {
		if total >= want {
			break
		}
		if replicas(rs) == 0 {
			continue
		}
		down := min(replicas(rs), want-total)
		if _, _, err := c.scaleReplicaSet(ctx, rs, replicas(rs)-down, d); err != nil {
			return total, err
		}
		total += down
	}
	return total, nil
}
