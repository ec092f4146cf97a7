package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// TestGarbageCollectorLearnsNewCRDs: an object owned by a custom resource
// whose CRD was made after glassplane started is kept while the owner
// exists (the garbage collector once took an owner of a kind it had not
// discovered for gone, and deleted the dependent at once), and collected
// once the owner is deleted.
func TestGarbageCollectorLearnsNewCRDs(t *testing.T) {
	c := SharedCluster(t)
	ctx := context.Background()
	c.MustKubectl(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gcowners.gc.example.glassplane.io}
spec:
  group: gc.example.glassplane.io
  scope: Namespaced
  names: {plural: gcowners, singular: gcowner, kind: GCOwner}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`, "apply", "-f", "-")
	t.Cleanup(func() { c.Kubectl(t, "", "delete", "crd", "gcowners.gc.example.glassplane.io", "--wait=false") })
	c.MustKubectl(t, "", "wait", "--for=condition=Established", "crd/gcowners.gc.example.glassplane.io", "--timeout=60s")
	ns := "gc-crd"
	c.MustKubectl(t, "", "create", "namespace", ns)
	t.Cleanup(func() { c.Kubectl(t, "", "delete", "namespace", ns, "--wait=false") })

	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "gc.example.glassplane.io", Version: "v1", Resource: "gcowners"}
	var owner *unstructured.Unstructured
	Eventually(t, time.Minute, "the custom resource is created", func() error {
		owner, err = dyn.Resource(gvr).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "gc.example.glassplane.io/v1", "kind": "GCOwner", "metadata": map[string]any{"name": "owner"},
		}}, metav1.CreateOptions{})
		return err
	})
	cms := c.Client.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "gc.example.glassplane.io/v1", Kind: "GCOwner", Name: "owner", UID: owner.GetUID(),
	}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// An orphan made after it is collected once the garbage collector has
	// worked through what came before; the dependent must still be there.
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "orphan", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "ConfigMap", Name: "never-was", UID: "00000000-0000-0000-0000-00000000beef",
	}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	Eventually(t, time.Minute, "the orphan is collected", func() error {
		if _, err := cms.Get(ctx, "orphan", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("orphan still there (%v)", err)
		}
		return nil
	})
	time.Sleep(3 * time.Second) // a wrongly collected dependent goes within this
	if _, err := cms.Get(ctx, "dependent", metav1.GetOptions{}); err != nil {
		t.Fatalf("the dependent of a live custom resource: %v", err)
	}

	if err := dyn.Resource(gvr).Namespace(ns).Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 2*time.Minute, "the dependent is collected with its owner", func() error {
		if _, err := cms.Get(ctx, "dependent", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("dependent still there (%v)", err)
		}
		return nil
	})
}
