package apiserver

import (
	"context"
	"time"

	"github.com/glassplane/glassplane/controlplane/storage"
)

// SetBookmarkInterval changes how often watches send bookmarks and returns
// a function that restores the default.
func SetBookmarkInterval(d time.Duration) (restore func()) {
	old := bookmarkInterval.Swap(int64(d))
	return func() { bookmarkInterval.Store(old) }
}

// CachedForLookup reports whether the server's lookup cache for resource
// ("namespaces", "serviceaccounts", "priorityclasses") holds namespace/name
// and would answer from memory.
func CachedForLookup(s *Server, resource, namespace, name string) bool {
	for _, c := range []*lookupCache{s.lookups.namespaces, s.lookups.serviceAccounts, s.lookups.priorityClasses} {
		if c.res.Resource != resource {
			continue
		}
		k := key(c.res, namespace, name)
		c.mu.RLock()
		defer c.mu.RUnlock()
		_, ok := c.objs[k]
		_, stale := c.ahead[k]
		return ok && !stale
	}
	return false
}

// SetRecent replaces where s's updates find their first guess of the
// stored object (the storage watch's copy) and returns a function that
// restores it.
func SetRecent(s *Server, f func(key string) (*storage.KeyValue, bool)) (restore func()) {
	old := s.recent
	s.recent = f
	return func() { s.recent = old }
}

// NodeGraphIndexes reports whether the Node authorizer's graph, without
// storage, relates nodeName to namespace/name of resource.
func NodeGraphIndexes(s *Server, nodeName, namespace, resource, name string) bool {
	s.nodeGraph.mu.RLock()
	defer s.nodeGraph.mu.RUnlock()
	for _, gp := range s.nodeGraph.onNode[nodeName] {
		if gp.refersTo(namespace, resource, name) {
			return true
		}
	}
	return false
}

// NodeGraphInStore answers the Node authorizer's question from storage
// alone.
func NodeGraphInStore(ctx context.Context, s *Server, nodeName, namespace, resource, name string) (bool, error) {
	return s.nodeGraph.relatedInStore(ctx, nodeName, namespace, resource, name)
}
