package trim

import "k8s.io/apimachinery/pkg/api/meta"

// ManagedFields drops obj's metadata.managedFields; it is a
// cache.TransformFunc. Anything without metadata (a deletion's
// tombstone) passes unchanged.
//
// A pod's managedFields are a fifth of its decoded objects: every
// informer of the process keeps them, and the garbage collector visits
// each of them in every cycle.
func ManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
