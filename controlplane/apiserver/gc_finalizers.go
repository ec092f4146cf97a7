package apiserver

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// setGCFinalizers applies a delete's propagation policy the way
// Kubernetes' generic store does: Orphan adds the "orphan" finalizer,
// Foreground adds "foregroundDeletion", Background drops both; the garbage
// collector then orphans or deletes the dependents and removes the
// finalizer. No policy leaves the finalizers alone. It reports whether obj
// changed.
func setGCFinalizers(obj runtime.Object, opts *metav1.DeleteOptions) bool {
	policy := opts.PropagationPolicy
	if policy == nil && opts.OrphanDependents != nil {
		p := metav1.DeletePropagationBackground
		if *opts.OrphanDependents {
			p = metav1.DeletePropagationOrphan
		}
		policy = &p
	}
	if policy == nil {
		return false
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	before := m.GetFinalizers()
	after := slices.DeleteFunc(slices.Clone(before), func(f string) bool {
		return f == metav1.FinalizerOrphanDependents || f == metav1.FinalizerDeleteDependents
	})
	switch *policy {
	case metav1.DeletePropagationOrphan:
		after = append(after, metav1.FinalizerOrphanDependents)
	case metav1.DeletePropagationForeground:
		after = append(after, metav1.FinalizerDeleteDependents)
	}
	if slices.Equal(before, after) {
		return false
	}
	if len(after) == 0 {
		after = nil
	}
	m.SetFinalizers(after)
	return true
}
