package daemonset

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllerutil"
)

// revisionPatch is Kubernetes' getPatch: the DaemonSet's spec.template as
// a strategic merge patch that replaces it, what a ControllerRevision
// stores and `kubectl rollout undo` applies.
func revisionPatch(ds *appsv1.DaemonSet) ([]byte, error) {
	template, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&ds.Spec.Template)
	if err != nil {
		return nil, err
	}
	template["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
}

// constructHistory returns the DaemonSet's current ControllerRevision,
// creating it (or renumbering it as the newest) when needed, and the
// older ones. The current revision is named <daemonset>-<hash> and
// labelled controller-revision-hash=<hash>, hash being the template's.
func (c *Controller) constructHistory(ctx context.Context, ds *appsv1.DaemonSet) (*appsv1.ControllerRevision, []*appsv1.ControllerRevision, error) {
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return nil, nil, err
	}
	all, err := c.revisionLister.ControllerRevisions(ds.Namespace).List(labels.Everything())
	if err != nil {
		return nil, nil, err
	}
	claimer := &controllerutil.Claimer{
		Controller: ds, ControllerKind: controllerKind, Selector: selector,
		Patch: func(ctx context.Context, ns, name string, pt types.PatchType, data []byte) error {
			_, err := c.client.AppsV1().ControllerRevisions(ns).Patch(ctx, name, pt, data, metav1.PatchOptions{})
			return err
		},
	}
	histories, err := controllerutil.ClaimAll(ctx, claimer, all)
	if err != nil {
		return nil, nil, err
	}
	hash := controllerutil.ComputeHash(&ds.Spec.Template, ds.Status.CollisionCount)
	data, err := revisionPatch(ds)
	if err != nil {
		return nil, nil, err
	}
	var maxRevision int64
	var cur *appsv1.ControllerRevision
	var old []*appsv1.ControllerRevision
	for _, h := range histories {
		maxRevision = max(maxRevision, h.Revision)
		if cur == nil && h.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash && sameJSON(h.Data.Raw, data) {
			cur = h
			continue
		}
		old = append(old, h)
	}
	if cur != nil {
		if cur.Revision < maxRevision {
			next := cur.DeepCopy()
			next.Revision = maxRevision + 1
			updated, err := c.client.AppsV1().ControllerRevisions(ds.Namespace).Update(ctx, next, metav1.UpdateOptions{})
			if err != nil {
				return nil, nil, fmt.Errorf("failed to renumber controller revision %q: %w", cur.Name, err)
			}
			cur = updated
		}
		return cur, old, nil
	}
	revLabels := map[string]string{}
	for k, v := range ds.Spec.Template.Labels {
		revLabels[k] = v
	}
	revLabels[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
	rev := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: ds.Name + "-" + hash, Namespace: ds.Namespace, Labels: revLabels,
			Annotations:     ds.Annotations,
			OwnerReferences: []metav1.OwnerReference{*controllerutil.NewControllerRef(ds, controllerKind)},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: maxRevision + 1,
	}
	created, err := c.client.AppsV1().ControllerRevisions(ds.Namespace).Create(ctx, rev, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// Someone else's revision holds the name: a hash collision. Count it
		// so the next sync hashes differently.
		return nil, nil, c.bumpCollisionCount(ctx, ds)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("failed to create controller revision for %q: %w", ds.Name, err)
	}
	return created, old, nil
}

func (c *Controller) bumpCollisionCount(ctx context.Context, ds *appsv1.DaemonSet) error {
	next := ds.DeepCopy()
	n := int32(1)
	if next.Status.CollisionCount != nil {
		n = *next.Status.CollisionCount + 1
	}
	next.Status.CollisionCount = &n
	if _, err := c.client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("failed to update collision count of daemon set %q: %w", ds.Name, err)
	}
	return fmt.Errorf("controller revision of daemon set %q collided; retrying with collision count %d", ds.Name, n)
}

// cleanupHistory deletes the oldest revisions beyond revisionHistoryLimit
// that no live pod still runs.
func (c *Controller) cleanupHistory(ctx context.Context, ds *appsv1.DaemonSet, old []*appsv1.ControllerRevision, pods []*v1.Pod) error {
	limit := 10
	if ds.Spec.RevisionHistoryLimit != nil {
		limit = int(*ds.Spec.RevisionHistoryLimit)
	}
	if len(old) <= limit {
		return nil
	}
	live := map[string]bool{}
	for _, p := range pods {
		if h := p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]; h != "" {
			live[h] = true
		}
	}
	sorted := append([]*appsv1.ControllerRevision(nil), old...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Revision < sorted[j].Revision })
	toKill := len(sorted) - limit
	for _, h := range sorted {
		if toKill <= 0 {
			break
		}
		if live[h.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]] {
			continue
		}
		err := c.client.AppsV1().ControllerRevisions(ds.Namespace).Delete(ctx, h.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("failed to delete controller revision %q: %w", h.Name, err)
		}
		toKill--
	}
	return nil
}

// sameJSON reports whether a and b hold the same JSON value, however the
// API server formatted it.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
