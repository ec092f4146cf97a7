package apiserver_test

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// TestCRDDeletionWaitsForFinalizers: deleting a CRD deletes its objects as
// upstream's finalizer does, through their finalizers: one without goes at
// once, one with is marked deleting and stays (and the CRD with it,
// Terminating) until its finalizer is removed.
func TestCRDDeletionWaitsForFinalizers(t *testing.T) {
	ext, dyn := crdClients(t)
	ctx := ctxT(t)
	ns := shared.namespace(t)
	group := "finalize.glassplane.io"
	crd := widgetCRD(group)
	createEstablished(t, ext, crd)
	widgets := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}).Namespace(ns)
	for _, name := range []string{"plain", "held"} {
		w := widget(name, map[string]any{"size": int64(1)})
		w.SetAPIVersion(group + "/v1")
		if name == "held" {
			w.SetFinalizers([]string{"example.com/hold"})
		}
		if _, err := widgets.Create(ctx, w, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "plain deleted and held marked deleting", func() bool {
		_, err := widgets.Get(ctx, "plain", metav1.GetOptions{})
		held, herr := widgets.Get(ctx, "held", metav1.GetOptions{})
		return apierrors.IsNotFound(err) && herr == nil && held.GetDeletionTimestamp() != nil
	})
	got, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the CRD went while an object's finalizer holds: %v", err)
	}
	terminating := false
	for _, c := range got.Status.Conditions {
		terminating = terminating || (c.Type == apiextensionsv1.Terminating && c.Status == apiextensionsv1.ConditionTrue)
	}
	if !terminating {
		t.Errorf("CRD conditions %+v, want Terminating", got.Status.Conditions)
	}
	if _, err := widgets.Patch(ctx, "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the CRD gone after the finalizer was removed", func() bool {
		_, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}
