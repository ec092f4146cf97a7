package disruption

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllerutil"
)

// expectedPodCount returns how many pods pdb expects and how many of them
// must be healthy, as Kubernetes' getExpectedPodCount: an integer
// minAvailable counts the matching pods; maxUnavailable and a percentage
// minAvailable count the scale of the pods' controllers, and both round a
// percentage up. unmanaged names the pods without a controller, which add
// nothing to that scale.
func (c *Controller) expectedPodCount(pdb *policyv1.PodDisruptionBudget, pods []*v1.Pod) (expected, desiredHealthy int32, unmanaged []string, err error) {
	switch {
	case pdb.Spec.MaxUnavailable != nil:
		expected, unmanaged, err = c.expectedScale(pods)
		if err != nil {
			return 0, 0, nil, err
		}
		maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(expected), true)
		if err != nil {
			return 0, 0, nil, err
		}
		desiredHealthy = max(expected-int32(maxUnavailable), 0)
	case pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.Type == intstr.Int:
		expected = int32(len(pods))
		desiredHealthy = pdb.Spec.MinAvailable.IntVal
	case pdb.Spec.MinAvailable != nil:
		expected, unmanaged, err = c.expectedScale(pods)
		if err != nil {
			return 0, 0, nil, err
		}
		minAvailable, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(expected), true)
		if err != nil {
			return 0, 0, nil, err
		}
		desiredHealthy = int32(minAvailable)
	}
	return expected, desiredHealthy, unmanaged, nil
}

// expectedScale sums spec.replicas over the distinct controllers of pods.
// A pod whose controller reference names nothing this controller can read
// (a missing ReplicaSet or StatefulSet, any other kind) is an error.
func (c *Controller) expectedScale(pods []*v1.Pod) (expected int32, unmanaged []string, err error) {
	scales := map[types.UID]int32{}
	// seen holds the controller references already resolved.
	seen := map[types.UID]bool{}
	for _, pod := range pods {
		ref := metav1.GetControllerOfNoCopy(pod)
		if ref == nil {
			unmanaged = append(unmanaged, pod.Name)
			continue
		}
		if seen[ref.UID] {
			continue
		}
		uid, replicas, found, err := c.controllerScale(pod.Namespace, ref)
		if err != nil {
			return 0, nil, err
		}
		if !found {
			return 0, nil, fmt.Errorf("found no controllers for pod %q", pod.Name)
		}
		seen[ref.UID] = true
		scales[uid] = replicas
	}
	for _, n := range scales {
		expected += n
	}
	return expected, unmanaged, nil
}

const (
	replicaSetKind = "ReplicaSet"
	deploymentKind = "Deployment"
)

// controllerScale resolves a pod's controller reference to the workload
// whose spec.replicas the pod counts against: the ReplicaSet, or the
// Deployment controlling it, or the StatefulSet. found is false when the
// reference names no such object in the cache with its uid.
func (c *Controller) controllerScale(namespace string, ref *metav1.OwnerReference) (uid types.UID, replicas int32, found bool, err error) {
	if ref.Kind == statefulSetKind {
		return c.statefulSetScale(namespace, ref)
	}
	if ref.Kind == replicationControllerKind {
		return c.replicationControllerScale(namespace, ref)
	}
	if ok, err := isAppsKind(ref, replicaSetKind); !ok || err != nil {
		return "", 0, false, err
	}
	rs, err := c.rsLister.ReplicaSets(namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return "", 0, false, nil
	}
	owner := metav1.GetControllerOfNoCopy(rs)
	if owner == nil || owner.Kind != deploymentKind {
		return rs.UID, replicasOf(rs.Spec.Replicas), true, nil
	}
	if ok, err := isAppsKind(owner, deploymentKind); !ok || err != nil {
		return "", 0, false, err
	}
	d, err := c.dLister.Deployments(namespace).Get(owner.Name)
	if err != nil || d.UID != owner.UID {
		return "", 0, false, nil
	}
	return d.UID, replicasOf(d.Spec.Replicas), true, nil
}

// isAppsKind reports whether ref names kind in the apps (or legacy
// extensions) group.
func isAppsKind(ref *metav1.OwnerReference, kind string) (bool, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return false, err
	}
	return ref.Kind == kind && (gv.Group == "apps" || gv.Group == "extensions"), nil
}

// replicasOf is spec.replicas, 1 when unset as the API defaults it.
func replicasOf(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

// disruptedPods returns the entries of pdb's status.disruptedPods still in
// force at now: those of pods that exist, are not being deleted and were
// evicted less than DeletionTimeout ago. recheck is when the first of them
// expires (zero when none). An expired entry gets a NotDeleted event.
func (c *Controller) disruptedPods(pods []*v1.Pod, pdb *policyv1.PodDisruptionBudget, now time.Time) (kept map[string]metav1.Time, recheck time.Time) {
	if len(pdb.Status.DisruptedPods) == 0 {
		return nil, time.Time{}
	}
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		evicted, ok := pdb.Status.DisruptedPods[pod.Name]
		if !ok {
			continue
		}
		expires := evicted.Add(DeletionTimeout)
		if expires.Before(now) {
			c.recorder.Eventf(pod, v1.EventTypeWarning, "NotDeleted", "Pod was expected by PDB %s/%s to be deleted but it wasn't", pdb.Namespace, pdb.Name)
			continue
		}
		if kept == nil {
			kept = map[string]metav1.Time{}
		}
		kept[pod.Name] = evicted
		if recheck.IsZero() || expires.Before(recheck) {
			recheck = expires
		}
	}
	return kept, recheck
}

// countHealthyPods counts the pods that are ready, not being deleted and
// not awaiting deletion after an eviction.
func countHealthyPods(pods []*v1.Pod, disrupted map[string]metav1.Time) int32 {
	var n int32
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		if _, ok := disrupted[pod.Name]; ok {
			continue
		}
		if controllerutil.IsPodReady(pod) {
			n++
		}
	}
	return n
}

// newStatus returns pdb's status for the given counts, as Kubernetes'
// updatePdbStatus: no disruptions while the budget expects no pods, so a
// budget is safe before its first pods are counted.
func newStatus(pdb *policyv1.PodDisruptionBudget, currentHealthy, desiredHealthy, expected int32, disrupted map[string]metav1.Time) policyv1.PodDisruptionBudgetStatus {
	allowed := currentHealthy - desiredHealthy
	if expected <= 0 || allowed < 0 {
		allowed = 0
	}
	status := policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation,
		DisruptedPods:      disrupted,
		DisruptionsAllowed: allowed,
		CurrentHealthy:     currentHealthy,
		DesiredHealthy:     desiredHealthy,
		ExpectedPods:       expected,
		Conditions:         pdb.Status.DeepCopy().Conditions,
	}
	cond := metav1.Condition{
		Type:               policyv1.DisruptionAllowedCondition,
		Status:             metav1.ConditionFalse,
		Reason:             policyv1.InsufficientPodsReason,
		ObservedGeneration: pdb.Generation,
	}
	if allowed > 0 {
		cond.Status, cond.Reason = metav1.ConditionTrue, policyv1.SufficientPodsReason
	}
	meta.SetStatusCondition(&status.Conditions, cond)
	return status
}

// failSafe allows no disruptions and records why in the DisruptionAllowed
// condition (reason SyncFailed), keeping the rest of the status, as
// Kubernetes' failSafe.
func (c *Controller) failSafe(ctx context.Context, pdb *policyv1.PodDisruptionBudget, cause error) error {
	status := *pdb.Status.DeepCopy()
	status.DisruptionsAllowed = 0
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type:               policyv1.DisruptionAllowedCondition,
		Status:             metav1.ConditionFalse,
		Reason:             policyv1.SyncFailedReason,
		Message:            cause.Error(),
		ObservedGeneration: status.ObservedGeneration,
	})
	return c.writeStatus(ctx, pdb, status)
}

// writeStatus writes status through the status subresource unless it is
// what pdb already has. A conflict comes back as one (apierrors.IsConflict).
func (c *Controller) writeStatus(ctx context.Context, pdb *policyv1.PodDisruptionBudget, status policyv1.PodDisruptionBudgetStatus) error {
	if equality.Semantic.DeepEqual(pdb.Status, status) {
		return nil
	}
	updated := pdb.DeepCopy()
	updated.Status = status
	if _, err := c.client.PolicyV1().PodDisruptionBudgets(pdb.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("failed to update status of pod disruption budget %q: %w", pdb.Namespace+"/"+pdb.Name, err)
	}
	return nil
}
