package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// rolloutRecreate scales every old ReplicaSet to zero, waits for their pods
// to be gone, then scales the new one up.
func (c *Controller) rolloutRecreate(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, old, err := c.allReplicaSetsAndSyncRevision(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	all := append(append([]*appsv1.ReplicaSet(nil), old...), newRS)
	scaledDown := false
	for _, rs := range activeReplicaSets(old) {
		scaled, _, err := c.scaleReplicaSet(ctx, rs, 0, d)
		if err != nil {
			return err
		}
		scaledDown = scaledDown || scaled
	}
	if scaledDown {
		return c.syncRolloutStatus(ctx, all, newRS, d)
	}
	if c.oldPodsRunning(old) {
		return c.syncRolloutStatus(ctx, all, newRS, d)
	}
	if newRS == nil {
		newRS, old, err = c.allReplicaSetsAndSyncRevision(ctx, d, rsList, true)
		if err != nil {
			return err
		}
		all = append(append([]*appsv1.ReplicaSet(nil), old...), newRS)
	}
	if _, _, err := c.scaleReplicaSet(ctx, newRS, *d.Spec.Replicas, d); err != nil {
		return err
	}
	if deploymentComplete(d, &d.Status) {
		if err := c.cleanup(ctx, old, d); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, all, newRS, d)
}

// oldPodsRunning reports whether any pod of an old ReplicaSet still exists
// and has not finished.
func (c *Controller) oldPodsRunning(old []*appsv1.ReplicaSet) bool {
	if statusReplicas(old) > 0 {
		return true
	}
	if len(old) == 0 {
		return false
	}
	uids := map[types.UID]bool{}
	for _, rs := range old {
		uids[rs.UID] = true
	}
	pods, err := c.podLister.Pods(old[0].Namespace).List(labels.Everything())
	if err != nil {
		return true
	}
	for _, p := range pods {
		ref := metav1.GetControllerOf(p)
		if ref == nil || !uids[ref.UID] {
			continue
		}
		if p.Status.Phase != v1.PodFailed && p.Status.Phase != v1.PodSucceeded {
			return true
		}
	}
	return false
}
