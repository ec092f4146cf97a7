package apiserver_test

import (
	"context"
	"strings"
	"testing"

	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/apiserver"
)

// TestLookupCacheFollowsWrites checks that admission's PriorityClass and
// namespace lookups, answered from memory once the cache holds the object,
// never answer with an object this server has already changed or deleted.
func TestLookupCacheFollowsWrites(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	pcs := shared.client.SchedulingV1().PriorityClasses()
	if _, err := pcs.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "lookup-cache"}, Value: 4242}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pcs.Delete(context.Background(), "lookup-cache", metav1.DeleteOptions{}) })
	eventually(t, "the PriorityClass in the lookup cache", func() bool {
		return apiserver.CachedForLookup(shared.server, "priorityclasses", "", "lookup-cache")
	})
	eventually(t, "the namespace in the lookup cache", func() bool {
		return apiserver.CachedForLookup(shared.server, "namespaces", "", ns)
	})
	pod := testPod("high")
	pod.Spec.PriorityClassName = "lookup-cache"
	got, err := shared.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil || got.Spec.Priority == nil || *got.Spec.Priority != 4242 {
		t.Fatalf("pod with a cached PriorityClass: %v", err)
	}

	// Deleted: the very next lookup must not see it, whether or not the
	// cache has applied the delete yet.
	if err := pcs.Delete(ctx, "lookup-cache", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pod = testPod("orphaned-priority")
	pod.Spec.PriorityClassName = "lookup-cache"
	_, err = shared.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "no PriorityClass with name lookup-cache was found") {
		t.Errorf("pod with a just-deleted PriorityClass: %v", err)
	}
	eventually(t, "the PriorityClass gone from the lookup cache", func() bool {
		return !apiserver.CachedForLookup(shared.server, "priorityclasses", "", "lookup-cache")
	})

	// Terminating: the next create in the namespace is refused at once.
	if err := shared.client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = shared.client.CoreV1().Pods(ns).Create(ctx, testPod("late"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "because it is being terminated") {
		t.Errorf("create right after the namespace was deleted: %v", err)
	}
	eventually(t, "the Terminating namespace in the lookup cache", func() bool {
		return apiserver.CachedForLookup(shared.server, "namespaces", "", ns)
	})
	_, err = shared.client.CoreV1().Pods(ns).Create(ctx, testPod("later"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "because it is being terminated") {
		t.Errorf("create in a Terminating namespace answered from the cache: %v", err)
	}
}
