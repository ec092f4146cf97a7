package kube

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/glassplane/glassplane/web/source"
)

// TestGetList reads objects of built-in and custom resources by the keys
// the API server's storage wrote them under.
func TestGetList(t *testing.T) {
	c := startCluster(t)
	c.namespace(t, "ns1")
	c.createCRD(t, widgetCRD("widgets", "Widget"))
	ctx := c.ctx
	var podRevs []int64
	for _, name := range []string{"p2", "p1"} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}
		got, err := c.client.CoreV1().Pods("ns1").Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		podRevs = append(podRevs, revisionOf(t, got.ResourceVersion))
	}
	node, err := c.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	widget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w1"}, "spec": map[string]any{"size": int64(3)},
	}}
	widgets := c.dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).Namespace("ns1")
	w, err := widgets.Create(ctx, widget, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := c.runStore(t, Config{})

	etcdKeys, _ := c.etcdKeys(t, source.Root, 0)
	t.Run("Get", func(t *testing.T) {
		for _, tc := range []struct {
			key, kind, name string
			rev             int64
		}{
			{key: "/registry/pods/ns1/p1", kind: "Pod", name: "p1", rev: podRevs[1]},
			{key: "/registry/minions/n1", kind: "Node", name: "n1", rev: revisionOf(t, node.ResourceVersion)},
			{key: "/registry/example.com/widgets/ns1/w1", kind: "Widget", name: "w1", rev: revisionOf(t, w.GetResourceVersion())},
			{key: "/registry/services/specs/default/kubernetes", kind: "Service", name: "kubernetes"},
			{key: "/registry/namespaces/ns1", kind: "Namespace", name: "ns1"},
			{key: "/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com", kind: "CustomResourceDefinition", name: "widgets.example.com"},
		} {
			t.Run(tc.key, func(t *testing.T) {
				if _, ok := etcdKeys[tc.key]; !ok {
					t.Fatalf("the API server's storage has no key %q", tc.key)
				}
				kv, err := s.Get(ctx, tc.key)
				if err != nil {
					t.Fatal(err)
				}
				var obj metav1.PartialObjectMetadata
				if err := json.Unmarshal(kv.Value, &obj); err != nil {
					t.Fatal(err)
				}
				if kv.Key != tc.key || obj.Kind != tc.kind || obj.Name != tc.name {
					t.Errorf("got %s %s %q, want %s %s %q", kv.Key, obj.Kind, obj.Name, tc.key, tc.kind, tc.name)
				}
				if want := etcdKeys[tc.key]; kv.ModRevision != want || (tc.rev != 0 && kv.ModRevision != tc.rev) {
					t.Errorf("ModRevision = %d, want %d (etcd's)", kv.ModRevision, want)
				}
			})
		}
	})
	t.Run("GetMissing", func(t *testing.T) {
		for _, key := range []string{"/registry/pods/ns1/nope", "/registry/nothings/a/b", "/registry/ranges/serviceips"} {
			_, err := s.Get(ctx, key)
			isErr(t, key, err, source.ErrNotFound)
		}
	})
	t.Run("ListNamespace", func(t *testing.T) {
		l, err := s.List(ctx, "/registry/pods/ns1/", source.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := keysOf(l.Items), []string{"/registry/pods/ns1/p1", "/registry/pods/ns1/p2"}; !slices.Equal(got, want) {
			t.Errorf("keys = %v, want %v", got, want)
		}
		if l.Revision < podRevs[1] {
			t.Errorf("Revision = %d, older than the pods (%d)", l.Revision, podRevs[1])
		}
		l, err = s.List(ctx, "/registry/pods/ns1/p2", source.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := keysOf(l.Items); !slices.Equal(got, []string{"/registry/pods/ns1/p2"}) {
			t.Errorf("keys under a name prefix = %v", got)
		}
	})
	t.Run("ListRoot", func(t *testing.T) {
		l, err := s.List(ctx, source.Root, source.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		keys := keysOf(l.Items)
		if !slices.IsSorted(keys) {
			t.Error("the keys are not in order")
		}
		// Every key listed is one the storage wrote, with its revision;
		// every key the storage wrote is listed unless it is not an
		// object of a served resource.
		now, _ := c.etcdKeys(t, source.Root, 0)
		for _, kv := range l.Items {
			rev, ok := now[kv.Key]
			if !ok {
				t.Errorf("listed %q, which is not in etcd", kv.Key)
			} else if rev != kv.ModRevision && !strings.HasPrefix(kv.Key, "/registry/leases/") && !strings.HasPrefix(kv.Key, "/registry/events/") {
				t.Errorf("%q: ModRevision %d, etcd says %d", kv.Key, kv.ModRevision, rev)
			}
		}
		var unlisted []string
		for key := range now {
			if !slices.Contains(keys, key) {
				unlisted = append(unlisted, key)
				if _, _, _, ok := s.resources().parseKey(key); ok {
					t.Errorf("etcd key %q of a served resource was not listed", key)
				}
			}
		}
		slices.Sort(unlisted)
		t.Logf("%d keys listed; in etcd but not objects of a served resource: %v", len(keys), unlisted)

		first, err := s.List(ctx, source.Root, source.ListOptions{Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if got := keysOf(first.Items); !slices.Equal(got, keys[:3]) {
			t.Errorf("List with Limit 3 = %v, want %v", got, keys[:3])
		}
	})
	t.Run("ListServices", func(t *testing.T) {
		l, err := s.List(ctx, "/registry/services/", source.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := keysOf(l.Items)
		for _, want := range []string{"/registry/services/endpoints/default/kubernetes", "/registry/services/specs/default/kubernetes"} {
			if !slices.Contains(got, want) {
				t.Errorf("keys under /registry/services/ = %v, want %q among them", got, want)
			}
		}
	})
}

// TestListAtRevision reads a namespace's ConfigMaps as they were, and
// words the API server's refusals of a revision as source's errors.
func TestListAtRevision(t *testing.T) {
	c := startCluster(t)
	c.namespace(t, "hist")
	r1 := c.configMap(t, "hist", "a", "one")
	r2 := c.configMap(t, "hist", "a", "two")
	s := c.runStore(t, Config{})
	ctx := c.ctx
	prefix := "/registry/configmaps/hist/"

	for _, tc := range []struct {
		rev  int64
		want string
	}{{r1, "one"}, {r2, "two"}, {0, "two"}} {
		l, err := s.List(ctx, prefix, source.ListOptions{Revision: tc.rev})
		if err != nil {
			t.Fatalf("list at %d: %v", tc.rev, err)
		}
		if len(l.Items) != 1 || !strings.Contains(string(l.Items[0].Value), `"v":"`+tc.want+`"`) {
			t.Errorf("list at %d: %v, want a with v=%s", tc.rev, keysOf(l.Items), tc.want)
		}
		if tc.rev != 0 && l.Revision != tc.rev {
			t.Errorf("list at %d answered revision %d", tc.rev, l.Revision)
		}
	}

	_, err := s.List(ctx, prefix, source.ListOptions{Revision: s.Revision() + 1000})
	isErr(t, "list at a future revision", err, source.ErrFutureRevision)

	if _, err := c.etcd.Client().Compact(ctx, r2, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	_, err = s.List(ctx, prefix, source.ListOptions{Revision: r1})
	isErr(t, "list at a compacted revision", err, source.ErrCompacted)
	_, err = s.Watch(ctx, prefix, r1)
	isErr(t, "watch from a compacted revision", err, source.ErrCompacted)

	e, err := NewEtcdAPI(c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Keys(ctx, prefix, r1)
	isErr(t, "etcdkeys at a compacted revision", err, source.ErrCompacted)
	_, err = e.Keys(ctx, prefix, s.Revision()+1000)
	isErr(t, "etcdkeys at a future revision", err, source.ErrFutureRevision)
}

func keysOf(kvs []source.KeyValue) []string {
	out := make([]string, len(kvs))
	for i, kv := range kvs {
		out[i] = kv.Key
	}
	return out
}

// waitFor polls cond until it holds or the test's deadline passes.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	for !cond() {
		if !sleep(ctx, 20e6) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
