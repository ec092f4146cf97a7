package dynamic

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ResourceKind is the kind a version of a resource, or of one of its
// subresources (Subresource "" for the resource itself), holds.
type ResourceKind struct {
	Resource    schema.GroupVersionResource
	Subresource string
	Kind        schema.GroupVersionKind
}

// kindRegistry is the plugins' runtime.EquivalentResourceMapper: the
// versions of one group/resource are equivalent, in the order they were
// registered, as in apimachinery's EquivalentResourceRegistry that
// kube-apiserver fills. Unlike that one, a custom resource's versions are
// replaced as its CRD changes (setCustom), and its converter between them
// is kept beside them.
type kindRegistry struct {
	// mu guards kinds, versions and converters.
	mu sync.RWMutex
	// kinds are the kinds of each resource version, by subresource.
	kinds map[schema.GroupVersionResource]map[string]schema.GroupVersionKind
	// versions lists each group/resource's registered versions.
	versions map[schema.GroupResource][]schema.GroupVersionResource
	// converters convert a custom kind's objects between its versions.
	converters map[schema.GroupKind]runtime.ObjectConvertor
}

var _ runtime.EquivalentResourceMapper = (*kindRegistry)(nil)

func newKindRegistry() *kindRegistry {
	return &kindRegistry{
		kinds:      map[schema.GroupVersionResource]map[string]schema.GroupVersionKind{},
		versions:   map[schema.GroupResource][]schema.GroupVersionResource{},
		converters: map[schema.GroupKind]runtime.ObjectConvertor{},
	}
}

// EquivalentResourcesFor returns the versions of gvr's group/resource that
// have subresource (gvr's own version among them).
func (r *kindRegistry) EquivalentResourcesFor(gvr schema.GroupVersionResource, subresource string) []schema.GroupVersionResource {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []schema.GroupVersionResource
	for _, v := range r.versions[gvr.GroupResource()] {
		if _, ok := r.kinds[v][subresource]; ok {
			out = append(out, v)
		}
	}
	return out
}

// KindFor returns the kind gvr's subresource holds, or the empty kind.
func (r *kindRegistry) KindFor(gvr schema.GroupVersionResource, subresource string) schema.GroupVersionKind {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.kinds[gvr][subresource]
}

// register records k.
func (r *kindRegistry) register(k ResourceKind) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.registerLocked(k)
}

func (r *kindRegistry) registerLocked(k ResourceKind) {
	subs := r.kinds[k.Resource]
	if subs == nil {
		subs = map[string]schema.GroupVersionKind{}
		r.kinds[k.Resource] = subs
		gr := k.Resource.GroupResource()
		r.versions[gr] = append(r.versions[gr], k.Resource)
	}
	subs[k.Subresource] = k.Kind
}

// setCustom replaces everything recorded of the custom resource gr with
// kinds, and its converter with convert (nil: none).
func (r *kindRegistry) setCustom(gr schema.GroupResource, kinds []ResourceKind, convert runtime.ObjectConvertor) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.versions[gr] {
		delete(r.converters, r.kinds[v][""].GroupKind())
		delete(r.kinds, v)
	}
	delete(r.versions, gr)
	for _, k := range kinds {
		r.registerLocked(k)
		if k.Subresource == "" && convert != nil {
			r.converters[k.Kind.GroupKind()] = convert
		}
	}
}

// converter returns the converter between gk's versions, or nil.
func (r *kindRegistry) converter(gk schema.GroupKind) runtime.ObjectConvertor {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.converters[gk]
}
