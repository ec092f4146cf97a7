package statefulset

import (
	"context"
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllerutil"
)

var podKind = v1.SchemeGroupVersion.WithKind("Pod")

// recordPodEvent reports verb on pod as upstream's StatefulPodControl:
// Successful<Verb> "<verb> Pod <pod> in StatefulSet <set> successful", or
// Failed<Verb> with the error.
func (c *Controller) recordPodEvent(verb string, set *appsv1.StatefulSet, pod *v1.Pod, err error) {
	title := strings.ToUpper(verb[:1]) + verb[1:]
	if err == nil {
		c.recorder.Event(set, v1.EventTypeNormal, "Successful"+title, fmt.Sprintf("%s Pod %s in StatefulSet %s successful", verb, pod.Name, set.Name))
		return
	}
	c.recorder.Event(set, v1.EventTypeWarning, "Failed"+title, fmt.Sprintf("%s Pod %s in StatefulSet %s failed error: %s", verb, pod.Name, set.Name, err))
}

// recordClaimEvent reports verb on a pod's claim as upstream does.
func (c *Controller) recordClaimEvent(verb string, set *appsv1.StatefulSet, pod *v1.Pod, claim *v1.PersistentVolumeClaim, err error) {
	title := strings.ToUpper(verb[:1]) + verb[1:]
	if err == nil {
		c.recorder.Event(set, v1.EventTypeNormal, "Successful"+title, fmt.Sprintf("%s Claim %s Pod %s in StatefulSet %s success", verb, claim.Name, pod.Name, set.Name))
		return
	}
	c.recorder.Event(set, v1.EventTypeWarning, "Failed"+title, fmt.Sprintf("%s Claim %s for Pod %s in StatefulSet %s failed error: %s", verb, claim.Name, pod.Name, set.Name, err))
}

func (c *Controller) getClaim(ctx context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error) {
	return c.client.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
}

// notServed reports whether err is the API's 404 for a resource it does
// not serve (rather than for a missing object): its Status names no kind.
func notServed(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d == nil || d.Kind == ""
}

// errClaimsNotServed is why a pod with volumeClaimTemplates waits while the
// API does not serve persistentvolumeclaims.
var errClaimsNotServed = errors.New("the server does not serve persistentvolumeclaims, so the claims of volumeClaimTemplates cannot be created")

// createClaims creates the claims pod needs that do not exist yet.
func (c *Controller) createClaims(ctx context.Context, set *appsv1.StatefulSet, pod *v1.Pod) error {
	var errs []error
	for _, claim := range claimsFor(set, pod) {
		existing, err := c.getClaim(ctx, claim.Namespace, claim.Name)
		switch {
		case notServed(err):
			errs = append(errs, fmt.Errorf("failed to create PVC %s: %w", claim.Name, errClaimsNotServed))
			c.recordClaimEvent("create", set, pod, &claim, errClaimsNotServed)
		case apierrors.IsNotFound(err):
			_, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Create(ctx, &claim, metav1.CreateOptions{})
			if notServed(err) {
				err = errClaimsNotServed
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("failed to create PVC %s: %w", claim.Name, err))
			}
			if err == nil || !apierrors.IsAlreadyExists(err) {
				c.recordClaimEvent("create", set, pod, &claim, err)
			}
		case err != nil:
			errs = append(errs, fmt.Errorf("failed to retrieve PVC %s: %w", claim.Name, err))
			c.recordClaimEvent("create", set, pod, &claim, err)
		case existing.DeletionTimestamp != nil:
			errs = append(errs, fmt.Errorf("pvc %s is being deleted", claim.Name))
		}
	}
	return errors.Join(errs...)
}

// createPod creates pod's claims, then pod, then sets the claims' owners
// as the retention policy wants.
func (c *Controller) createPod(ctx context.Context, set *appsv1.StatefulSet, pod *v1.Pod) error {
	if err := c.createClaims(ctx, set, pod); err != nil {
		c.recordPodEvent("create", set, pod, err)
		return err
	}
	created, err := c.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return err
	}
	if err == nil && len(set.Spec.VolumeClaimTemplates) > 0 {
		if err := c.updateClaimsForRetention(ctx, set, created); err != nil {
			c.recordPodEvent("update", set, pod, err)
			return err
		}
	}
	c.recordPodEvent("create", set, pod, err)
	return err
}

// updatePod brings an existing pod's identity, storage and claim owners
// back to what set wants.
func (c *Controller) updatePod(ctx context.Context, set *appsv1.StatefulSet, pod *v1.Pod) error {
	attempted := false
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		consistent := true
		if !identityMatches(set, pod) {
			updateIdentity(set, pod)
			consistent = false
		}
		if !storageMatches(set, pod) {
			updateStorage(set, pod)
			consistent = false
			if err := c.createClaims(ctx, set, pod); err != nil {
				c.recordPodEvent("update", set, pod, err)
				return err
			}
		}
		if match, err := c.claimsMatchRetention(ctx, set, pod); err != nil {
			c.recordPodEvent("update", set, pod, err)
			return err
		} else if !match {
			if err := c.updateClaimsForRetention(ctx, set, pod); err != nil {
				c.recordPodEvent("update", set, pod, err)
				return err
			}
		}
		if consistent {
			return nil
		}
		attempted = true
		_, err := c.client.CoreV1().Pods(pod.Namespace).Update(ctx, pod, metav1.UpdateOptions{})
		if err == nil {
			return nil
		}
		if fresh, getErr := c.podLister.Pods(set.Namespace).Get(pod.Name); getErr == nil {
			pod = fresh.DeepCopy()
		}
		return err
	})
	if attempted {
		c.recordPodEvent("update", set, pod, err)
	}
	return err
}

// deletePod deletes pod and reports it.
func (c *Controller) deletePod(ctx context.Context, set *appsv1.StatefulSet, pod *v1.Pod) error {
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{})
	c.recordPodEvent("delete", set, pod, err)
	return err
}

// claimsMatchRetention reports whether the owners of pod's existing claims
// are what set's persistentVolumeClaimRetentionPolicy wants.
func (c *Controller) claimsMatchRetention(ctx context.Context, set *appsv1.StatefulSet, pod *v1.Pod) (bool, error) {
	ordinal := ordinalOf(pod)
	for i := range set.Spec.VolumeClaimTemplates {
		name := claimName(set, &set.Spec.VolumeClaimTemplates[i], ordinal)
		claim, err := c.getClaim(ctx, set.Namespace, name)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return false, fmt.Errorf("could not retrieve claim %s for %s when checking PVC deletion policy: %w", name, pod.Name, err)
		default:
			if !claimOwnerUpToDate(claim, set, pod) {
				return false, nil
			}
		}
	}
	return true, nil
}

// updateClaimsForRetention sets the owners of pod's claims as set's
// retention policy wants.
func (c *Controller) updateClaimsForRetention(ctx context.Context, set *appsv1.StatefulSet, pod *v1.Pod) error {
	ordinal := ordinalOf(pod)
	for i := range set.Spec.VolumeClaimTemplates {
		name := claimName(set, &set.Spec.VolumeClaimTemplates[i], ordinal)
		claim, err := c.getClaim(ctx, set.Namespace, name)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("could not retrieve claim %s for %s when checking PVC deletion policy: %w", name, pod.Name, err)
		default:
			if hasUnexpectedController(claim, set, pod) {
				c.recorder.Event(set, v1.EventTypeWarning, "ConflictingController",
					fmt.Sprintf("PersistentVolumeClaim %s has a conflicting OwnerReference that acts as a manging controller, the retention policy is ignored for this claim", name))
			}
			if claimOwnerUpToDate(claim, set, pod) {
				continue
			}
			claim = claim.DeepCopy()
			setClaimOwners(claim, set, pod)
			if _, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, claim, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("could not update claim %s for delete policy ownerRefs: %w", name, err)
			}
		}
	}
	return nil
}

// claimIsStale reports whether a claim of pod still belongs to an earlier
// pod of the same name that whenScaled=Delete will remove: the new pod
// waits for it to go.
func (c *Controller) claimIsStale(ctx context.Context, set *appsv1.StatefulSet, pod *v1.Pod) (bool, error) {
	if retentionPolicy(set).WhenScaled == appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		return false, nil
	}
	for _, claim := range claimsFor(set, pod) {
		pvc, err := c.getClaim(ctx, claim.Namespace, claim.Name)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return false, err
		case hasStaleOwnerRef(pvc, pod, podKind):
			return true, nil
		}
	}
	return false, nil
}

func retentionPolicy(set *appsv1.StatefulSet) appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy {
	p := appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	}
	if set.Spec.PersistentVolumeClaimRetentionPolicy != nil {
		p = *set.Spec.PersistentVolumeClaimRetentionPolicy
	}
	return p
}

func matchesRef(ref *metav1.OwnerReference, obj metav1.Object, gvk schema.GroupVersionKind) bool {
	return gvk.GroupVersion().String() == ref.APIVersion && gvk.Kind == ref.Kind && ref.Name == obj.GetName()
}

// hasUnexpectedController reports whether, under a Delete policy, claim has
// a controller other than set and pod.
func hasUnexpectedController(claim *v1.PersistentVolumeClaim, set *appsv1.StatefulSet, pod *v1.Pod) bool {
	p := retentionPolicy(set)
	const retain = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	if p.WhenScaled == retain && p.WhenDeleted == retain {
		return false
	}
	for _, ref := range claim.OwnerReferences {
		if matchesRef(&ref, set, controllerKind) {
			if ref.UID != set.UID {
				return true
			}
			continue
		}
		if matchesRef(&ref, pod, podKind) {
			if ref.UID != pod.UID {
				return true
			}
			continue
		}
		if ref.Controller != nil && *ref.Controller {
			return true
		}
	}
	return false
}

func hasNonControllerOwner(claim *v1.PersistentVolumeClaim, set *appsv1.StatefulSet, pod *v1.Pod) bool {
	for _, ref := range claim.OwnerReferences {
		if (ref.UID == set.UID || ref.UID == pod.UID) && (ref.Controller == nil || !*ref.Controller) {
			return true
		}
	}
	return false
}

func hasOwnerRef(target, owner metav1.Object) bool {
	for _, ref := range target.GetOwnerReferences() {
		if ref.UID == owner.GetUID() {
			return true
		}
	}
	return false
}

// hasStaleOwnerRef reports whether target names obj by name and kind but
// with another uid (an earlier object of that name).
func hasStaleOwnerRef(target *v1.PersistentVolumeClaim, obj metav1.Object, gvk schema.GroupVersionKind) bool {
	for _, ref := range target.OwnerReferences {
		if matchesRef(&ref, obj, gvk) {
			return ref.UID != obj.GetUID()
		}
	}
	return false
}

// claimOwnerUpToDate is isClaimOwnerUpToDate: Retain/Retain wants no owner
// of ours, whenDeleted=Delete the set as owner, whenScaled=Delete the pod
// as owner once the pod is scaled away (and then not the set).
func claimOwnerUpToDate(claim *v1.PersistentVolumeClaim, set *appsv1.StatefulSet, pod *v1.Pod) bool {
	if hasStaleOwnerRef(claim, set, controllerKind) || hasStaleOwnerRef(claim, pod, podKind) {
		return true
	}
	if hasUnexpectedController(claim, set, pod) {
		return !hasOwnerRef(claim, set) && !hasOwnerRef(claim, pod)
	}
	if hasNonControllerOwner(claim, set, pod) {
		return false
	}
	p := retentionPolicy(set)
	const del = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	scaledDown := !inOrdinalRange(pod, set)
	wantSet := p.WhenDeleted == del && !(p.WhenScaled == del && scaledDown)
	wantPod := p.WhenScaled == del && scaledDown
	return hasOwnerRef(claim, set) == wantSet && hasOwnerRef(claim, pod) == wantPod
}

// setClaimOwners is updateClaimOwnerRefForSetAndPod: it drops the set's
// and pod's references and adds back the controller references the policy
// wants (none when another controller holds the claim).
func setClaimOwners(claim *v1.PersistentVolumeClaim, set *appsv1.StatefulSet, pod *v1.Pod) {
	unexpected := hasUnexpectedController(claim, set, pod)
	var refs []metav1.OwnerReference
	for _, ref := range claim.OwnerReferences {
		if !matchesRef(&ref, set, controllerKind) && !matchesRef(&ref, pod, podKind) {
			refs = append(refs, ref)
		}
	}
	if !unexpected {
		p := retentionPolicy(set)
		const del = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
		scaledDown := !inOrdinalRange(pod, set)
		if p.WhenDeleted == del && !(p.WhenScaled == del && scaledDown) {
			refs = append(refs, *controllerutil.NewControllerRef(set, controllerKind))
		}
		if p.WhenScaled == del && scaledDown {
			refs = append(refs, *controllerutil.NewControllerRef(pod, podKind))
		}
	}
	claim.OwnerReferences = refs
}
