package apiserver

import (
	"context"
	"errors"
	"sync"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/glassplane/glassplane/controlplane/storage"
)

// rbacResyncDelay is how long the RBAC cache waits before listing again
// after its watch failed.
const rbacResyncDelay = time.Second

// Run keeps the RBAC cache current from the storage watch until ctx ends, as
// kube-apiserver's RBAC informers do; requests wait for its first full list
// before they are authorized. Without RBAC it only waits for ctx.
func (s *Server) Run(ctx context.Context) error {
	if s.rbacCache == nil {
		<-ctx.Done()
		return nil
	}
	kinds := []string{"roles", "rolebindings", "clusterroles", "clusterrolebindings"}
	var synced sync.WaitGroup
	synced.Add(len(kinds))
	var wg sync.WaitGroup
	for _, resource := range kinds {
		res := s.byPath[rbacv1.SchemeGroupVersion.WithResource(resource)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.feedRBACCache(ctx, res, sync.OnceFunc(synced.Done))
		}()
	}
	go func() {
		synced.Wait()
		s.rbacCache.MarkReady()
		s.log.Info("RBAC cache synced")
	}()
	wg.Wait()
	return nil
}

// feedRBACCache lists one RBAC resource into the cache, then applies its
// watch events; it lists again whenever the watch ends, until ctx ends.
func (s *Server) feedRBACCache(ctx context.Context, res *resource, synced func()) {
	prefix := storage.Prefix(res.StorageResource, "")
	for ctx.Err() == nil {
		rev, err := s.relistRBAC(ctx, res, prefix)
		if err == nil {
			synced()
			err = s.watchRBAC(ctx, res, prefix, rev)
		}
		if err != nil && ctx.Err() == nil {
			s.log.Warn("RBAC cache watch failed; listing again", "resource", res.Resource, "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(rbacResyncDelay):
		}
	}
}

func (s *Server) relistRBAC(ctx context.Context, res *resource, prefix string) (int64, error) {
	list, err := s.store.List(ctx, prefix, storage.ListOptions{})
	if err != nil {
		return 0, err
	}
	objs := make([]runtime.Object, 0, len(list.Items))
	for _, kv := range list.Items {
		obj, err := decodeStored(res, kv.Value, kv.ModRevision)
		if err != nil {
			s.log.Error("skipping undecodable RBAC object", "key", kv.Key, "err", err)
			continue
		}
		objs = append(objs, obj)
	}
	s.rbacCache.Replace(res.New(), objs)
	return list.Revision, nil
}

// watchRBAC applies events after rev until the watch closes.
func (s *Server) watchRBAC(ctx context.Context, res *resource, prefix string, rev int64) error {
	events, err := s.store.Watch(ctx, prefix, rev)
	if err != nil {
		return err
	}
	for ev := range events {
		obj, err := decodeStored(res, ev.Value, ev.Revision)
		if err != nil {
			s.log.Error("skipping undecodable RBAC object", "key", ev.Key, "err", err)
			continue
		}
		if ev.Type == storage.EventDelete {
			s.rbacCache.Remove(obj)
		} else {
			s.rbacCache.Put(obj)
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return errors.New("watch closed")
}
