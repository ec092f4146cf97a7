package apiserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
)

// widgetCRD is a namespaced CRD with a schema that has a default, a
// minimum, a CEL rule, status and scale subresources and a printer column.
func widgetCRD(group string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList", ShortNames: []string{"wd"}, Categories: []string{"all"}},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{
					Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object",
						Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"spec": {
								Type: "object",
								Properties: map[string]apiextensionsv1.JSONSchemaProps{
									"size":     {Type: "integer", Minimum: ptr.To(1.0)},
									"color":    {Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`"blue"`)}},
									"replicas": {Type: "integer"},
								},
								XValidations: apiextensionsv1.ValidationRules{{Rule: "!has(self.size) || self.size <= 10", Message: "size must be at most 10"}},
							},
							"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
								"replicas": {Type: "integer"}, "phase": {Type: "string"},
							}},
						},
					}},
					Subresources: &apiextensionsv1.CustomResourceSubresources{
						Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
						Scale:  &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"},
					},
					AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Size", Type: "integer", JSONPath: ".spec.size"}},
				},
				{Name: "v1beta1", Served: true, Storage: false, Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}}},
			},
		},
	}
}

func crdClients(t *testing.T) (apiextensionsclient.Interface, dynamic.Interface) {
	t.Helper()
	ext, err := apiextensionsclient.NewForConfig(shared.config)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(shared.config)
	if err != nil {
		t.Fatal(err)
	}
	return ext, dyn
}

// createEstablished creates crd and waits for its Established condition.
func createEstablished(t *testing.T, ext apiextensionsclient.Interface, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	ctx := ctxT(t)
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD: %v", err)
	}
	eventually(t, "the CRD is established", func() bool {
		got, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true
			}
		}
		return false
	})
}

func widget(name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.glassplane.io/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name},
		"spec":     spec,
	}}
}

func TestCustomResourceLifecycle(t *testing.T) {
	ext, dyn := crdClients(t)
	ctx := ctxT(t)
	ns := shared.namespace(t)
	createEstablished(t, ext, widgetCRD("example.glassplane.io"))
	gvr := schema.GroupVersionResource{Group: "example.glassplane.io", Version: "v1", Resource: "widgets"}
	widgets := dyn.Resource(gvr).Namespace(ns)

	t.Run("discovery lists the resource", func(t *testing.T) {
		list, err := shared.client.Discovery().ServerResourcesForGroupVersion("example.glassplane.io/v1")
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range list.APIResources {
			if r.Name == "widgets" && r.Kind == "Widget" && r.Namespaced && len(r.ShortNames) == 1 && r.ShortNames[0] == "wd" {
				found = true
			}
		}
		if !found {
			t.Fatalf("widgets not in discovery: %+v", list.APIResources)
		}
	})

	t.Run("create prunes unknown fields and defaults", func(t *testing.T) {
		w := widget("small", map[string]any{"size": int64(3), "unknown": "x", "replicas": int64(1)})
		got, err := widgets.Create(ctx, w, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, found, _ := unstructured.NestedString(got.Object, "spec", "unknown"); found {
			t.Errorf("spec.unknown was not pruned: %v", got.Object)
		}
		if color, _, _ := unstructured.NestedString(got.Object, "spec", "color"); color != "blue" {
			t.Errorf("spec.color = %q, want the default blue", color)
		}
		if got.GetGeneration() != 1 || got.GetUID() == "" {
			t.Errorf("generation %d uid %q", got.GetGeneration(), got.GetUID())
		}
		stored, err := shared.store.Get(ctx, "/registry/example.glassplane.io/widgets/"+ns+"/small")
		if err != nil {
			t.Fatalf("not at kube-apiserver's key: %v", err)
		}
		if strings.Contains(string(stored.Value), "unknown") {
			t.Errorf("stored value has the pruned field: %s", stored.Value)
		}
	})

	t.Run("schema violations are 422 with field paths", func(t *testing.T) {
		_, err := widgets.Create(ctx, widget("zero", map[string]any{"size": int64(0)}), metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.size") || !strings.Contains(err.Error(), "should be greater than or equal to 1") {
			t.Fatalf("size 0: %v", err)
		}
		_, err = widgets.Create(ctx, widget("huge", map[string]any{"size": int64(11)}), metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "size must be at most 10") {
			t.Fatalf("CEL rule: %v", err)
		}
		_, err = widgets.Create(ctx, widget("word", map[string]any{"size": "big"}), metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"`) {
			t.Fatalf("wrong type: %v", err)
		}
		for _, name := range []string{"zero", "huge", "word"} {
			if _, err := widgets.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("%s was stored: %v", name, err)
			}
		}
	})

	t.Run("status subresource", func(t *testing.T) {
		cur, err := widgets.Get(ctx, "small", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		unstructured.SetNestedField(cur.Object, "Ready", "status", "phase")
		unstructured.SetNestedField(cur.Object, int64(9), "spec", "size")
		got, err := widgets.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if phase, _, _ := unstructured.NestedString(got.Object, "status", "phase"); phase != "Ready" {
			t.Errorf("status.phase = %q", phase)
		}
		if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size != 3 {
			t.Errorf("status update changed spec.size to %d", size)
		}
		// The main resource ignores status.
		unstructured.SetNestedField(got.Object, "Lost", "status", "phase")
		got, err = widgets.Update(ctx, got, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if phase, _, _ := unstructured.NestedString(got.Object, "status", "phase"); phase != "Ready" {
			t.Errorf("update changed status.phase to %q", phase)
		}
	})

	t.Run("scale subresource", func(t *testing.T) {
		patch := []byte(`{"spec":{"replicas":4}}`)
		if _, err := widgets.Patch(ctx, "small", types.MergePatchType, patch, metav1.PatchOptions{}, "scale"); err != nil {
			t.Fatal(err)
		}
		got, err := widgets.Get(ctx, "small", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); r != 4 {
			t.Errorf("spec.replicas = %d after scaling to 4", r)
		}
		resp, body := shared.do(t, http.MethodGet, "/apis/example.glassplane.io/v1/namespaces/"+ns+"/widgets/small/scale", "", nil)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"kind":"Scale"`) || !strings.Contains(body, `"replicas":4`) {
			t.Errorf("scale: %d %s", resp.StatusCode, body)
		}
	})

	t.Run("other versions are served with their apiVersion", func(t *testing.T) {
		got, err := dyn.Resource(schema.GroupVersionResource{Group: "example.glassplane.io", Version: "v1beta1", Resource: "widgets"}).Namespace(ns).Get(ctx, "small", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.GetAPIVersion() != "example.glassplane.io/v1beta1" {
			t.Errorf("apiVersion %q", got.GetAPIVersion())
		}
	})

	t.Run("table has the printer columns", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, shared.url+"/apis/example.glassplane.io/v1/namespaces/"+ns+"/widgets", nil)
		req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
		resp, err := shared.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var table metav1.Table
		b, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(b, &table); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		if len(table.ColumnDefinitions) != 2 || table.ColumnDefinitions[1].Name != "Size" || len(table.Rows) != 1 {
			t.Fatalf("table: %s", b)
		}
		if table.Rows[0].Cells[0] != "small" || table.Rows[0].Cells[1] != float64(3) {
			t.Errorf("row cells %v", table.Rows[0].Cells)
		}
	})

	t.Run("deleting the CRD deletes its objects", func(t *testing.T) {
		if err := ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, "widgets.example.glassplane.io", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the CRD is gone", func() bool {
			_, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "widgets.example.glassplane.io", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
		if _, err := shared.store.Get(context.Background(), "/registry/example.glassplane.io/widgets/"+ns+"/small"); err == nil {
			t.Error("the object outlived its CRD")
		}
		eventually(t, "the resource is no longer served", func() bool {
			_, err := widgets.List(ctx, metav1.ListOptions{})
			return apierrors.IsNotFound(err)
		})
	})
}

func TestBadCustomResourceDefinitionsAreRefused(t *testing.T) {
	ext, _ := crdClients(t)
	ctx := ctxT(t)
	tests := []struct {
		name   string
		mutate func(*apiextensionsv1.CustomResourceDefinition)
		want   string
	}{
		{
			name: "non-structural schema",
			mutate: func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = apiextensionsv1.JSONSchemaProps{}
			},
			// One version's schema is hoisted to spec.validation by the
			// conversion to the internal type, so kube-apiserver names
			// that path.
			want: "spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
		},
		{
			name: "bad CEL",
			mutate: func(c *apiextensionsv1.CustomResourceDefinition) {
				s := c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
				s.XValidations = apiextensionsv1.ValidationRules{{Rule: "self.size >"}}
				c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = s
			},
			want: "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value",
		},
		{
			name: "webhook conversion without a webhook",
			mutate: func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
			},
			want: `required when strategy is set to Webhook`,
		},
		{
			name: "webhook conversion over plain http",
			mutate: func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
					ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: ptr.To("http://example.com/convert")}, ConversionReviewVersions: []string{"v1"},
				}}
			},
			want: `'https' is the only allowed URL scheme`,
		},
		{
			name:   "name not plural.group",
			mutate: func(c *apiextensionsv1.CustomResourceDefinition) { c.Name = "gadgets.bad.glassplane.io" },
			want:   `metadata.name: Invalid value: "gadgets.bad.glassplane.io": must be spec.names.plural+"."+spec.group`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crd := widgetCRD("bad.glassplane.io")
			crd.Spec.Versions = crd.Spec.Versions[:1]
			tt.mutate(crd)
			_, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want a 422 with %q", err, tt.want)
			}
			if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("the CRD was stored: %v", err)
			}
		})
	}
}

func TestCustomResourceNameConflict(t *testing.T) {
	ext, _ := crdClients(t)
	ctx := ctxT(t)
	first := widgetCRD("conflict.glassplane.io")
	createEstablished(t, ext, first)
	t.Cleanup(func() {
		ext.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), first.Name, metav1.DeleteOptions{})
	})
	second := widgetCRD("conflict.glassplane.io")
	second.Name = "gizmos.conflict.glassplane.io"
	second.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Plural: "gizmos", Singular: "gizmo", Kind: "Gizmo", ListKind: "GizmoList", ShortNames: []string{"wd"}}
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, second, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ext.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), second.Name, metav1.DeleteOptions{})
	})
	eventually(t, "NamesAccepted is False with ShortNamesConflict", func() bool {
		got, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, second.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.NamesAccepted && c.Status == apiextensionsv1.ConditionFalse && c.Reason == "ShortNamesConflict" && c.Message == `"wd" is already in use` {
				return true
			}
		}
		return false
	})
}
