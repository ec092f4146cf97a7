package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/glassplane/glassplane/controlplane/trim"
)

// ignoredResources are never part of the graph, as in Kubernetes.
var ignoredResources = map[schema.GroupResource]bool{
	{Group: "", Resource: "events"}:              true,
	{Group: "events.k8s.io", Resource: "events"}: true,
}

// resourceInfo is what discovery says about one kind.
type resourceInfo struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}

// GarbageCollector deletes objects whose owners are gone.
type GarbageCollector struct {
	log       *slog.Logger
	discovery discovery.DiscoveryInterface
	meta      metadata.Interface
	dynamic   dynamic.Interface

	kindsMu sync.RWMutex // guards kinds
	// kinds maps a group kind to its resource, as discovery last said.
	kinds map[schema.GroupKind]resourceInfo
	// monitors are the running metadata informers by resource; only the
	// resync loop (Run's goroutine) touches them.
	monitors map[schema.GroupVersionResource]*monitor
	// resyncNow asks for a discovery resync before the next tick (an owner
	// of a kind discovery did not list yet, such as a new CRD's).
	resyncNow chan struct{}

	mu sync.Mutex // guards nodes and every node's fields
	// nodes is the ownership graph by uid.
	nodes map[types.UID]*node

	attemptToDelete workqueue.TypedRateLimitingInterface[objectRef]
	attemptToOrphan workqueue.TypedRateLimitingInterface[objectRef]
}

// monitor is one resource's metadata informer.
type monitor struct {
	informer toolscache.SharedIndexInformer
	stop     chan struct{}
}

// ResyncPeriod is how often discovery is read again for resources to
// start or stop watching (kube-controller-manager's default 30 s).
var ResyncPeriod = 30 * time.Second

// New builds a garbage collector. Nothing runs until Run.
func New(log *slog.Logger, disc discovery.DiscoveryInterface, meta metadata.Interface, dyn dynamic.Interface) *GarbageCollector {
	return &GarbageCollector{
		log:       log.With("controller", "garbagecollector"),
		discovery: disc,
		meta:      meta,
		dynamic:   dyn,
		kinds:     map[schema.GroupKind]resourceInfo{},
		monitors:  map[schema.GroupVersionResource]*monitor{},
		resyncNow: make(chan struct{}, 1),
		nodes:     map[types.UID]*node{},
		attemptToDelete: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[objectRef](),
			workqueue.TypedRateLimitingQueueConfig[objectRef]{Name: "garbage_collector_attempt_to_delete"}),
		attemptToOrphan: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[objectRef](),
			workqueue.TypedRateLimitingQueueConfig[objectRef]{Name: "garbage_collector_attempt_to_orphan"}),
	}
}

// Run discovers the served resources, watches each one's metadata, and
// processes the two queues with workers goroutines each until ctx ends.
// Discovery is read again every ResyncPeriod (and soon after an owner of
// an unknown kind shows up): resources that appeared, a new CRD's, are
// watched from then on, and those that went are no longer.
func (gc *GarbageCollector) Run(ctx context.Context, workers int) error {
	defer gc.attemptToDelete.ShutDown()
	defer gc.attemptToOrphan.ShutDown()
	monitored, err := gc.discover(ctx)
	if err != nil || ctx.Err() != nil {
		return err
	}
	synced := gc.syncMonitors(monitored)
	defer gc.stopMonitors()
	if !toolscache.WaitForNamedCacheSync("garbage collector", ctx.Done(), synced...) {
		return nil
	}
	gc.log.Info("controller started", "resources", len(monitored), "workers", workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for gc.processNext(ctx, gc.attemptToDelete, gc.attemptToDeleteItem) {
			}
		}()
		go func() {
			defer wg.Done()
			for gc.processNext(ctx, gc.attemptToOrphan, gc.attemptToOrphanItem) {
			}
		}()
	}
	gc.resyncLoop(ctx)
	gc.attemptToDelete.ShutDown()
	gc.attemptToOrphan.ShutDown()
	wg.Wait()
	return nil
}

// resyncLoop reads discovery again every ResyncPeriod, or at most every
// two seconds when asked (resyncNow), until ctx ends.
func (gc *GarbageCollector) resyncLoop(ctx context.Context) {
	tick := time.NewTicker(ResyncPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-gc.resyncNow:
			select {
			case <-ctx.Done():
				return
			case <-time.After(2 * time.Second):
			}
		}
		monitored, err := gc.discover(ctx)
		if err != nil || ctx.Err() != nil {
			continue
		}
		if started := gc.syncMonitors(monitored); len(started) > 0 {
			gc.log.Info("garbage collector watches new resources", "resources", len(started))
		}
	}
}

// syncMonitors starts an informer for each monitored resource not watched
// yet and stops those no longer served; it returns the new ones' HasSynced.
func (gc *GarbageCollector) syncMonitors(monitored map[schema.GroupKind]resourceInfo) []toolscache.InformerSynced {
	want := map[schema.GroupVersionResource]string{}
	for gk, info := range monitored {
		want[info.gvr] = gk.Kind
	}
	for gvr, m := range gc.monitors {
		if _, ok := want[gvr]; !ok {
			close(m.stop)
			delete(gc.monitors, gvr)
		}
	}
	var synced []toolscache.InformerSynced
	for gvr, kind := range want {
		if _, ok := gc.monitors[gvr]; ok {
			continue
		}
		inf := metadatainformer.NewFilteredMetadataInformer(gc.meta, gvr, metav1.NamespaceAll, 0, toolscache.Indexers{}, nil).Informer()
		if err := inf.SetTransform(trim.ManagedFields); err != nil {
			gc.log.Warn("failed to trim a resource's cache", "resource", gvr.String(), "err", err)
		}
		apiVersion := gvr.GroupVersion().String()
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { gc.observe(apiVersion, kind, obj) },
			UpdateFunc: func(_, obj any) { gc.observe(apiVersion, kind, obj) },
			DeleteFunc: func(obj any) { gc.forget(obj) },
		}); err != nil {
			gc.log.Warn("failed to watch a resource", "resource", gvr.String(), "err", err)
			continue
		}
		m := &monitor{informer: inf, stop: make(chan struct{})}
		gc.monitors[gvr] = m
		go inf.Run(m.stop)
		synced = append(synced, inf.HasSynced)
	}
	return synced
}

func (gc *GarbageCollector) stopMonitors() {
	for gvr, m := range gc.monitors {
		close(m.stop)
		delete(gc.monitors, gvr)
	}
}

// askResync asks the resync loop to read discovery soon.
func (gc *GarbageCollector) askResync() {
	select {
	case gc.resyncNow <- struct{}{}:
	default:
	}
}

// discover fills gc.kinds from discovery and returns the resources to
// watch: those that can be listed, watched and deleted.
func (gc *GarbageCollector) discover(ctx context.Context) (map[schema.GroupKind]resourceInfo, error) {
	var lists []*metav1.APIResourceList
	for {
		var err error
		lists, err = gc.discovery.ServerPreferredResources()
		if err == nil || len(lists) > 0 {
			break
		}
		gc.log.Info("waiting for discovery", "err", err)
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(2 * time.Second):
		}
	}
	monitored := map[schema.GroupKind]resourceInfo{}
	kinds := map[schema.GroupKind]resourceInfo{}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			gk := schema.GroupKind{Group: gv.Group, Kind: r.Kind}
			info := resourceInfo{gvr: gv.WithResource(r.Name), namespaced: r.Namespaced}
			kinds[gk] = info
			verbs := strings.Join(r.Verbs, ",") + ","
			if ignoredResources[info.gvr.GroupResource()] || !strings.Contains(verbs, "list,") || !strings.Contains(verbs, "watch,") || !strings.Contains(verbs, "delete,") {
				continue
			}
			monitored[gk] = info
		}
	}
	gc.kindsMu.Lock()
	gc.kinds = kinds
	gc.kindsMu.Unlock()
	return monitored, nil
}

func (gc *GarbageCollector) processNext(ctx context.Context, q workqueue.TypedRateLimitingInterface[objectRef], fn func(context.Context, objectRef) error) bool {
	ref, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(ref)
	if err := fn(ctx, ref); err != nil {
		if ctx.Err() == nil {
			if !errors.Is(err, errNotObserved) {
				gc.log.Info("garbage collection failed, retrying", "object", ref.String(), "err", err)
			}
			q.AddRateLimited(ref)
		}
		return true
	}
	q.Forget(ref)
	return true
}

func objectMeta(obj any) (*metav1.PartialObjectMetadata, bool) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, ok := obj.(*metav1.PartialObjectMetadata)
	return m, ok
}

// observe records an added or updated object in the graph and queues the
// work its change calls for.
func (gc *GarbageCollector) observe(apiVersion, kind string, obj any) {
	m, ok := objectMeta(obj)
	if !ok {
		return
	}
	ref := objectRef{UID: m.UID, APIVersion: apiVersion, Kind: kind, Namespace: m.Namespace, Name: m.Name}
	gc.mu.Lock()
	defer gc.mu.Unlock()
	n, exists := gc.nodes[m.UID]
	if !exists {
		n = newNode(ref)
		gc.nodes[m.UID] = n
	}
	if n.virtual || !exists {
		n.virtual = false
		n.ref = ref
	}
	added, removed := diffOwners(n.owners, m.OwnerReferences)
	n.owners = append([]metav1.OwnerReference(nil), m.OwnerReferences...)
	for _, o := range added {
		gc.linkOwner(n, o)
	}
	for _, o := range removed {
		if owner, ok := gc.nodes[o.UID]; ok {
			delete(owner.dependents, n.ref.UID)
			if owner.deletingDependents {
				gc.attemptToDelete.Add(owner.ref)
			}
		}
	}
	n.beingDeleted = m.DeletionTimestamp != nil
	if n.beingDeleted && hasFinalizer(m, metav1.FinalizerOrphanDependents) {
		gc.attemptToOrphan.Add(n.ref)
	}
	if n.beingDeleted && hasFinalizer(m, metav1.FinalizerDeleteDependents) {
		n.deletingDependents = true
		for _, dep := range n.dependents {
			gc.attemptToDelete.Add(dep.ref)
		}
		gc.attemptToDelete.Add(n.ref)
	} else {
		n.deletingDependents = false
	}
}

// linkOwner adds n to the dependents of the owner o names, creating a
// virtual node (and checking it exists) when the owner is not known yet.
func (gc *GarbageCollector) linkOwner(n *node, o metav1.OwnerReference) {
	owner, ok := gc.nodes[o.UID]
	if !ok {
		owner = newNode(objectRef{UID: o.UID, APIVersion: o.APIVersion, Kind: o.Kind, Namespace: n.ref.Namespace, Name: o.Name})
		owner.virtual = true
		gc.nodes[o.UID] = owner
		gc.attemptToDelete.Add(owner.ref)
	}
	owner.dependents[n.ref.UID] = n
}

func diffOwners(old, cur []metav1.OwnerReference) (added, removed []metav1.OwnerReference) {
	oldUIDs := map[types.UID]bool{}
	for _, o := range old {
		oldUIDs[o.UID] = true
	}
	curUIDs := map[types.UID]bool{}
	for _, o := range cur {
		curUIDs[o.UID] = true
		if !oldUIDs[o.UID] {
			added = append(added, o)
		}
	}
	for _, o := range old {
		if !curUIDs[o.UID] {
			removed = append(removed, o)
		}
	}
	return added, removed
}

// forget removes a deleted object from the graph; its dependents are
// looked at again and owners waiting for it are woken.
func (gc *GarbageCollector) forget(obj any) {
	m, ok := objectMeta(obj)
	if !ok {
		return
	}
	gc.mu.Lock()
	defer gc.mu.Unlock()
	gc.removeNode(m.UID)
}

// removeNode drops uid from the graph; the caller holds gc.mu.
func (gc *GarbageCollector) removeNode(uid types.UID) {
	n, ok := gc.nodes[uid]
	if !ok {
		return
	}
	delete(gc.nodes, uid)
	for _, o := range n.owners {
		if owner, ok := gc.nodes[o.UID]; ok {
			delete(owner.dependents, uid)
			if owner.deletingDependents {
				gc.attemptToDelete.Add(owner.ref)
			}
		}
	}
	for _, dep := range n.dependents {
		gc.attemptToDelete.Add(dep.ref)
	}
}

// resource maps an apiVersion and kind to its resource.
func (gc *GarbageCollector) resource(apiVersion, kind string) (resourceInfo, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return resourceInfo{}, err
	}
	gc.kindsMu.RLock()
	info, ok := gc.kinds[schema.GroupKind{Group: gv.Group, Kind: kind}]
	gc.kindsMu.RUnlock()
	if !ok {
		gc.askResync()
		return resourceInfo{}, &unknownKindError{apiVersion: apiVersion, kind: kind}
	}
	return info, nil
}

func (gc *GarbageCollector) client(ref objectRef) (dynamic.ResourceInterface, error) {
	info, err := gc.resource(ref.APIVersion, ref.Kind)
	if err != nil {
		return nil, err
	}
	if info.namespaced {
		return gc.dynamic.Resource(info.gvr).Namespace(ref.Namespace), nil
	}
	return gc.dynamic.Resource(info.gvr), nil
}

// getObject reads the object ref names; NotFound also when the uid differs.
func (gc *GarbageCollector) getObject(ctx context.Context, ref objectRef) (metav1.Object, error) {
	c, err := gc.client(ref)
	if err != nil {
		return nil, err
	}
	obj, err := c.Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if obj.GetUID() != ref.UID {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: ref.Kind}, ref.Name)
	}
	return obj, nil
}

func (gc *GarbageCollector) deleteObject(ctx context.Context, ref objectRef, policy metav1.DeletionPropagation) error {
	c, err := gc.client(ref)
	if err != nil {
		return err
	}
	uid := ref.UID
	gc.log.Debug("deleting object", "object", ref.String(), "propagationPolicy", policy)
	err = c.Delete(ctx, ref.Name, metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

func (gc *GarbageCollector) patch(ctx context.Context, ref objectRef, data []byte) error {
	c, err := gc.client(ref)
	if err != nil {
		return err
	}
	_, err = c.Patch(ctx, ref.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// unknownKindError is a kind discovery did not list when last read: a
// custom resource whose CRD is newer than that, or one nobody serves. As in
// kube-controller-manager, an owner of such a kind is neither present nor
// gone: the item is tried again after the next discovery resync.
type unknownKindError struct{ apiVersion, kind string }

func (e *unknownKindError) Error() string {
	return fmt.Sprintf("no resource serves %s %s (yet: discovery is read again every %s)", e.apiVersion, e.kind, ResyncPeriod)
}
