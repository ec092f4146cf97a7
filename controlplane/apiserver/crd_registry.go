package apiserver

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"

	dynamicadmission "github.com/glassplane/glassplane/controlplane/apiserver/admission/dynamic"
	"github.com/glassplane/glassplane/controlplane/storage"
)

// customResources is the part of the registry table built at run time from
// CustomResourceDefinitions: one entry per served version of each CRD whose
// names are accepted. The API server's CRD loop (runCRDs) keeps it in step
// with storage; lookups and discovery read it under its lock.
type customResources struct {
	// mu guards crds, entries and byPath.
	mu sync.RWMutex
	// crds are the stored CRDs by name, as the loop last saw them.
	crds map[string]*apiextensionsv1.CustomResourceDefinition
	// entries are the registry entries of each CRD, by its name.
	entries map[string][]*resource
	byPath  map[schema.GroupVersionResource]*resource
	// converters make a CRD's converter between its versions (set once
	// by New).
	converters *conversion.CRConverterFactory
	// kinds learns each custom resource's kinds and converter (set once
	// by New; nil in unit tests).
	kinds customKinds
}

// customKinds is told the kinds and converter of each custom resource: the
// admission webhooks and policies, for matchPolicy Equivalent across a
// CRD's versions (admission/dynamic's Plugins).
type customKinds interface {
	SetCustomResource(gr schema.GroupResource, kinds []dynamicadmission.ResourceKind, convert runtime.ObjectConvertor)
}

func newCustomResources() *customResources {
	return &customResources{
		crds:    map[string]*apiextensionsv1.CustomResourceDefinition{},
		entries: map[string][]*resource{},
		byPath:  map[schema.GroupVersionResource]*resource{},
	}
}

// lookup returns the custom resource entry for gvr, or nil.
func (c *customResources) lookup(gvr schema.GroupVersionResource) *resource {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.byPath[gvr]
}

// list returns every entry, ordered by group, version and resource.
func (c *customResources) list() []*resource {
	c.mu.RLock()
	out := make([]*resource, 0, len(c.byPath))
	for _, res := range c.byPath {
		out = append(out, res)
	}
	c.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].GroupVersionResource(), out[j].GroupVersionResource()
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Version != b.Version {
			return versionLess(a.Version, b.Version)
		}
		return a.Resource < b.Resource
	})
	return out
}

// versionLess orders versions as Kubernetes' version priority does for the
// common cases: v2 before v1 before v1beta1.
func versionLess(a, b string) bool {
	return version.CompareKubeAwareVersionStrings(a, b) > 0
}

// groupVersions returns the served custom group versions.
func (c *customResources) groupVersions() []schema.GroupVersion {
	var out []schema.GroupVersion
	for _, res := range c.list() {
		if gv := res.GroupVersion(); !containsGV(out, gv) {
			out = append(out, gv)
		}
	}
	return out
}

// get returns the CRD last seen with name.
func (c *customResources) get(name string) *apiextensionsv1.CustomResourceDefinition {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.crds[name]
}

// set records crd (nil: deleted) and rebuilds its entries: served once its
// names are accepted. The admission webhooks and policies learn the
// entries' kinds and the CRD's converter with them.
func (c *customResources) set(name string, crd *apiextensionsv1.CustomResourceDefinition) error {
	var entries []*resource
	var convert runtime.ObjectConvertor
	var err error
	if crd != nil && apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.NamesAccepted) {
		if convert, err = crdConverter(crd, c.converters); err == nil {
			entries, err = customResourceEntries(crd, convert)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kinds != nil {
		var kinds []dynamicadmission.ResourceKind
		for _, res := range entries {
			kinds = append(kinds, resourceKinds(res)...)
		}
		// A CRD's name is its plural and group.
		c.kinds.SetCustomResource(schema.ParseGroupResource(name), kinds, convert)
	}
	for _, res := range c.entries[name] {
		delete(c.byPath, res.GroupVersionResource())
	}
	delete(c.entries, name)
	delete(c.crds, name)
	if crd == nil {
		return err
	}
	c.crds[name] = crd
	c.entries[name] = entries
	for _, res := range entries {
		c.byPath[res.GroupVersionResource()] = res
	}
	return err
}

// crdSink feeds the CRD loop from the storage watch of CRDs.
type crdSink struct {
	s    *Server
	work chan string
}

func (k crdSink) replace(objs map[string]runtime.Object, _ int64) {
	seen := map[string]bool{}
	for _, obj := range objs {
		crd := obj.(*apiextensionsv1.CustomResourceDefinition)
		seen[crd.Name] = true
		k.update(crd.Name, crd)
	}
	k.s.custom.mu.RLock()
	var gone []string
	for name := range k.s.custom.crds {
		if !seen[name] {
			gone = append(gone, name)
		}
	}
	k.s.custom.mu.RUnlock()
	for _, name := range gone {
		k.update(name, nil)
	}
}

func (k crdSink) apply(ev storage.Event, obj runtime.Object) {
	crd := obj.(*apiextensionsv1.CustomResourceDefinition)
	if ev.Type == storage.EventDelete {
		k.update(crd.Name, nil)
		return
	}
	k.update(crd.Name, crd)
}

func (k crdSink) update(name string, crd *apiextensionsv1.CustomResourceDefinition) {
	if err := k.s.custom.set(name, crd); err != nil {
		k.s.log.Error("failed to serve custom resource", "crd", name, "err", err)
	}
	k.s.publishCRDOpenAPI()
	if crd == nil {
		// Another CRD of the group may now take the names it held.
		k.s.custom.mu.RLock()
		for other, c := range k.s.custom.crds {
			if !apihelpers.IsCRDConditionTrue(c, apiextensionsv1.NamesAccepted) {
				k.enqueue(other)
			}
		}
		k.s.custom.mu.RUnlock()
		return
	}
	k.enqueue(name)
}

func (k crdSink) enqueue(name string) {
	select {
	case k.work <- name:
	default:
		go func() { k.work <- name }()
	}
}

// runCRDs keeps the custom resource entries in step with the stored CRDs and
// does what apiextensions-apiserver's naming, establishing and finalizer
// controllers do: NamesAccepted and Established conditions, then on delete
// the removal of every object of the CRD before the CRD itself goes.
func (s *Server) runCRDs(ctx context.Context) {
	res := s.byPath[apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")]
	sink := crdSink{s: s, work: make(chan string, 64)}
	go s.feedCache(ctx, res, sink, func() {})
	for {
		select {
		case <-ctx.Done():
			return
		case name := <-sink.work:
			if err := s.syncCRD(ctx, res, name); errors.Is(err, errInstancesRemain) {
				s.log.Info("CustomResourceDefinition deletion waits for its objects' finalizers", "crd", name, "err", err)
				time.AfterFunc(5*time.Second, func() { sink.enqueue(name) })
			} else if err != nil && ctx.Err() == nil {
				s.log.Warn("failed to sync CustomResourceDefinition; retrying", "crd", name, "err", err)
				time.AfterFunc(time.Second, func() { sink.enqueue(name) })
			}
		}
	}
}

// syncCRD brings one CRD's status up to date, or finishes its deletion.
func (s *Server) syncCRD(ctx context.Context, res *resource, name string) error {
	obj, err := s.getFromStore(ctx, res, "", name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	crd := obj.(*apiextensionsv1.CustomResourceDefinition)
	if crd.DeletionTimestamp != nil {
		return s.finalizeCRD(ctx, res, crd)
	}
	next := crd.DeepCopy()
	names, accepted, established := s.calculateNames(next)
	next.Status.AcceptedNames = names
	apihelpers.SetCRDCondition(next, accepted)
	if accepted.Status == apiextensionsv1.ConditionTrue {
		established = apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue,
			Reason: "InitialNamesAccepted", Message: "the initial names have been accepted",
		}
	}
	apihelpers.SetCRDCondition(next, established)
	if accepted.Status == apiextensionsv1.ConditionTrue {
		// Serve before anyone can read Established, as upstream's
		// handler serves once the names are accepted; the watch event
		// of the write below installs the same entries again.
		if err := s.custom.set(name, next); err != nil {
			s.log.Error("failed to serve custom resource", "crd", name, "err", err)
		}
		s.publishCRDOpenAPI()
	}
	return s.writeCRD(ctx, res, crd, next)
}

// writeCRD stores next in place of cur when it differs.
func (s *Server) writeCRD(ctx context.Context, res *resource, cur, next *apiextensionsv1.CustomResourceDefinition) error {
	before, err := encodeForStorage(res, cur)
	if err != nil {
		return err
	}
	after, err := encodeForStorage(res, next)
	if err != nil {
		return err
	}
	if string(before) == string(after) {
		return nil
	}
	_, err = s.store.Update(ctx, key(res, "", cur.Name), after, modRevision(cur))
	return err
}

func modRevision(obj metav1.Object) int64 {
	var rev int64
	fmt.Sscan(obj.GetResourceVersion(), &rev)
	return rev
}

// calculateNames is the naming controller's calculateNamesAndConditions:
// each requested name is accepted unless another CRD of the group (or a
// built-in resource of the group) holds it.
func (s *Server) calculateNames(in *apiextensionsv1.CustomResourceDefinition) (apiextensionsv1.CustomResourceDefinitionNames, apiextensionsv1.CustomResourceDefinitionCondition, apiextensionsv1.CustomResourceDefinitionCondition) {
	resources, kinds := map[string]bool{}, map[string]bool{}
	for _, res := range s.resources {
		if res.GVK.Group == in.Spec.Group {
			resources[res.Resource], resources[res.Singular] = true, true
			for _, n := range res.ShortNames {
				resources[n] = true
			}
			kinds[res.GVK.Kind], kinds[res.GVK.Kind+"List"] = true, true
		}
	}
	s.custom.mu.RLock()
	for _, c := range s.custom.crds {
		if c.Name == in.Name || c.Spec.Group != in.Spec.Group {
			continue
		}
		n := c.Status.AcceptedNames
		resources[n.Plural], resources[n.Singular] = true, true
		for _, sn := range n.ShortNames {
			resources[sn] = true
		}
		kinds[n.Kind], kinds[n.ListKind] = true, true
	}
	s.custom.mu.RUnlock()
	delete(resources, "")
	delete(kinds, "")

	cond := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionUnknown}
	conflict := func(reason, msg string) {
		cond.Status, cond.Reason, cond.Message = apiextensionsv1.ConditionFalse, reason, msg
	}
	fresh := func(requested, accepted string, used map[string]bool) error {
		if requested == accepted || !used[requested] {
			return nil
		}
		return fmt.Errorf("%q is already in use", requested)
	}
	req, acc := in.Spec.Names, in.Status.AcceptedNames
	out := acc
	if err := fresh(req.Plural, acc.Plural, resources); err != nil {
		conflict("PluralConflict", err.Error())
	} else {
		out.Plural = req.Plural
	}
	if err := fresh(req.Singular, acc.Singular, resources); err != nil {
		conflict("SingularConflict", err.Error())
	} else {
		out.Singular = req.Singular
	}
	var shortErrs []string
	for _, sn := range req.ShortNames {
		if containsString(acc.ShortNames, sn) {
			continue
		}
		if err := fresh(sn, "", resources); err != nil {
			shortErrs = append(shortErrs, err.Error())
		}
	}
	if len(shortErrs) > 0 {
		msg := shortErrs[0]
		if len(shortErrs) > 1 {
			msg = "[" + strings.Join(shortErrs, ", ") + "]"
		}
		conflict("ShortNamesConflict", msg)
	} else {
		out.ShortNames = req.ShortNames
	}
	if err := fresh(req.Kind, acc.Kind, kinds); err != nil {
		conflict("KindConflict", err.Error())
	} else {
		out.Kind = req.Kind
	}
	if err := fresh(req.ListKind, acc.ListKind, kinds); err != nil {
		conflict("ListKindConflict", err.Error())
	} else {
		out.ListKind = req.ListKind
	}
	out.Categories = req.Categories
	if cond.Status == apiextensionsv1.ConditionUnknown {
		cond.Status, cond.Reason, cond.Message = apiextensionsv1.ConditionTrue, "NoConflicts", "no conflicts found"
	}
	established := apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse,
		Reason: "NotAccepted", Message: "not all names are accepted",
	}
	if old := apihelpers.FindCRDCondition(in, apiextensionsv1.Established); old != nil {
		established = *old
	}
	return out, cond, established
}

// finalizeCRD is the finalizer controller: with the
// customresourcecleanup.apiextensions.k8s.io finalizer on a CRD being
// deleted, it marks the CRD Terminating, deletes every stored object of it,
// then drops the finalizer (and the CRD goes once none is left).
func (s *Server) finalizeCRD(ctx context.Context, res *resource, crd *apiextensionsv1.CustomResourceDefinition) error {
	if !apihelpers.CRDHasFinalizer(crd, apiextensionsv1.CustomResourceCleanupFinalizer) {
		if len(crd.Finalizers) == 0 {
			_, _, err := s.store.Delete(ctx, key(res, "", crd.Name), modRevision(crd))
			if errors.Is(err, storage.ErrNotFound) {
				return nil
			}
			return err
		}
		return nil
	}
	next := crd.DeepCopy()
	apihelpers.SetCRDCondition(next, apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue,
		Reason: "InstanceDeletionInProgress", Message: "CustomResource deletion is in progress",
	})
	if err := s.writeCRD(ctx, res, crd, next); err != nil {
		return err
	}
	plural := crd.Status.AcceptedNames.Plural
	if plural == "" {
		plural = crd.Spec.Names.Plural
	}
	remaining, err := s.deleteCustomResources(ctx, storage.Prefix(crd.Spec.Group+"/"+plural, ""))
	if err != nil {
		return err
	}
	if remaining > 0 {
		// Objects with finalizers go when their finalizers are removed,
		// as upstream's finalizer waits for them; the loop comes back.
		return fmt.Errorf("%w: %d with finalizers", errInstancesRemain, remaining)
	}
	cur, err := s.getFromStore(ctx, res, "", crd.Name)
	if err != nil {
		return err
	}
	done := cur.(*apiextensionsv1.CustomResourceDefinition).DeepCopy()
	apihelpers.SetCRDCondition(done, apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionFalse,
		Reason: "InstanceDeletionCompleted", Message: "removed all instances",
	})
	apihelpers.CRDRemoveFinalizer(done, apiextensionsv1.CustomResourceCleanupFinalizer)
	if len(done.Finalizers) == 0 {
		_, _, err := s.store.Delete(ctx, key(res, "", crd.Name), modRevision(done))
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		return err
	}
	return s.writeCRD(ctx, res, cur.(*apiextensionsv1.CustomResourceDefinition), done)
}

// errInstancesRemain is finalizeCRD's answer while objects with finalizers
// keep a CRD's deletion waiting.
var errInstancesRemain = errors.New("waiting for custom resources to be removed")

// deleteCustomResources deletes the stored objects under prefix (a CRD's)
// as upstream's CRD finalizer deletes them through the storage: an object
// without finalizers goes at once; one with finalizers is marked deleting
// (deletionTimestamp now, grace 0), and goes when its finalizers are
// removed. It returns how many are left waiting.
func (s *Server) deleteCustomResources(ctx context.Context, prefix string) (int, error) {
	remaining := 0
	start := ""
	for {
		list, err := s.store.List(ctx, prefix, storage.ListOptions{Limit: 500, StartKey: start})
		if err != nil {
			return 0, err
		}
		for _, kv := range list.Items {
			start = kv.Key + "\x00"
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(kv.Value); err != nil || len(u.GetFinalizers()) == 0 {
				if _, _, err := s.store.Delete(ctx, kv.Key, kv.ModRevision); err != nil && !errors.Is(err, storage.ErrNotFound) && !errors.Is(err, storage.ErrConflict) {
					return 0, fmt.Errorf("failed to delete %q: %w", kv.Key, err)
				}
				continue
			}
			remaining++
			if u.GetDeletionTimestamp() != nil {
				continue
			}
			now, zero := metav1.Now(), int64(0)
			u.SetDeletionTimestamp(&now)
			u.SetDeletionGracePeriodSeconds(&zero)
			if g := u.GetGeneration(); g > 0 {
				u.SetGeneration(g + 1)
			}
			b, err := u.MarshalJSON()
			if err != nil {
				return 0, err
			}
			if _, err := s.store.Update(ctx, kv.Key, b, kv.ModRevision); err != nil && !errors.Is(err, storage.ErrNotFound) && !errors.Is(err, storage.ErrConflict) {
				return 0, fmt.Errorf("failed to mark %q deleting: %w", kv.Key, err)
			}
		}
		if !list.More {
			return remaining, nil
		}
	}
}

// servedResources returns the built-in registry entries, then those built
// from CRDs.
func (s *Server) servedResources() []*resource {
	custom := s.custom.list()
	if len(custom) == 0 {
		return s.resources
	}
	return append(append(make([]*resource, 0, len(s.resources)+len(custom)), s.resources...), custom...)
}

// servedGroups returns the built-in group versions, then the custom ones.
func (s *Server) servedGroups() []schema.GroupVersion {
	out := s.groups
	for _, gv := range s.custom.groupVersions() {
		if !containsGV(out, gv) {
			if len(out) == len(s.groups) {
				out = append([]schema.GroupVersion(nil), s.groups...)
			}
			out = append(out, gv)
		}
	}
	return out
}
