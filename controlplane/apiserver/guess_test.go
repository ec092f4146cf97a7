package apiserver_test

import (
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/glassplane/glassplane/controlplane/apiserver"
	"github.com/glassplane/glassplane/controlplane/storage"
)

// TestUpdatesFromAStaleGuess makes every update start from an old copy of
// the object, as the storage watch's copy is when it lags behind a write,
// and checks each outcome the copy would get wrong is decided on the
// stored object instead.
func TestUpdatesFromAStaleGuess(t *testing.T) {
	env := newEnv(t)
	ctx := ctxT(t)
	ns := env.namespace(t)
	cms := env.client.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"a": "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	k := storage.Key("configmaps", ns, "cm")
	stale, err := env.store.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := cms.Get(ctx, "cm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Data["a"] = "2"
	if _, err := cms.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	guesses := 0
	defer apiserver.SetRecent(env.server, func(key string) (*storage.KeyValue, bool) {
		if key != k {
			return nil, false
		}
		guesses++
		return stale, true
	})()

	// The swap fails on the stale copy; the patch lands on a=2.
	got, err := cms.Patch(ctx, "cm", types.MergePatchType, []byte(`{"data":{"b":"x"}}`), metav1.PatchOptions{})
	if err != nil || got.Data["a"] != "2" || got.Data["b"] != "x" {
		t.Fatalf("patch from a stale copy: %v, data %v; want a=2 b=x", err, got.Data)
	}
	// On the stale copy (a=1) this patch changes nothing; it must still
	// be written over a=2.
	if _, err := cms.Patch(ctx, "cm", types.MergePatchType, []byte(`{"data":{"a":"1","b":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := cms.Get(ctx, "cm", metav1.GetOptions{}); err != nil || got.Data["a"] != "1" || len(got.Data) != 1 {
		t.Fatalf("after a patch that was a no-op on the stale copy: %v, data %v; want a=1 alone", err, got)
	}
	// A PUT with the current resourceVersion is refused by the stale copy
	// (its resourceVersion differs), and must not be.
	cur, err = cms.Get(ctx, "cm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Data["c"] = "y"
	if _, err := cms.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update with the current resourceVersion: %v", err)
	}
	// A PUT with an old resourceVersion is still a conflict.
	cur.ResourceVersion = strconv.FormatInt(stale.ModRevision, 10)
	if _, err := cms.Update(ctx, cur, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("update with an old resourceVersion: %v, want a conflict", err)
	}
	// Once the object is gone, the copy does not bring it back.
	if err := cms.Delete(ctx, "cm", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Patch(ctx, "cm", types.MergePatchType, []byte(`{"data":{"a":"3"}}`), metav1.PatchOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("patch of a deleted object from a stale copy: %v, want NotFound", err)
	}
	if guesses < 5 {
		t.Errorf("the stale copy was consulted %d times, want once per update (5)", guesses)
	}
}
