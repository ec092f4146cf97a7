package apiserver_test

import (
	"errors"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestCustomResourceSelectableFields: a CRD version's selectableFields
// answer field selectors on its objects (strings, integers and booleans as
// kube-apiserver prints them); a field it does not declare is kube's 400.
func TestCustomResourceSelectableFields(t *testing.T) {
	ext, dyn := crdClients(t)
	ctx := ctxT(t)
	ns := shared.namespace(t)
	const group = "fields.glassplane.io"
	crd := widgetCRD(group)
	v1 := &crd.Spec.Versions[0]
	v1.Schema.OpenAPIV3Schema.Properties["spec"].Properties["shiny"] = apiextensionsv1.JSONSchemaProps{Type: "boolean"}
	v1.SelectableFields = []apiextensionsv1.SelectableField{{JSONPath: ".spec.color"}, {JSONPath: ".spec.size"}, {JSONPath: ".spec.shiny"}}
	createEstablished(t, ext, crd)
	widgets := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}).Namespace(ns)
	for name, spec := range map[string]map[string]any{
		"blue-small": {"color": "blue", "size": int64(2), "shiny": true},
		"blue-big":   {"color": "blue", "size": int64(9)},
		"red-small":  {"color": "red", "size": int64(2), "shiny": false},
		"defaulted":  {"size": int64(5)}, // color defaults to blue
	} {
		w := widget(name, spec)
		w.SetAPIVersion(group + "/v1")
		if _, err := widgets.Create(ctx, w, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}

	for _, tc := range []struct {
		selector string
		want     []string
	}{
		{"spec.color=blue", []string{"blue-big", "blue-small", "defaulted"}},
		{"spec.color!=blue", []string{"red-small"}},
		{"spec.color=blue,spec.size=2", []string{"blue-small"}},
		{"spec.size=2", []string{"blue-small", "red-small"}},
		{"spec.shiny=true", []string{"blue-small"}},
		{"spec.shiny=false", []string{"red-small"}},
		{"spec.shiny=", []string{"blue-big", "defaulted"}},
		{"spec.color=green", nil},
		{"metadata.name=red-small", []string{"red-small"}},
	} {
		t.Run(tc.selector, func(t *testing.T) {
			list, err := widgets.List(ctx, metav1.ListOptions{FieldSelector: tc.selector})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, item := range list.Items {
				got = append(got, item.GetName())
			}
			sort.Strings(got)
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("listed %v, want %v", got, tc.want)
			}
		})
	}

	t.Run("a field the version does not select is 400", func(t *testing.T) {
		_, err := widgets.List(ctx, metav1.ListOptions{FieldSelector: "spec.replicas=1"})
		if !apierrors.IsBadRequest(err) || err.Error() != "field label not supported: spec.replicas" {
			t.Fatalf("list by spec.replicas: %v, want 400 field label not supported: spec.replicas", err)
		}
		// v1beta1 declares no selectable field.
		beta := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1beta1", Resource: "widgets"}).Namespace(ns)
		_, err = beta.List(ctx, metav1.ListOptions{FieldSelector: "spec.color=blue"})
		if !apierrors.IsBadRequest(err) || err.Error() != "field label not supported: spec.color" {
			t.Fatalf("list v1beta1 by spec.color: %v, want 400 field label not supported: spec.color", err)
		}
	})

	t.Run("watch", func(t *testing.T) {
		w, err := widgets.Watch(ctx, metav1.ListOptions{FieldSelector: "spec.color=red"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		ev := <-w.ResultChan()
		if u, ok := ev.Object.(*unstructured.Unstructured); !ok || u.GetName() != "red-small" {
			t.Fatalf("first event %s %v, want red-small", ev.Type, ev.Object)
		}
	})
}

// TestCustomResourceIntOrString: a property with x-kubernetes-int-or-string
// takes an integer or a string and refuses anything else with a 422 naming
// the field, in both the plain form and the anyOf form kubebuilder writes.
func TestCustomResourceIntOrString(t *testing.T) {
	ext, dyn := crdClients(t)
	ctx := ctxT(t)
	ns := shared.namespace(t)
	for _, tc := range []struct {
		name  string
		group string
		prop  apiextensionsv1.JSONSchemaProps
	}{
		{"plain", "intorstring.glassplane.io", apiextensionsv1.JSONSchemaProps{XIntOrString: true}},
		{"anyOf", "intorstring-anyof.glassplane.io", apiextensionsv1.JSONSchemaProps{
			XIntOrString: true, AnyOf: []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crd := widgetCRD(tc.group)
			crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["maxUnavailable"] = tc.prop
			createEstablished(t, ext, crd)
			widgets := dyn.Resource(schema.GroupVersionResource{Group: tc.group, Version: "v1", Resource: "widgets"}).Namespace(ns)
			create := func(name string, v any) (*unstructured.Unstructured, error) {
				w := widget(name, map[string]any{"maxUnavailable": v})
				w.SetAPIVersion(tc.group + "/v1")
				return widgets.Create(ctx, w, metav1.CreateOptions{})
			}
			for name, v := range map[string]any{"count": int64(3), "percent": "50%"} {
				got, err := create(name, v)
				if err != nil {
					t.Fatalf("maxUnavailable %v: %v", v, err)
				}
				if stored := got.Object["spec"].(map[string]any)["maxUnavailable"]; stored != v {
					t.Errorf("maxUnavailable %v came back as %v (%T)", v, stored, stored)
				}
			}
			_, err := create("boolean", true)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("maxUnavailable true: %v, want 422", err)
			}
			var status apierrors.APIStatus
			if !errors.As(err, &status) || status.Status().Details == nil || len(status.Status().Details.Causes) == 0 ||
				status.Status().Details.Causes[0].Field != "spec.maxUnavailable" {
				t.Fatalf("maxUnavailable true: %v, want a cause on spec.maxUnavailable", err)
			}
			const want = `spec.maxUnavailable: Invalid value: "boolean": spec.maxUnavailable in body must be of type integer,string: "boolean"`
			if !strings.Contains(err.Error(), want) {
				t.Errorf("message %q, want it to say %s", err.Error(), want)
			}
			if _, err := widgets.Get(ctx, "boolean", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("the refused object was stored: %v", err)
			}
		})
	}
}
