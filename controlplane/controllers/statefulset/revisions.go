package statefulset

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"reflect"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/util/retry"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllerutil"
)

// revisionHashLabel is the label holding a ControllerRevision's hash
// (Kubernetes' history.ControllerRevisionHashLabel).
const revisionHashLabel = "controller.kubernetes.io/hash"

// revisionPatch is Kubernetes' getPatch: spec.template as a strategic merge
// patch that replaces it, keys sorted, what a StatefulSet's
// ControllerRevision stores and `kubectl rollout undo` applies.
func revisionPatch(set *appsv1.StatefulSet) ([]byte, error) {
	data, err := json.Marshal(&set.Spec.Template)
	if err != nil {
		return nil, err
	}
	var template map[string]any
	if err := json.Unmarshal(data, &template); err != nil {
		return nil, err
	}
	template["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
}

// hashRevision is history.HashControllerRevision: FNV-32 of the data and
// the collision count, safe-encoded.
func hashRevision(data []byte, collisionCount *int32) string {
	h := fnv.New32()
	h.Write(data)
	if collisionCount != nil {
		h.Write([]byte(strconv.FormatInt(int64(*collisionCount), 10)))
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// revisionName is <prefix>-<hash>, the prefix cut to 223 bytes.
func revisionName(prefix, hash string) string {
	if len(prefix) > 223 {
		prefix = prefix[:223]
	}
	return prefix + "-" + hash
}

// newRevision returns set's template as the ControllerRevision numbered
// revision: the template's labels and the set's annotations, owned by the
// set, named and labelled by its hash.
func newRevision(set *appsv1.StatefulSet, revision int64, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	patch, err := revisionPatch(set)
	if err != nil {
		return nil, err
	}
	lbls := map[string]string{}
	for k, v := range set.Spec.Template.Labels {
		lbls[k] = v
	}
	hash := hashRevision(patch, collisionCount)
	lbls[revisionHashLabel] = hash
	annotations := map[string]string{}
	for k, v := range set.Annotations {
		annotations[k] = v
	}
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: revisionName(set.Name, hash), Namespace: set.Namespace, Labels: lbls, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{*controllerutil.NewControllerRef(set, controllerKind)},
		},
		Data:     runtime.RawExtension{Raw: patch},
		Revision: revision,
	}, nil
}

// applyRevision returns set with revision's template patched in.
func applyRevision(set *appsv1.StatefulSet, revision *appsv1.ControllerRevision) (*appsv1.StatefulSet, error) {
	original, err := json.Marshal(set)
	if err != nil {
		return nil, err
	}
	patched, err := strategicpatch.StrategicMergePatch(original, revision.Data.Raw, &appsv1.StatefulSet{})
	if err != nil {
		return nil, fmt.Errorf("failed to apply controller revision %q: %w", revision.Name, err)
	}
	out := &appsv1.StatefulSet{}
	if err := json.Unmarshal(patched, out); err != nil {
		return nil, err
	}
	return out, nil
}

// nextRevision is one more than the highest of sorted revisions, or 1.
func nextRevision(sorted []*appsv1.ControllerRevision) int64 {
	if len(sorted) == 0 {
		return 1
	}
	return sorted[len(sorted)-1].Revision + 1
}

func sortRevisions(revs []*appsv1.ControllerRevision) {
	sort.SliceStable(revs, func(i, j int) bool { return revs[i].Revision < revs[j].Revision })
}

// equalRevision reports whether a and b hold the same template (the same
// JSON, however the API server formatted it).
func equalRevision(a, b *appsv1.ControllerRevision) bool {
	if a == nil || b == nil {
		return a == b
	}
	return sameJSON(a.Data.Raw, b.Data.Raw)
}

func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// createRevision is history's CreateControllerRevision: on a name taken by
// other data it bumps collisionCount and tries the next name; on a name
// taken by the same data it returns that revision.
func (c *Controller) createRevision(ctx context.Context, set *appsv1.StatefulSet, rev *appsv1.ControllerRevision, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	clone := rev.DeepCopy()
	for {
		clone.Name = revisionName(set.Name, hashRevision(rev.Data.Raw, collisionCount))
		created, err := c.client.AppsV1().ControllerRevisions(set.Namespace).Create(ctx, clone, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return nil, fmt.Errorf("failed to create controller revision for %q: %w", set.Name, err)
			}
			return created, nil
		}
		exists, err := c.client.AppsV1().ControllerRevisions(set.Namespace).Get(ctx, clone.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if sameJSON(exists.Data.Raw, clone.Data.Raw) {
			return exists, nil
		}
		*collisionCount++
	}
}

// renumberRevision gives rev the number revision, as a rollback to an older
// template does.
func (c *Controller) renumberRevision(ctx context.Context, rev *appsv1.ControllerRevision, revision int64) (*appsv1.ControllerRevision, error) {
	clone := rev.DeepCopy()
	var out *appsv1.ControllerRevision
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if clone.Revision == revision {
			out = clone
			return nil
		}
		clone.Revision = revision
		updated, err := c.client.AppsV1().ControllerRevisions(clone.Namespace).Update(ctx, clone, metav1.UpdateOptions{})
		if err == nil {
			out = updated
			return nil
		}
		if fresh, getErr := c.client.AppsV1().ControllerRevisions(clone.Namespace).Get(ctx, clone.Name, metav1.GetOptions{}); getErr == nil {
			clone = fresh
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("failed to renumber controller revision %q: %w", rev.Name, err)
	}
	return out, nil
}

// revisionsOf returns the revisions set owns or that are orphans matching
// its selector, adopting the orphans, sorted by number.
func (c *Controller) revisionsOf(ctx context.Context, set *appsv1.StatefulSet) ([]*appsv1.ControllerRevision, error) {
	selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil {
		return nil, err
	}
	all, err := c.revisionLister.ControllerRevisions(set.Namespace).List(selector)
	if err != nil {
		return nil, err
	}
	var out []*appsv1.ControllerRevision
	for _, rev := range all {
		ref := metav1.GetControllerOfNoCopy(rev)
		switch {
		case ref == nil:
			if set.DeletionTimestamp != nil {
				continue
			}
			adopted, err := c.adoptRevision(ctx, set, rev)
			if err != nil {
				return nil, err
			}
			if adopted != nil {
				out = append(out, adopted)
			}
		case ref.UID == set.UID:
			out = append(out, rev)
		}
	}
	sortRevisions(out)
	return out, nil
}

func (c *Controller) adoptRevision(ctx context.Context, set *appsv1.StatefulSet, rev *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	ref := controllerutil.NewControllerRef(set, controllerKind)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": []any{ref}, "uid": rev.UID}})
	if err != nil {
		return nil, err
	}
	adopted, err := c.client.AppsV1().ControllerRevisions(rev.Namespace).Patch(ctx, rev.Name, "application/strategic-merge-patch+json", patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to adopt controller revision %q: %w", rev.Name, err)
	}
	return adopted, nil
}

// revisionsFor returns set's current and update revisions and its
// collision count, as getStatefulSetRevisions: the update revision is the
// newest one when it holds the set's template, an older one renumbered as
// the newest when it does (a rollback), or a new one.
func (c *Controller) revisionsFor(ctx context.Context, set *appsv1.StatefulSet, revisions []*appsv1.ControllerRevision) (cur, upd *appsv1.ControllerRevision, collisionCount int32, err error) {
	if set.Status.CollisionCount != nil {
		collisionCount = *set.Status.CollisionCount
	}
	upd, err = newRevision(set, nextRevision(revisions), &collisionCount)
	if err != nil {
		return nil, nil, collisionCount, err
	}
	var equal []*appsv1.ControllerRevision
	for _, r := range revisions {
		if equalRevision(r, upd) {
			equal = append(equal, r)
		}
	}
	switch {
	case len(equal) > 0 && equalRevision(revisions[len(revisions)-1], equal[len(equal)-1]):
		upd = revisions[len(revisions)-1]
	case len(equal) > 0:
		upd, err = c.renumberRevision(ctx, equal[len(equal)-1], upd.Revision)
	default:
		upd, err = c.createRevision(ctx, set, upd, &collisionCount)
	}
	if err != nil {
		return nil, nil, collisionCount, err
	}
	for _, r := range revisions {
		if r.Name == set.Status.CurrentRevision {
			cur = r
			break
		}
	}
	if cur == nil {
		cur = upd
	}
	return cur, upd, collisionCount, nil
}

// truncateHistory deletes the oldest revisions beyond
// revisionHistoryLimit that are neither current, nor the update, nor run
// by a pod.
func (c *Controller) truncateHistory(ctx context.Context, set *appsv1.StatefulSet, pods []*v1.Pod, revisions []*appsv1.ControllerRevision, cur, upd *appsv1.ControllerRevision) error {
	live := map[string]bool{}
	if cur != nil {
		live[cur.Name] = true
	}
	if upd != nil {
		live[upd.Name] = true
	}
	for _, p := range pods {
		live[podRevision(p)] = true
	}
	var history []*appsv1.ControllerRevision
	for _, r := range revisions {
		if !live[r.Name] {
			history = append(history, r)
		}
	}
	limit := 10
	if set.Spec.RevisionHistoryLimit != nil {
		limit = int(*set.Spec.RevisionHistoryLimit)
	}
	if len(history) <= limit {
		return nil
	}
	for _, r := range history[:len(history)-limit] {
		err := c.client.AppsV1().ControllerRevisions(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("failed to delete controller revision %q: %w", r.Name, err)
		}
	}
	return nil
}
