package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/glassplane/glassplane/web/source"
)

// TestMirrorReads writes ConfigMaps while the store runs and reads them
// back from the mirror, exactly and without a request to the API; it
// reads an older revision, at which they changed since, from the API.
func TestMirrorReads(t *testing.T) {
	c := startCluster(t)
	c.namespace(t, "m")
	old := c.configMap(t, "m", "old", "x")
	reads := &apiReads{}
	s := c.runStore(t, Config{REST: reads.config(c.cfg)})
	ctx := c.ctx
	const prefix = "/registry/configmaps/m/"
	waitFor(t, ctx, "the mirror to hold configmaps", func() bool { return inMirror(s, "configmaps") })

	a1 := c.configMap(t, "m", "a", "one")
	c.configMap(t, "m", "b", "one")
	a2 := c.configMap(t, "m", "a", "two")
	if err := c.client.CoreV1().ConfigMaps("m").Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	last := c.configMap(t, "m", "c", "one")
	waitFor(t, ctx, "the mirror to see the writes", func() bool { return s.Revision() >= last })
	before := reads.count("configmaps")

	t.Run("List", func(t *testing.T) {
		l, err := s.List(ctx, prefix, source.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := []cmState{{"a", "two", a2}, {"c", "one", last}, {"old", "x", old}}
		if diff := cmp.Diff(want, cmStates(t, l.Items)); diff != "" {
			t.Errorf("List (-want +got):\n%s", diff)
		}
		if l.Revision < last {
			t.Errorf("Revision = %d, before the last write (%d)", l.Revision, last)
		}
		first, err := s.List(ctx, prefix, source.ListOptions{Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if got := keysOf(first.Items); !slices.Equal(got, []string{prefix + "a", prefix + "c"}) {
			t.Errorf("List with Limit 2 = %v", got)
		}
	})
	t.Run("Get", func(t *testing.T) {
		kv, err := s.Get(ctx, prefix+"a")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]cmState{{"a", "two", a2}}, cmStates(t, []source.KeyValue{*kv})); diff != "" {
			t.Errorf("Get (-want +got):\n%s", diff)
		}
		_, err = s.Get(ctx, prefix+"b")
		isErr(t, "get of a deleted key", err, source.ErrNotFound)
	})
	t.Run("Newest", func(t *testing.T) {
		for _, tc := range []struct {
			n    int
			rev  int64
			want []string
		}{
			{n: 2, want: []string{"c", "a"}},
			{n: 5, want: []string{"c", "a", "old"}},
			// c was written after a2: left out at a2.
			{n: 5, rev: a2, want: []string{"a", "old"}},
		} {
			items, ok, err := s.Newest(ctx, prefix, tc.n, tc.rev)
			if err != nil || !ok {
				t.Fatalf("Newest(%d, %d): ok=%v err=%v", tc.n, tc.rev, ok, err)
			}
			var got []string
			for _, kv := range items {
				got = append(got, strings.TrimPrefix(kv.Key, prefix))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Newest(%d, %d) = %v, want %v", tc.n, tc.rev, got, tc.want)
			}
		}
	})
	if n := reads.count("configmaps"); n != before {
		t.Errorf("%d reads of configmaps went to the API", n-before)
	}

	t.Run("SameAsAPI", func(t *testing.T) {
		l, err := s.List(ctx, prefix, source.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		api, err := s.listAPI(ctx, s.resources().under(prefix), prefix, source.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(decoded(t, api.Items), decoded(t, l.Items)); diff != "" {
			t.Errorf("the mirror's objects differ from the API's (-api +mirror):\n%s", diff)
		}
	})

	t.Run("ListOld", func(t *testing.T) {
		// ConfigMaps changed after a1: the mirror cannot say what they
		// were, the API can.
		before := reads.count("configmaps")
		l, err := s.List(ctx, prefix, source.ListOptions{Revision: a1})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]cmState{{"a", "one", a1}, {"old", "x", old}}, cmStates(t, l.Items)); diff != "" {
			t.Errorf("List at %d (-want +got):\n%s", a1, diff)
		}
		if reads.count("configmaps") == before {
			t.Error("the list at an older revision did not go to the API")
		}
	})

	t.Run("ResourceGone", func(t *testing.T) {
		c.createCRD(t, widgetCRD("widgets", "Widget"))
		waitFor(t, ctx, "the mirror to hold widgets", func() bool { return inMirror(s, "example.com/widgets") })
		if err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, "widgets.example.com", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "the mirror to drop widgets", func() bool {
			s.mirror.mu.RLock()
			defer s.mirror.mu.RUnlock()
			_, ok := s.mirror.parts["example.com/widgets"]
			return !ok
		})
	})
}

// TestMirrorListThenWatch lists from the mirror at revision R and
// watches from R: the watch sends exactly the changes after R.
func TestMirrorListThenWatch(t *testing.T) {
	c := startCluster(t)
	c.namespace(t, "lw")
	c.configMap(t, "lw", "a", "one")
	c.configMap(t, "lw", "b", "one")
	reads := &apiReads{}
	s := c.runStore(t, Config{REST: reads.config(c.cfg)})
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	const prefix = "/registry/configmaps/lw/"
	waitFor(t, ctx, "the mirror to hold configmaps", func() bool { return inMirror(s, "configmaps") })
	last := c.configMap(t, "lw", "c", "one")
	waitFor(t, ctx, "the mirror to see the write", func() bool { return s.Revision() >= last })
	before := reads.count("configmaps")

	l, err := s.List(ctx, prefix, source.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := l.Revision
	// The mirror's list at R is etcd's at R.
	etcdAtR, _ := c.etcdKeys(t, prefix, r)
	got := map[string]int64{}
	for _, kv := range l.Items {
		got[kv.Key] = kv.ModRevision
	}
	if diff := cmp.Diff(etcdAtR, got); diff != "" {
		t.Errorf("the list at %d differs from etcd's (-etcd +list):\n%s", r, diff)
	}
	at, err := s.List(ctx, prefix, source.ListOptions{Revision: r})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(l, at); diff != "" {
		t.Errorf("the list at %d differs from the list now (-now +at):\n%s", r, diff)
	}
	if n := reads.count("configmaps"); n != before {
		t.Errorf("%d lists went to the API", n-before)
	}

	events, err := s.Watch(ctx, prefix, r)
	if err != nil {
		t.Fatal(err)
	}
	a2 := c.configMap(t, "lw", "a", "two")
	d := c.configMap(t, "lw", "d", "one")
	if err := c.client.CoreV1().ConfigMaps("lw").Delete(ctx, "c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		typ     source.EventType
		key     string
		created bool
		rev     int64
	}{{source.EventPut, "a", false, a2}, {source.EventPut, "d", true, d}, {source.EventDelete, "c", false, 0}}
	for i, w := range want {
		ev := next(t, events, func(source.Event) bool { return true })
		if ev.Type != w.typ || ev.Key != prefix+w.key || ev.Created != w.created || (w.rev != 0 && ev.Revision != w.rev) {
			t.Errorf("event %d: %s %q created=%v at %d, want %s %q created=%v at %d", i, ev.Type, ev.Key, ev.Created, ev.Revision, w.typ, prefix+w.key, w.created, w.rev)
		}
	}
	select {
	case ev := <-events:
		t.Errorf("an extra event: %s %q at %d", ev.Type, ev.Key, ev.Revision)
	case <-time.After(300 * time.Millisecond):
	}
}

// TestMirrorUnreadable runs the store as an identity that may get but not
// list ConfigMaps: they are not mirrored, and read through the API; a
// list of every resource is answered from the mirror, without them, as
// the API path answers it.
func TestMirrorUnreadable(t *testing.T) {
	c := startCluster(t)
	c.namespace(t, "u")
	c.configMap(t, "u", "a", "one")
	ctx := c.ctx
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "mirror-reader"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"namespaces", "pods"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}},
		},
	}
	if _, err := c.client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "mirror-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "reader"}},
	}
	if _, err := c.client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := c.ca.RESTConfig(c.url, "reader")
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	reads := &apiReads{}
	s := c.runStore(t, Config{REST: reads.config(cfg)})
	waitFor(t, ctx, "every resource to be mirrored or refused", func() bool {
		s.mirror.mu.RLock()
		defer s.mirror.mu.RUnlock()
		for _, p := range s.mirror.parts {
			if p.state == unmirrored {
				return false
			}
		}
		return len(s.mirror.parts) > 0
	})
	if !inMirror(s, "pods") || inMirror(s, "configmaps") {
		t.Fatalf("mirrored pods %v, configmaps %v; want pods only", inMirror(s, "pods"), inMirror(s, "configmaps"))
	}

	before := reads.count("configmaps")
	kv, err := s.Get(ctx, "/registry/configmaps/u/a")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(kv.Value), `"v":"one"`) {
		t.Errorf("Get = %s", kv.Value)
	}
	if reads.count("configmaps") == before {
		t.Error("the get of a ConfigMap did not go to the API")
	}
	_, err = s.List(ctx, "/registry/configmaps/u/", source.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("List of configmaps: %v, want the API's Forbidden", err)
	}

	before = reads.total()
	all, err := s.List(ctx, source.Root, source.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := reads.total(); n != before {
		t.Errorf("the list of every resource sent %d requests to the API", n-before)
	}
	keys := keysOf(all.Items)
	if !slices.Contains(keys, "/registry/namespaces/u") || slices.Contains(keys, "/registry/configmaps/u/a") {
		t.Errorf("List of every resource = %v, want namespaces and no configmaps", keys)
	}
	api, err := s.listAPI(ctx, s.resources().under(source.Root), source.Root, source.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(keysOf(api.Items), keys); diff != "" {
		t.Errorf("the mirror's list of every resource differs from the API's (-api +mirror):\n%s", diff)
	}
}

// TestMirrorRelist drops a watch's changes (the mirror holds a ConfigMap
// that was never written and an old value of another) and compacts
// etcd: the watch, reopened from a compacted revision, lists the
// resource again, and the backlog sends the differences.
func TestMirrorRelist(t *testing.T) {
	shortenWatches(t, 2*time.Second)
	c := startCluster(t)
	c.namespace(t, "rl")
	a := c.configMap(t, "rl", "a", "one")
	s := c.runStore(t, Config{})
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	const prefix = "/registry/configmaps/rl/"
	waitFor(t, ctx, "the mirror to hold configmaps", func() bool { return inMirror(s, "configmaps") })
	events, err := s.Watch(ctx, prefix, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.mirror.mu.Lock()
	p := s.mirror.parts["configmaps"]
	p.objects[prefix+"ghost"] = source.KeyValue{Key: prefix + "ghost", Value: []byte(`{}`), ModRevision: 1}
	p.objects[prefix+"a"] = source.KeyValue{Key: prefix + "a", Value: []byte(`{}`), ModRevision: 1}
	s.mirror.mu.Unlock()

	// A write of another resource, compacted away with the ConfigMaps'
	// watch's revision.
	secret, err := c.client.CoreV1().Secrets("rl").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "later"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	later := revisionOf(t, secret.ResourceVersion)
	waitFor(t, ctx, "the store to see the secret", func() bool { return s.Revision() >= later })
	if err := c.storage.Compact(ctx, later); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 2 {
		ev := next(t, events, func(source.Event) bool { return true })
		got = append(got, fmt.Sprintf("%s %s created=%v", ev.Type, strings.TrimPrefix(ev.Key, prefix), ev.Created))
	}
	if diff := cmp.Diff([]string{"PUT a created=false", "DELETE ghost created=false"}, got); diff != "" {
		t.Errorf("the relist's changes (-want +got):\n%s", diff)
	}
	waitFor(t, ctx, "the mirror to hold configmaps again", func() bool { return inMirror(s, "configmaps") })
	l, err := s.List(ctx, prefix, source.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]cmState{{"a", "one", a}}, cmStates(t, l.Items)); diff != "" {
		t.Errorf("List after the relist (-want +got):\n%s", diff)
	}
}

// TestMirrorLoad compares a list with a part of the mirror: the backlog
// gets a put of each object new or changed and a delete of each gone.
func TestMirrorLoad(t *testing.T) {
	f := newFeed(100)
	m := newMirror(f)
	res := &mapped{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true, Storage: "configmaps"}
	p := m.open(res)
	f.begin(10)
	kv := func(name string, rev int64) source.KeyValue {
		return source.KeyValue{Key: "/registry/configmaps/ns/" + name, Value: []byte(name), ModRevision: rev}
	}
	if changes := m.load(p, []source.KeyValue{kv("a", 5), kv("b", 6), kv("same", 7)}, 10, false); len(changes) != 0 {
		t.Errorf("the first load sent %d changes", len(changes))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, ok := f.subscribe(ctx, "/registry/", 10)
	if !ok {
		t.Fatal("the backlog does not cover its start")
	}
	m.relisting(p)
	m.load(p, []source.KeyValue{kv("a", 12), kv("c", 11), kv("same", 7)}, 15, true)
	var got []string
	for range 3 {
		ev := next(t, events, func(source.Event) bool { return true })
		got = append(got, fmt.Sprintf("%s %s %s created=%v at %d", ev.Type, strings.TrimPrefix(ev.Key, "/registry/configmaps/ns/"), ev.Value, ev.Created, ev.Revision))
	}
	want := []string{"PUT a a created=false at 15", "DELETE b b created=false at 15", "PUT c c created=true at 15"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	l, ok := m.list([]target{{res: res}}, "/registry/configmaps/", source.ListOptions{})
	if !ok {
		t.Fatal("the mirror did not answer")
	}
	if l.Revision != 15 || !slices.Equal(keysOf(l.Items), []string{"/registry/configmaps/ns/a", "/registry/configmaps/ns/c", "/registry/configmaps/ns/same"}) {
		t.Errorf("list at %d: %v", l.Revision, keysOf(l.Items))
	}
	if _, ok := m.list([]target{{res: res}}, "/registry/configmaps/", source.ListOptions{Revision: 12}); ok {
		t.Error("the mirror answered at a revision before its list")
	}
}

// BenchmarkStoreListPods lists 1,000 pods from the mirror and, as the
// store did before it had one, from the API: now and at an exact
// revision (the overview's second list).
func BenchmarkStoreListPods(b *testing.B) {
	c := startCluster(b)
	const pods = 1000
	c.namespace(b, "bench")
	var last int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	work := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range work {
				got, err := c.client.CoreV1().Pods("bench").Create(c.ctx, benchPod(i), metav1.CreateOptions{})
				if err != nil {
					b.Error(err)
					continue
				}
				rv, _ := parseRevision(got.ResourceVersion)
				mu.Lock()
				last = max(last, rv)
				mu.Unlock()
			}
		})
	}
	for i := range pods {
		work <- i
	}
	close(work)
	wg.Wait()
	s, err := New(Config{REST: c.cfg})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	go s.Run(ctx)
	<-s.Ready()
	for !inMirror(s, "pods") || s.Revision() < last {
		time.Sleep(10 * time.Millisecond)
	}
	const prefix = "/registry/pods/"
	targets := s.resources().under(prefix)
	rev := s.Revision()
	for _, bc := range []struct {
		name string
		list func() (*source.ListResult, error)
	}{
		{"mirror", func() (*source.ListResult, error) { return s.List(ctx, prefix, source.ListOptions{}) }},
		{"mirror-at-revision", func() (*source.ListResult, error) { return s.List(ctx, prefix, source.ListOptions{Revision: rev}) }},
		{"api", func() (*source.ListResult, error) { return s.listAPI(ctx, targets, prefix, source.ListOptions{}) }},
		{"api-at-revision", func() (*source.ListResult, error) {
			return s.listAPI(ctx, targets, prefix, source.ListOptions{Revision: rev})
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				l, err := bc.list()
				if err != nil {
					b.Fatal(err)
				}
				if len(l.Items) != pods {
					b.Fatalf("listed %d pods, want %d", len(l.Items), pods)
				}
			}
		})
	}
}

// benchPod is a pending pod of about the size of a real one's spec.
func benchPod(i int) *corev1.Pod {
	container := func(name string) corev1.Container {
		return corev1.Container{
			Name: name, Image: "registry.example.com/team/" + name + ":1.2.3",
			Env:   []corev1.EnvVar{{Name: "MODE", Value: "production"}, {Name: "REPLICA", Value: fmt.Sprint(i)}},
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi"),
			}},
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:   fmt.Sprintf("web-%04d", i),
			Labels: map[string]string{"app": "web", "tier": "frontend", "shard": fmt.Sprint(i % 10)},
		},
		Spec: corev1.PodSpec{
			NodeName:   fmt.Sprintf("node-%02d", i%100),
			Containers: []corev1.Container{container("app"), container("sidecar")},
		},
	}
}

// inMirror reports whether the store's mirror holds the resource stored
// under storage.
func inMirror(s *Store, storage string) bool {
	s.mirror.mu.RLock()
	defer s.mirror.mu.RUnlock()
	p := s.mirror.parts[storage]
	return p != nil && p.state == synced
}

// apiReads counts a client's requests that read objects (gets and lists,
// not watches) by resource.
type apiReads struct {
	mu    sync.Mutex // guards paths
	paths []string
}

// config is cfg with its requests counted.
func (r *apiReads) config(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodGet && req.URL.Query().Get("watch") != "true" {
				r.mu.Lock()
				r.paths = append(r.paths, req.URL.Path)
				r.mu.Unlock()
			}
			return rt.RoundTrip(req)
		})
	}
	return cfg
}

// count is how many reads named resource in their path.
func (r *apiReads) count(resource string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, p := range r.paths {
		if slices.Contains(strings.Split(p, "/"), resource) {
			n++
		}
	}
	return n
}

// total is how many reads of objects there were (discovery's are not).
func (r *apiReads) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, p := range r.paths {
		if parts := strings.Split(strings.Trim(p, "/"), "/"); len(parts) > 3 || (len(parts) == 3 && parts[0] == "api") {
			n++
		}
	}
	return n
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// cmState is a ConfigMap as a test expects it: name, its data's v and
// its revision.
type cmState struct {
	Name, V string
	Rev     int64
}

func cmStates(t *testing.T, kvs []source.KeyValue) []cmState {
	t.Helper()
	var out []cmState
	for _, kv := range kvs {
		var cm corev1.ConfigMap
		if err := json.Unmarshal(kv.Value, &cm); err != nil {
			t.Fatal(err)
		}
		out = append(out, cmState{Name: cm.Name, V: cm.Data["v"], Rev: kv.ModRevision})
	}
	return out
}

// decoded is each value as a map, by key.
func decoded(t *testing.T, kvs []source.KeyValue) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, kv := range kvs {
		var obj unstructured.Unstructured
		if err := obj.UnmarshalJSON(kv.Value); err != nil {
			t.Fatal(err)
		}
		out[kv.Key] = obj.Object
	}
	return out
}
