package namespace

import (
	"context"
	"io"
	"log/slog"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
)

// TestPodsGoFirst: a terminating namespace's pods are deleted before
// anything else, as upstream's ordered namespace deletion does; while a
// finalizer holds a pod, its ConfigMap stays and the namespace says why
// (NamespaceDeletionContentFailure); once the pod is gone the rest goes.
func TestPodsGoFirst(t *testing.T) {
	ctx := context.Background()
	now := metav1.Now()
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed", DeletionTimestamp: &now},
		Spec: v1.NamespaceSpec{Finalizers: []v1.FinalizerName{v1.FinalizerKubernetes}}, Status: v1.NamespaceStatus{Phase: v1.NamespaceTerminating}}
	client := fake.NewClientset(ns)
	resources := []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: []string{"list", "delete"}},
		{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: []string{"list", "delete"}},
	}}}
	scheme := runtime.NewScheme()
	metav1.AddMetaToScheme(scheme)
	partial := func(kind, name string, finalizers ...string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "doomed", Finalizers: finalizers}}
	}
	meta := metadatafake.NewSimpleMetadataClient(scheme, partial("Pod", "held", "example.com/hold"), partial("ConfigMap", "cfg"))
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(slog.New(slog.NewTextHandler(io.Discard, nil)), client, meta, factory.Core().V1().Namespaces())
	if err != nil {
		t.Fatal(err)
	}
	c.discovery = preferred{client.Discovery(), resources}
	factory.Core().V1().Namespaces().Informer().GetIndexer().Add(ns)
	pods := meta.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace("doomed")
	configMaps := meta.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("doomed")

	if err := c.sync(ctx, "doomed"); err != nil {
		t.Fatal(err)
	}
	if _, err := configMaps.Get(ctx, "cfg", metav1.GetOptions{}); err != nil {
		t.Fatalf("the ConfigMap went while a pod remained: %v", err)
	}
	got, _ := client.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
	failure := false
	for _, cond := range got.Status.Conditions {
		failure = failure || (cond.Type == v1.NamespaceDeletionContentFailure && cond.Status == v1.ConditionTrue)
	}
	if !failure {
		t.Errorf("conditions %+v, want NamespaceDeletionContentFailure", got.Status.Conditions)
	}

	// The fake deleted the pod regardless of its finalizer: as when the
	// finalizer is removed and the pod goes.
	if _, err := pods.Get(ctx, "held", metav1.GetOptions{}); err == nil {
		t.Fatal("the pod was not deleted")
	}
	if err := c.sync(ctx, "doomed"); err != nil {
		t.Fatal(err)
	}
	if _, err := configMaps.Get(ctx, "cfg", metav1.GetOptions{}); err == nil {
		t.Error("the ConfigMap stayed after the pods went")
	}
}

// preferred is a discovery that lists resources as the server's preferred
// namespaced ones.
type preferred struct {
	discovery.DiscoveryInterface
	lists []*metav1.APIResourceList
}

func (p preferred) ServerPreferredNamespacedResources() ([]*metav1.APIResourceList, error) {
	return p.lists, nil
}
