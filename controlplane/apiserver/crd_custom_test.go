package apiserver

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
)

// TestCRDTypeConverter checks that a CRD's entries carry server-side
// apply's type converter built from its schema: a typed conversion of an
// object that fits the schema works, one that does not is refused.
func TestCRDTypeConverter(t *testing.T) {
	schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer"}}},
		},
	}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.glassplane.io", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: schema},
				{Name: "v1beta1", Served: true, Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}},
			},
		},
	}
	crd.Name = "widgets.example.glassplane.io"
	entries, err := customResourceEntries(crd, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0].TypeConverter == nil {
		t.Fatalf("entries %d, type converter %v", len(entries), entries[0].TypeConverter)
	}
	obj := func(size any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.glassplane.io/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "a", "namespace": "default"},
			"spec":     map[string]any{"size": size},
		}}
	}
	if _, err := entries[0].TypeConverter.ObjectToTyped(obj(int64(3))); err != nil {
		t.Errorf("an object that fits the schema: %v", err)
	}
	if _, err := entries[0].TypeConverter.ObjectToTyped(obj("big")); err == nil {
		t.Error("a string spec.size was typed")
	}
}
