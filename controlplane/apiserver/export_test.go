package apiserver

import (
	"context"
	"math/big"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"

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

// ServiceRepair is what one repair of the Services' allocations did.
type ServiceRepair = serviceRepair

// RepairServices runs one repair of the Services' allocations as at now.
func RepairServices(s *Server, now time.Time) (ServiceRepair, error) {
	return s.services.repair(context.Background(), s.byPath[corev1.SchemeGroupVersion.WithResource("services")], now)
}

// SetNodePortBit marks (on) or clears a node port in the stored bitmap,
// as a crash between an allocation and its write would leave it.
func SetNodePortBit(s *Server, port int, on bool) error {
	a := s.services
	return a.updatePorts(context.Background(), func(bits *big.Int) error {
		v := uint(0)
		if on {
			v = 1
		}
		bits.SetBit(bits, port-a.portMin, v)
		return nil
	})
}

// SetClusterIPClaim creates (with a parent Service namespace/name) or,
// with an empty name, deletes the IPAddress object of ip, as a crash
// between an allocation and its write would leave it.
func SetClusterIPClaim(s *Server, ip, namespace, name string) error {
	if name == "" {
		s.services.releaseIP(context.Background(), ip, nil)
		return nil
	}
	svc := &corev1.Service{}
	svc.Namespace, svc.Name = namespace, name
	return s.services.claimIP(context.Background(), svc, ip)
}

// SetFlowControl makes ifc decide when s's requests run, as RunFlowControl
// makes upstream's controller do; nil turns flow control off.
func SetFlowControl(s *Server, ifc utilflowcontrol.Interface) {
	if ifc == nil {
		s.flow.Store(nil)
		return
	}
	s.flow.Store(&flowControl{ifc: ifc, dropped: utilflowcontrol.NewDroppedRequestsTracker()})
}
