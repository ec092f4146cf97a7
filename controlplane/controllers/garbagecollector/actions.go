package garbagecollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// nodeState is a copy of a node's fields taken under the graph lock.
type nodeState struct {
	virtual            bool
	deletingDependents bool
	hasDependents      bool
	dependentDeleting  bool
	// blocking counts the dependents that block the owner's deletion;
	// toPush are those of them to delete now (the others are deleting
	// their own dependents and wake the owner when they go).
	blocking int
	toPush   []objectRef
}

func (gc *GarbageCollector) state(uid types.UID) (nodeState, bool) {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	n, ok := gc.nodes[uid]
	if !ok {
		return nodeState{}, false
	}
	s := nodeState{virtual: n.virtual, deletingDependents: n.deletingDependents, hasDependents: len(n.dependents) > 0}
	for _, dep := range n.dependents {
		if dep.deletingDependents {
			s.dependentDeleting = true
		}
	}
	blocking := n.blockingDependents()
	s.blocking = len(blocking)
	for _, dep := range blocking {
		if !dep.deletingDependents {
			s.toPush = append(s.toPush, dep.ref)
		}
	}
	return s, true
}

// absent handles an object found not to exist: it leaves the graph, and
// its dependents are looked at again.
func (gc *GarbageCollector) absent(ref objectRef) {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	if n, ok := gc.nodes[ref.UID]; ok && n.virtual {
		gc.removeNode(ref.UID)
	}
}

// errNotObserved is an owner known only from a dependent's reference (a
// virtual node) that exists but that its resource's watch has not shown
// yet. It is looked at again until the watch does, as
// kube-controller-manager's collector requeues it (kubernetes#56121): an
// owner that goes after this look but before its watch lists (a new CRD's
// resource, watched from the next discovery read) brings no event, and
// would stay in the graph for good, its dependents never collected.
var errNotObserved = errors.New("the owner exists but its watch has not shown it yet")

// attemptToDeleteItem deletes the object when all its owners are gone (or
// waiting for it in the foreground), drops references to owners that are
// gone when others remain, and finishes a foreground deletion whose
// blocking dependents are gone.
func (gc *GarbageCollector) attemptToDeleteItem(ctx context.Context, ref objectRef) error {
	st, ok := gc.state(ref.UID)
	if !ok {
		return nil
	}
	latest, err := gc.getObject(ctx, ref)
	if apierrors.IsNotFound(err) {
		gc.absent(ref)
		return nil
	}
	if err != nil {
		// An unknown kind (a CRD newer than discovery's last reading) is
		// retried after the next resync, never taken for gone.
		return err
	}
	if st.virtual {
		// It exists; its watch event will bring it into the graph, and it
		// is looked at until then (see errNotObserved).
		return errNotObserved
	}
	if latest.GetDeletionTimestamp() != nil {
		if hasFinalizer(latest, metav1.FinalizerDeleteDependents) {
			return gc.processDeletingDependents(ctx, ref, st)
		}
		return nil
	}
	owners := latest.GetOwnerReferences()
	if len(owners) == 0 {
		return nil
	}
	var solid, dangling, waiting []metav1.OwnerReference
	for _, o := range owners {
		owner, err := gc.getObject(ctx, objectRef{UID: o.UID, APIVersion: o.APIVersion, Kind: o.Kind, Namespace: ref.Namespace, Name: o.Name})
		switch {
		case apierrors.IsNotFound(err):
			dangling = append(dangling, o)
		case err != nil:
			return fmt.Errorf("failed to look up owner %s %q of %s: %w", o.Kind, o.Name, ref, err)
		case owner.GetDeletionTimestamp() != nil && hasFinalizer(owner, metav1.FinalizerDeleteDependents):
			waiting = append(waiting, o)
		default:
			solid = append(solid, o)
		}
	}
	switch {
	case len(solid) > 0:
		if len(dangling) == 0 && len(waiting) == 0 {
			return nil
		}
		gc.log.Debug("removing references to owners that are gone", "object", ref.String())
		return gc.removeOwnerReferences(ctx, ref, append(dangling, waiting...))
	case len(waiting) > 0 && st.hasDependents:
		if st.dependentDeleting {
			return gc.unblockOwnerReferences(ctx, ref, waiting)
		}
		return gc.deleteObject(ctx, ref, metav1.DeletePropagationForeground)
	default:
		policy := metav1.DeletePropagationBackground
		switch {
		case hasFinalizer(latest, metav1.FinalizerOrphanDependents):
			policy = metav1.DeletePropagationOrphan
		case hasFinalizer(latest, metav1.FinalizerDeleteDependents):
			policy = metav1.DeletePropagationForeground
		}
		return gc.deleteObject(ctx, ref, policy)
	}
}

// processDeletingDependents removes the foregroundDeletion finalizer once
// no dependent blocks the owner, and pushes the blocking ones along.
func (gc *GarbageCollector) processDeletingDependents(ctx context.Context, ref objectRef, st nodeState) error {
	if st.blocking == 0 {
		return gc.removeFinalizer(ctx, ref, metav1.FinalizerDeleteDependents)
	}
	for _, dep := range st.toPush {
		gc.attemptToDelete.Add(dep)
	}
	return nil
}

// attemptToOrphanItem removes the owner from every dependent's
// ownerReferences, then its orphan finalizer.
func (gc *GarbageCollector) attemptToOrphanItem(ctx context.Context, ref objectRef) error {
	gc.mu.Lock()
	n, ok := gc.nodes[ref.UID]
	var deps []objectRef
	if ok {
		for _, d := range n.dependents {
			deps = append(deps, d.ref)
		}
	}
	gc.mu.Unlock()
	if !ok {
		return nil
	}
	owner := metav1.OwnerReference{UID: ref.UID}
	for _, dep := range deps {
		if err := gc.removeOwnerReferences(ctx, dep, []metav1.OwnerReference{owner}); err != nil {
			return fmt.Errorf("failed to orphan %s: %w", dep, err)
		}
	}
	return gc.removeFinalizer(ctx, ref, metav1.FinalizerOrphanDependents)
}

// removeOwnerReferences drops the references to owners from ref's object
// with a strategic merge patch keyed by uid.
func (gc *GarbageCollector) removeOwnerReferences(ctx context.Context, ref objectRef, owners []metav1.OwnerReference) error {
	var items []map[string]any
	for _, o := range owners {
		items = append(items, map[string]any{"$patch": "delete", "uid": o.UID})
	}
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": items, "uid": ref.UID}})
	if err != nil {
		return err
	}
	return gc.patch(ctx, ref, data)
}

// unblockOwnerReferences sets blockOwnerDeletion=false on the references
// to owners, so a dependent that waits on its own dependents does not
// deadlock its owner.
func (gc *GarbageCollector) unblockOwnerReferences(ctx context.Context, ref objectRef, owners []metav1.OwnerReference) error {
	var items []map[string]any
	for _, o := range owners {
		items = append(items, map[string]any{"uid": o.UID, "blockOwnerDeletion": false})
	}
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": items, "uid": ref.UID}})
	if err != nil {
		return err
	}
	return gc.patch(ctx, ref, data)
}

func (gc *GarbageCollector) removeFinalizer(ctx context.Context, ref objectRef, finalizer string) error {
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{"$deleteFromPrimitiveList/finalizers": []string{finalizer}, "uid": ref.UID}})
	if err != nil {
		return err
	}
	gc.log.Debug("removing finalizer", "object", ref.String(), "finalizer", finalizer)
	return gc.patch(ctx, ref, data)
}
