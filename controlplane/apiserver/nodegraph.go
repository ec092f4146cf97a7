package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/glassplane/glassplane/controlplane/apiserver/auth/node"
	"github.com/glassplane/glassplane/controlplane/storage"
)

// nodeGraph is the Node authorizer's graph: for each node, the pods bound
// to it and the secrets, configmaps, persistent volume claims and service
// accounts each uses, kept from the storage watch as kube-apiserver keeps
// its graph from informers. A node agent reads such an object for every
// pod it starts, so the answer must not cost a read of every pod.
//
// The index may lag storage by the events still on their way: a pod bound
// a moment ago may be missing. A relationship the index does not show is
// therefore looked up in storage before the request is refused, so a node
// agent that saw its pod's binding is never refused a secret the pod uses.
// A pod deleted a moment ago may still grant its objects until its event
// arrives, as in Kubernetes.
type nodeGraph struct {
	s      *Server
	mu     sync.RWMutex
	pods   map[string]*graphPod            // by storage key
	onNode map[string]map[string]*graphPod // node name → storage key → pod
}

// graphPod is what the graph keeps of a bound pod.
type graphPod struct {
	node, namespace string
	// uses holds, per resource of node.RelatedResources, the names the pod
	// refers to.
	uses map[string][]string
}

var _ node.Graph = (*nodeGraph)(nil)

func newNodeGraph(s *Server) *nodeGraph {
	return &nodeGraph{s: s, pods: map[string]*graphPod{}, onNode: map[string]map[string]*graphPod{}}
}

// newGraphPod returns what the graph keeps of pod, or nil for a pod not
// bound to a node.
func newGraphPod(pod *corev1.Pod) *graphPod {
	if pod.Spec.NodeName == "" {
		return nil
	}
	gp := &graphPod{node: pod.Spec.NodeName, namespace: pod.Namespace, uses: map[string][]string{}}
	for _, r := range node.RelatedResources {
		if names := node.References(pod, r); len(names) > 0 {
			gp.uses[r] = names
		}
	}
	return gp
}

func (gp *graphPod) refersTo(namespace, resource, name string) bool {
	return gp.namespace == namespace && slices.Contains(gp.uses[resource], name)
}

func (g *nodeGraph) replace(objs map[string]runtime.Object, _ int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pods = map[string]*graphPod{}
	g.onNode = map[string]map[string]*graphPod{}
	for k, obj := range objs {
		g.putLocked(k, obj)
	}
}

func (g *nodeGraph) apply(ev storage.Event, obj runtime.Object) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.removeLocked(ev.Key)
	if ev.Type != storage.EventDelete {
		g.putLocked(ev.Key, obj)
	}
}

func (g *nodeGraph) putLocked(key string, obj runtime.Object) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	gp := newGraphPod(pod)
	if gp == nil {
		return
	}
	g.pods[key] = gp
	if g.onNode[gp.node] == nil {
		g.onNode[gp.node] = map[string]*graphPod{}
	}
	g.onNode[gp.node][key] = gp
}

func (g *nodeGraph) removeLocked(key string) {
	gp, ok := g.pods[key]
	if !ok {
		return
	}
	delete(g.pods, key)
	delete(g.onNode[gp.node], key)
	if len(g.onNode[gp.node]) == 0 {
		delete(g.onNode, gp.node)
	}
}

// Related implements node.Graph.
func (g *nodeGraph) Related(ctx context.Context, nodeName, namespace, resource, name string) (bool, error) {
	g.mu.RLock()
	found := false
	for _, gp := range g.onNode[nodeName] {
		if gp.refersTo(namespace, resource, name) {
			found = true
			break
		}
	}
	g.mu.RUnlock()
	if found {
		return true, nil
	}
	return g.relatedInStore(ctx, nodeName, namespace, resource, name)
}

// relatedInStore answers from storage: the pods of the namespace, of which
// only those whose stored JSON names the node are decoded.
func (g *nodeGraph) relatedInStore(ctx context.Context, nodeName, namespace, resource, name string) (bool, error) {
	res := g.s.podsRes
	list, err := g.s.store.List(ctx, storage.Prefix(res.StorageResource, namespace), storage.ListOptions{})
	if err != nil {
		return false, err
	}
	quoted, err := json.Marshal(nodeName)
	if err != nil {
		return false, err
	}
	// Stored pods are encoding/json's output, which writes the field so.
	needle := append([]byte(`"nodeName":`), quoted...)
	for _, kv := range list.Items {
		if !bytes.Contains(kv.Value, needle) {
			continue
		}
		obj, err := decodeStored(res, kv.Value, kv.ModRevision)
		if err != nil {
			return false, err
		}
		if gp := newGraphPod(obj.(*corev1.Pod)); gp != nil && gp.node == nodeName && gp.refersTo(namespace, resource, name) {
			return true, nil
		}
	}
	return false, nil
}
