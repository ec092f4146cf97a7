package apiserver_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/glassplane/glassplane/controlplane/apiserver"
)

func TestNamespaceLifecycle(t *testing.T) {
	ctx := ctxT(t)
	nss := shared.client.CoreV1().Namespaces()
	err := nss.Delete(ctx, "default", metav1.DeleteOptions{})
	if !apierrors.IsForbidden(err) || err.Error() != `namespaces "default" is forbidden: this namespace may not be deleted` {
		t.Errorf("delete default: %v", err)
	}
	ns := shared.namespace(t)
	got, err := nss.Get(ctx, ns, metav1.GetOptions{})
	if err != nil || got.Status.Phase != corev1.NamespaceActive || len(got.Spec.Finalizers) != 1 || got.Spec.Finalizers[0] != corev1.FinalizerKubernetes {
		t.Fatalf("new namespace: %+v %v", got, err)
	}
	if err := nss.Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err = nss.Get(ctx, ns, metav1.GetOptions{})
	if err != nil || got.Status.Phase != corev1.NamespaceTerminating || got.DeletionTimestamp == nil {
		t.Fatalf("deleted namespace should be Terminating: %+v %v", got.Status, err)
	}
	_, err = shared.client.CoreV1().Pods(ns).Create(ctx, testPod("late"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "because it is being terminated") {
		t.Errorf("create in a terminating namespace: %v", err)
	}
	got.Spec.Finalizers = nil
	if _, err := nss.Finalize(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("finalize: %v", err)
	}
	if _, err := nss.Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace after finalize: %v", err)
	}
}

func TestWatchBookmarks(t *testing.T) {
	defer apiserver.SetBookmarkInterval(50 * time.Millisecond)()
	ns := shared.namespace(t)
	rev := shared.store.Revision()
	ch := rawWatch(t, shared, fmt.Sprintf("/api/v1/namespaces/%s/configmaps?watch=true&allowWatchBookmarks=true&resourceVersion=%d", ns, rev))
	ev, obj := nextRaw(t, ch)
	if ev.Type != "BOOKMARK" || objectMeta(obj)["resourceVersion"] != fmt.Sprint(rev) || obj["kind"] != "ConfigMap" {
		t.Fatalf("event %s %v, want a BOOKMARK at %d", ev.Type, obj, rev)
	}
}

func TestUnknownPathsAndVerbs(t *testing.T) {
	tests := []struct {
		method, path string
		code         int
	}{
		{http.MethodGet, "/api/v1/namespaces/default/widgets", http.StatusNotFound},
		{http.MethodGet, "/apis/nope.example.com/v1", http.StatusNotFound},
		{http.MethodGet, "/api/v1/namespaces/default/pods/x/log", http.StatusNotFound},
		{http.MethodPost, "/api/v1/namespaces/default/pods/x", http.StatusMethodNotAllowed},
		{http.MethodDelete, "/api/v1/namespaces", http.StatusMethodNotAllowed},
		{http.MethodPost, "/api", http.StatusMethodNotAllowed},
		{http.MethodGet, "/api/v1/namespaces/default/pods?labelSelector=a%3D%3D%3Db", http.StatusBadRequest},
		{http.MethodGet, "/api/v1/namespaces/default/pods?resourceVersion=abc&resourceVersionMatch=Exact", http.StatusBadRequest},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			resp, body := shared.do(t, tc.method, tc.path, "application/json", strings.NewReader("{}"))
			if resp.StatusCode != tc.code || !strings.Contains(body, `"kind":"Status"`) {
				t.Errorf("%s: %s", resp.Status, body)
			}
		})
	}
}

// TestPodGeneration: a pod starts at generation 1 whatever the client
// sends, grows by one per spec change and at a graceful delete, and not on
// metadata changes, as upstream's since 1.34.
func TestPodGeneration(t *testing.T) {
	env := shared
	ns := env.namespace(t)
	ctx := ctxT(t)
	pods := env.client.CoreV1().Pods(ns)
	p := testPod("gen")
	p.Generation = 100
	// On a node, so that the delete waits for it (graceful).
	p.Spec.NodeName = "gen-node"
	pod, err := pods.Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Generation != 1 {
		t.Fatalf("created at generation %d, want 1", pod.Generation)
	}
	pod.Annotations = map[string]string{"k": "v"}
	if pod, err = pods.Update(ctx, pod, metav1.UpdateOptions{}); err != nil || pod.Generation != 1 {
		t.Fatalf("after a metadata change: generation %d, %v", pod.Generation, err)
	}
	pod.Spec.ActiveDeadlineSeconds = ptr.To(int64(5000))
	if pod, err = pods.Update(ctx, pod, metav1.UpdateOptions{}); err != nil || pod.Generation != 2 {
		t.Fatalf("after a spec change: generation %d, %v", pod.Generation, err)
	}
	if err := pods.Delete(ctx, "gen", metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(60))}); err != nil {
		t.Fatal(err)
	}
	if pod, err = pods.Get(ctx, "gen", metav1.GetOptions{}); err != nil || pod.Generation != 3 {
		t.Fatalf("after a graceful delete: generation %d, %v", pod.Generation, err)
	}
}
