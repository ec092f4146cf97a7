package apiserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/glassplane/glassplane/controlplane/apiserver/audit"
)

func TestInformerSeesCreateUpdateDeleteInOrder(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	var mu sync.Mutex
	var seen []string
	record := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, s)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(shared.client, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods().Informer()
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { record("add " + obj.(*corev1.Pod).Name) },
		UpdateFunc: func(_, obj any) {
			p := obj.(*corev1.Pod)
			record("update " + p.Name + " " + p.Labels["v"])
		},
		DeleteFunc: func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				record("delete " + p.Name)
			}
		},
	})
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	pods := shared.client.CoreV1().Pods(ns)
	p, err := pods.Create(ctx, testPod("a"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Labels["v"] = "2"
	if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	watchList := false
	for _, rec := range shared.audit.Find(func(ev *audit.Event) bool {
		return ev.Verb == "watch" && ev.ObjectRef != nil && ev.ObjectRef.Namespace == ns
	}) {
		watchList = watchList || strings.Contains(rec.Event.RequestURI, "sendInitialEvents=true")
	}
	if !watchList {
		t.Errorf("the informer did not use a sendInitialEvents watch")
	}
	want := []string{"add a", "update a 2", "delete a"}
	eventually(t, "informer events", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) >= len(want)
	})
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Errorf("informer saw %v, want %v", seen, want)
	}
}

func TestWatchResumesFromResourceVersion(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	pods := shared.client.CoreV1().Pods(ns)
	first, err := pods.Create(ctx, testPod("one"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"two", "three"} {
		if _, err := pods.Create(ctx, testPod(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, want := range []string{"two", "three"} {
		ev := nextEvent(t, w)
		if ev.Type != watch.Added || ev.Object.(*corev1.Pod).Name != want {
			t.Fatalf("event %s %v, want ADDED %s", ev.Type, ev.Object, want)
		}
	}
	if err := pods.Delete(ctx, "two", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, w)
	if ev.Type != watch.Deleted || ev.Object.(*corev1.Pod).Name != "two" {
		t.Fatalf("event %s, want DELETED two", ev.Type)
	}
}

func TestWatchFromResourceVersionZeroSendsCurrentObjects(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	pods := shared.client.CoreV1().Pods(ns)
	if _, err := pods.Create(ctx, testPod("existing"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ev := nextEvent(t, w)
	if ev.Type != watch.Added || ev.Object.(*corev1.Pod).Name != "existing" {
		t.Fatalf("first event %s, want synthetic ADDED existing", ev.Type)
	}
}

func TestWatchFromCompactedResourceVersionIsGone(t *testing.T) {
	env := newEnv(t)
	ctx := ctxT(t)
	pods := env.client.CoreV1().Pods("default")
	old, err := pods.Create(ctx, testPod("old"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var last *corev1.Pod
	for i := range 3 {
		if last, err = pods.Create(ctx, testPod(fmt.Sprintf("p%d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var rev int64
	fmt.Sscan(last.ResourceVersion, &rev)
	if err := env.store.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: old.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ev := nextEvent(t, w)
	if ev.Type != watch.Error {
		t.Fatalf("event %s, want ERROR", ev.Type)
	}
	err = apierrors.FromObject(ev.Object)
	want := fmt.Sprintf("too old resource version: %s (%d)", old.ResourceVersion, rev)
	if !apierrors.IsResourceExpired(err) || err.Error() != want {
		t.Fatalf("error %v, want 410 %q", err, want)
	}

	_, err = pods.List(ctx, metav1.ListOptions{ResourceVersion: old.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Errorf("exact list at a compacted revision: %v, want 410", err)
	}
}

// rawWatch opens a watch over HTTP and returns its decoded events as they come.
func rawWatch(t *testing.T, env *testEnv, path string) <-chan metav1.WatchEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, env.url+path, nil)
	resp, err := env.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("watch %s: %s", path, resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("watch content type %q", ct)
	}
	ch := make(chan metav1.WatchEvent, 100)
	go func() {
		defer resp.Body.Close()
		defer close(ch)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var ev metav1.WatchEvent
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				ch <- ev
			}
		}
	}()
	return ch
}

func nextRaw(t *testing.T, ch <-chan metav1.WatchEvent) (metav1.WatchEvent, map[string]any) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch ended")
		}
		var obj map[string]any
		json.Unmarshal(ev.Object.Raw, &obj)
		return ev, obj
	case <-time.After(30 * time.Second):
		t.Fatal("timed out waiting for a watch event")
	}
	return metav1.WatchEvent{}, nil
}

func objectMeta(obj map[string]any) map[string]any {
	m, _ := obj["metadata"].(map[string]any)
	return m
}

func TestWatchSendInitialEventsEndsWithBookmark(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	pods := shared.client.CoreV1().Pods(ns)
	for _, name := range []string{"x", "y"} {
		if _, err := pods.Create(ctx, testPod(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ch := rawWatch(t, shared, "/api/v1/namespaces/"+ns+"/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")
	for _, want := range []string{"x", "y"} {
		ev, obj := nextRaw(t, ch)
		if ev.Type != "ADDED" || objectMeta(obj)["name"] != want {
			t.Fatalf("event %s %v, want ADDED %s", ev.Type, objectMeta(obj)["name"], want)
		}
	}
	ev, obj := nextRaw(t, ch)
	ann, _ := objectMeta(obj)["annotations"].(map[string]any)
	if ev.Type != "BOOKMARK" || ann["k8s.io/initial-events-end"] != "true" || objectMeta(obj)["resourceVersion"] == "" {
		t.Fatalf("event %s %v, want the initial-events-end BOOKMARK", ev.Type, obj)
	}
	if _, err := pods.Create(ctx, testPod("z"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ev, obj = nextRaw(t, ch)
	if ev.Type != "ADDED" || objectMeta(obj)["name"] != "z" {
		t.Fatalf("event %s %v, want ADDED z", ev.Type, objectMeta(obj)["name"])
	}

	resp, body := shared.do(t, http.MethodGet, "/api/v1/namespaces/"+ns+"/pods?watch=true&sendInitialEvents=true", "", nil)
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("sendInitialEvents without NotOlderThan: %s %s", resp.Status, body)
	}
}

func TestWatchSelectorsTurnNonMatchingIntoDeleted(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	pods := shared.client.CoreV1().Pods(ns)
	p := testPod("sel")
	p.Labels["tier"] = "front"
	p, err := pods.Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{LabelSelector: "tier=front", ResourceVersion: p.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := pods.Create(ctx, testPod("other"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p.Labels["tier"] = "back"
	updated, err := pods.Update(ctx, p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, w)
	if ev.Type != watch.Deleted || ev.Object.(*corev1.Pod).Name != "sel" {
		t.Fatalf("event %s %s, want DELETED sel (stopped matching)", ev.Type, ev.Object.(*corev1.Pod).Name)
	}
	// As kube-apiserver's watch cache sends it: the object as it last
	// matched, at the resourceVersion of the change that made it stop.
	gone := ev.Object.(*corev1.Pod)
	if gone.Labels["tier"] != "front" || gone.ResourceVersion != updated.ResourceVersion {
		t.Errorf("DELETED object has tier=%q at resourceVersion %s, want tier=front at %s", gone.Labels["tier"], gone.ResourceVersion, updated.ResourceVersion)
	}
	// The update that made the DELETED did not change the stored object
	// the watchers share: the next update starts from the right one.
	updated.Labels["tier"] = "front"
	again, err := pods.Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev = nextEvent(t, w)
	if ev.Type != watch.Added || ev.Object.(*corev1.Pod).ResourceVersion != again.ResourceVersion {
		t.Fatalf("event %s at %s, want ADDED sel at %s (matching again)", ev.Type, ev.Object.(*corev1.Pod).ResourceVersion, again.ResourceVersion)
	}
}

func TestWatchTimeoutSecondsEndsStream(t *testing.T) {
	ns := shared.namespace(t)
	ch := rawWatch(t, shared, "/api/v1/namespaces/"+ns+"/pods?watch=true&timeoutSeconds=1&resourceVersion="+fmt.Sprint(shared.store.Revision()))
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("unexpected event")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("watch did not end after timeoutSeconds")
	}
}

func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch ended")
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("timed out waiting for a watch event")
	}
	return watch.Event{}
}
