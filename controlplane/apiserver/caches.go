package apiserver

import (
	"context"
	"errors"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/glassplane/glassplane/controlplane/storage"
)

// resyncDelay is how long a cache fed by the storage watch waits before
// listing again after its watch failed.
const resyncDelay = time.Second

// Run keeps the server's caches current from the storage watch until ctx
// ends, as kube-apiserver's informers do: the RBAC cache (requests wait for
// its first full list before they are authorized), the lookup caches
// admission reads namespaces, ServiceAccounts and PriorityClasses from, and
// the Node authorizer's graph of pods; and it repairs the Services'
// allocations every serviceRepairInterval (sooner when an orphan address
// comes out of its grace). When ctx ends, /readyz fails its
// shutdown check. Run is called once.
func (s *Server) Run(ctx context.Context) error {
	context.AfterFunc(ctx, func() { close(s.shuttingDown) })
	var wg sync.WaitGroup
	if s.rbacCache != nil {
		kinds := []string{"roles", "rolebindings", "clusterroles", "clusterrolebindings"}
		var synced sync.WaitGroup
		synced.Add(len(kinds))
		for _, resource := range kinds {
			res := s.byPath[rbacv1.SchemeGroupVersion.WithResource(resource)]
			wg.Go(func() {
				s.feedCache(ctx, res, rbacSink{s, res}, sync.OnceFunc(synced.Done))
			})
		}
		go func() {
			synced.Wait()
			s.rbacCache.MarkReady()
			s.log.Info("RBAC cache synced")
		}()
	}
	for _, c := range []*lookupCache{s.lookups.namespaces, s.lookups.serviceAccounts, s.lookups.priorityClasses} {
		wg.Go(func() { s.feedCache(ctx, c.res, c, func() {}) })
	}
	if s.nodeGraph != nil {
		wg.Go(func() { s.feedCache(ctx, s.podsRes, s.nodeGraph, func() {}) })
	}
	wg.Go(func() { s.runServiceRepair(ctx, s.startRepair) })
	wg.Go(func() { s.runCRDs(ctx) })
	wg.Wait()
	return nil
}

// cacheSink receives what feedCache reads: a full list, then each change.
// The objects are shared with the watch fan-out: sinks must not modify them.
type cacheSink interface {
	// replace swaps the whole content for a list read at rev.
	replace(objs map[string]runtime.Object, rev int64)
	apply(ev storage.Event, obj runtime.Object)
}

// feedCache lists one resource into sink, then applies its watch events; it
// lists again whenever the watch ends, until ctx ends. synced is called
// after each successful list.
func (s *Server) feedCache(ctx context.Context, res *resource, sink cacheSink, synced func()) {
	prefix := storage.Prefix(res.StorageResource, "")
	for ctx.Err() == nil {
		rev, err := s.relist(ctx, res, prefix, sink)
		if err == nil {
			synced()
			err = s.watchInto(ctx, res, prefix, rev, sink)
		}
		if err != nil && ctx.Err() == nil {
			s.log.Warn("cache watch failed; listing again", "resource", res.Resource, "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(resyncDelay):
		}
	}
}

func (s *Server) relist(ctx context.Context, res *resource, prefix string, sink cacheSink) (int64, error) {
	list, err := s.store.List(ctx, prefix, storage.ListOptions{})
	if err != nil {
		return 0, err
	}
	objs := make(map[string]runtime.Object, len(list.Items))
	for _, kv := range list.Items {
		obj, err := decodeStored(res, kv.Value, kv.ModRevision)
		if err != nil {
			s.log.Error("skipping undecodable object", "key", kv.Key, "err", err)
			continue
		}
		objs[kv.Key] = obj
	}
	sink.replace(objs, list.Revision)
	return list.Revision, nil
}

// watchInto applies events after rev until the watch closes.
func (s *Server) watchInto(ctx context.Context, res *resource, prefix string, rev int64, sink cacheSink) error {
	events, err := s.store.Watch(ctx, prefix, rev)
	if err != nil {
		return err
	}
	for ev := range events {
		obj, err := decodeShared(res, ev, false)
		if err != nil {
			s.log.Error("skipping undecodable object", "key", ev.Key, "err", err)
			continue
		}
		sink.apply(ev, obj)
	}
	if ctx.Err() != nil {
		return nil
	}
	return errors.New("watch closed")
}

// rbacSink feeds the RBAC authorizer's cache.
type rbacSink struct {
	s   *Server
	res *resource
}

func (r rbacSink) replace(objs map[string]runtime.Object, _ int64) {
	list := make([]runtime.Object, 0, len(objs))
	for _, obj := range objs {
		list = append(list, obj)
	}
	r.s.rbacCache.Replace(r.res.New(), list)
}

func (r rbacSink) apply(ev storage.Event, obj runtime.Object) {
	if ev.Type == storage.EventDelete {
		r.s.rbacCache.Remove(obj)
	} else {
		r.s.rbacCache.Put(obj)
	}
}

// lookupCaches are the objects admission looks up on nearly every write.
type lookupCaches struct {
	namespaces, serviceAccounts, priorityClasses *lookupCache
}

func (s *Server) newLookupCaches() lookupCaches {
	return lookupCaches{
		namespaces:      newLookupCache(s.byPath[corev1.SchemeGroupVersion.WithResource("namespaces")]),
		serviceAccounts: newLookupCache(s.byPath[corev1.SchemeGroupVersion.WithResource("serviceaccounts")]),
		priorityClasses: newLookupCache(s.byPath[schedulingv1.SchemeGroupVersion.WithResource("priorityclasses")]),
	}
}

// wrote tells the cache of res, if there is one, that this server wrote
// key at rev.
func (l lookupCaches) wrote(res *resource, key string, rev int64) {
	for _, c := range []*lookupCache{l.namespaces, l.serviceAccounts, l.priorityClasses} {
		if c.res == res {
			c.wrote(key, rev)
		}
	}
}

// lookupCache holds one resource's objects by storage key, as an informer's
// store does for kube-apiserver's admission plugins. Where it cannot answer
// for certain, lookups read storage instead: before its first list, for
// keys it has not seen (an object created a moment ago whose event is still
// on its way), and for keys this server wrote at a revision the cache has
// not reached yet (a namespace just marked Terminating, a ServiceAccount
// just deleted), as NamespaceLifecycle's live lookup after a delete does.
type lookupCache struct {
	res  *resource
	mu   sync.RWMutex
	objs map[string]runtime.Object
	// rev is the revision the cache has reached: events arrive in order.
	rev int64
	// ahead holds the revision of this server's latest write of a key
	// whose event the cache has not applied yet.
	ahead map[string]int64
}

func newLookupCache(res *resource) *lookupCache {
	return &lookupCache{res: res, objs: map[string]runtime.Object{}, ahead: map[string]int64{}}
}

func (c *lookupCache) replace(objs map[string]runtime.Object, rev int64) {
	c.mu.Lock()
	c.objs = objs
	c.rev = rev
	for k, r := range c.ahead {
		if r <= rev {
			delete(c.ahead, k)
		}
	}
	c.mu.Unlock()
}

func (c *lookupCache) apply(ev storage.Event, obj runtime.Object) {
	c.mu.Lock()
	if ev.Type == storage.EventDelete {
		delete(c.objs, ev.Key)
	} else {
		c.objs[ev.Key] = obj
	}
	if r, ok := c.ahead[ev.Key]; ok && r <= ev.Revision {
		delete(c.ahead, ev.Key)
	}
	c.rev = ev.Revision
	c.mu.Unlock()
}

func (c *lookupCache) wrote(key string, rev int64) {
	c.mu.Lock()
	// The watch may deliver the write's event before its writer gets here.
	if rev > c.rev && rev > c.ahead[key] {
		c.ahead[key] = rev
	}
	c.mu.Unlock()
}

// get returns the object named namespace/name, read-only, and whether it
// exists.
func (c *lookupCache) get(ctx context.Context, s *Server, namespace, name string) (obj runtime.Object, found bool, err error) {
	k := key(c.res, namespace, name)
	c.mu.RLock()
	obj, ok := c.objs[k]
	_, stale := c.ahead[k]
	c.mu.RUnlock()
	if ok && !stale {
		return obj, true, nil
	}
	obj, err = s.getFromStore(ctx, c.res, namespace, name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return obj, true, nil
}
