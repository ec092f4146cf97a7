package apiserver_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestExpiredContinueGivesAnInconsistentToken: a continue token whose
// revision was compacted gets 410 with a token in its metadata that
// continues from the same place at the newest revision, as kube-apiserver
// answers (conformance: "continue listing from the last key if the
// original version has been compacted away").
func TestExpiredContinueGivesAnInconsistentToken(t *testing.T) {
	env := newEnv(t)
	ctx := ctxT(t)
	ns := env.namespace(t)
	cms := env.client.CoreV1().ConfigMaps(ns)
	for i := range 5 {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := cms.List(ctx, metav1.ListOptions{Limit: 2})
	if err != nil || first.Continue == "" || len(first.Items) != 2 {
		t.Fatalf("first page: %v %+v", err, first)
	}
	// A write after the first page, then compaction past it.
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-9"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := env.store.Compact(ctx, env.store.Revision()); err != nil {
		t.Fatal(err)
	}
	_, err = cms.List(ctx, metav1.ListOptions{Limit: 2, Continue: first.Continue})
	status, ok := err.(apierrors.APIStatus)
	if !apierrors.IsResourceExpired(err) || !ok || status.Status().ListMeta.Continue == "" {
		t.Fatalf("the expired token: %v, want 410 with a continue token", err)
	}
	next, err := cms.List(ctx, metav1.ListOptions{Limit: 2, Continue: status.Status().ListMeta.Continue})
	if err != nil {
		t.Fatal(err)
	}
	if len(next.Items) != 2 || next.Items[0].Name != "cm-2" || next.Items[1].Name != "cm-3" || next.ResourceVersion == first.ResourceVersion {
		t.Fatalf("the inconsistent page: rv %s, %d items %v", next.ResourceVersion, len(next.Items), next.Items)
	}
	if next.RemainingItemCount == nil || *next.RemainingItemCount != 2 {
		t.Errorf("remaining %v, want 2 (cm-4 and the later cm-9)", next.RemainingItemCount)
	}
}
