package apiserver_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	svmv1 "k8s.io/api/storagemigration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"

	"github.com/glassplane/glassplane/controlplane/controllers/storageversionmigration"
)

// TestStorageVersionMigration: a custom resource stored in its CRD's old
// storage version is rewritten in the new one by the storage version
// migrator controller, reading and writing only through the API; the
// migration records the list's resourceVersion, then Succeeded. A
// migration of a resource that is not served fails; the spec is
// immutable, and the status refuses contradicting conditions.
func TestStorageVersionMigration(t *testing.T) {
	ctx := ctxT(t)
	ext, dyn := crdClients(t)
	group := "svm.glassplane.io"
	anything := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "things." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "things", Singular: "thing", Kind: "Thing", ListKind: "ThingList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: anything},
				{Name: "v2", Served: true, Storage: false, Schema: anything},
			},
		},
	}
	createEstablished(t, ext, crd)
	t.Cleanup(func() {
		ext.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), crd.Name, metav1.DeleteOptions{})
	})
	ns := shared.namespace(t)
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "things"}
	thing := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Thing", "metadata": map[string]any{"name": "a"}, "spec": map[string]any{"n": int64(1)}}}
	if _, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, thing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	storedAt := func(name string) string {
		t.Helper()
		key := "/registry/" + group + "/things/" + ns + "/" + name
		resp, err := shared.etcd.Client().Get(ctx, key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("read %s: %v", key, err)
		}
		return string(resp.Kvs[0].Value)
	}
	stored := func() string { t.Helper(); return storedAt("a") }
	if !strings.Contains(stored(), `"apiVersion":"`+group+`/v1"`) {
		t.Fatalf("stored before the switch: %s", stored())
	}
	eventually(t, "the CRD to store v2", func() bool {
		cur, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		cur.Spec.Versions[0].Storage, cur.Spec.Versions[1].Storage = false, true
		_, err = ext.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, cur, metav1.UpdateOptions{})
		return err == nil
	})
	// The API server hears of the CRD's change through its watch: new
	// writes are stored as v2 soon, not at once. A migration started before
	// would rewrite "a" as v1 again.
	probes := 0
	eventually(t, "new Things to be stored as v2", func() bool {
		probes++
		probe := thing.DeepCopy()
		probe.SetName(fmt.Sprintf("probe-%d", probes))
		if _, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, probe, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return strings.Contains(storedAt(probe.GetName()), `"apiVersion":"`+group+`/v2"`)
	})

	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(shared.client.Discovery()))
	factory := informers.NewSharedInformerFactory(shared.client, 0)
	c, err := storageversionmigration.New(slog.New(slog.NewTextHandler(io.Discard, nil)), shared.client, dyn, func(gr schema.GroupResource) (schema.GroupVersionResource, error) {
		mapper.Reset()
		return mapper.ResourceFor(gr.WithVersion(""))
	}, factory.Storagemigration().V1().StorageVersionMigrations())
	if err != nil {
		t.Fatal(err)
	}
	c.UnservedGrace = 2 * time.Second
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	factory.Start(runCtx.Done())
	go c.Run(runCtx, 1)

	svms := shared.client.StoragemigrationV1().StorageVersionMigrations()
	migrate := func(gr metav1.GroupResource) *svmv1.StorageVersionMigration {
		t.Helper()
		svm, err := svms.Create(ctx, &svmv1.StorageVersionMigration{ObjectMeta: metav1.ObjectMeta{GenerateName: "migrate-"}, Spec: svmv1.StorageVersionMigrationSpec{Resource: gr}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { svms.Delete(context.Background(), svm.Name, metav1.DeleteOptions{}) })
		eventually(t, "migration "+svm.Name+" to finish", func() bool {
			svm, err = svms.Get(ctx, svm.Name, metav1.GetOptions{})
			return err == nil && (meta.IsStatusConditionTrue(svm.Status.Conditions, string(svmv1.MigrationSucceeded)) || meta.IsStatusConditionTrue(svm.Status.Conditions, string(svmv1.MigrationFailed)))
		})
		return svm
	}
	done := migrate(metav1.GroupResource{Group: group, Resource: "things"})
	if !meta.IsStatusConditionTrue(done.Status.Conditions, string(svmv1.MigrationSucceeded)) || done.Status.ResourceVersion == "" || meta.IsStatusConditionTrue(done.Status.Conditions, string(svmv1.MigrationRunning)) {
		t.Fatalf("migration status %+v", done.Status)
	}
	if s := stored(); !strings.Contains(s, `"apiVersion":"`+group+`/v2"`) {
		t.Errorf("stored after the migration: %s", s)
	}
	failed := migrate(metav1.GroupResource{Group: group, Resource: "nothings"})
	if cond := meta.FindStatusCondition(failed.Status.Conditions, string(svmv1.MigrationFailed)); cond == nil || cond.Status != metav1.ConditionTrue || cond.Message != "resource does not exist in discovery" {
		t.Errorf("migration of an unknown resource: %+v", failed.Status)
	} else if waited := cond.LastTransitionTime.Sub(failed.CreationTimestamp.Time); waited < time.Second {
		// Both times are in whole seconds: a 2 s grace is at least 1 s.
		t.Errorf("a migration of an unknown resource failed %v after its creation, before its grace of %v", waited, c.UnservedGrace)
	}

	done.Spec.Resource.Resource = "widgets"
	if _, err := svms.Update(ctx, done, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec: Invalid value") {
		t.Errorf("changing the spec: %v", err)
	}
	failed.Status.Conditions = append(failed.Status.Conditions, metav1.Condition{Type: string(svmv1.MigrationSucceeded), Status: metav1.ConditionTrue, Reason: "X", LastTransitionTime: metav1.Now()})
	if _, err := svms.UpdateStatus(ctx, failed, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "Both success and failed conditions cannot be true at the same time") {
		t.Errorf("succeeded and failed: %v", err)
	}
	_, err = svms.Create(ctx, &svmv1.StorageVersionMigration{ObjectMeta: metav1.ObjectMeta{Name: "empty"}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.resource.resource: Required value: resource is required to be set") {
		t.Errorf("create without a resource: %v", err)
	}
}
