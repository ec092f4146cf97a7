package apiserver_test

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// conversionWebhook converts Endpoints between v1 (spec.hostPort "h:p")
// and v2 (spec.host, spec.port) as ConversionReview v1, as the upstream
// conformance spec's webhook does; it counts the objects it converted.
func conversionWebhook(t *testing.T, converted *atomic.Int64) *httptest.Server {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review apiextensionsv1.ConversionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
		for _, raw := range review.Request.Objects {
			var u unstructured.Unstructured
			if err := u.UnmarshalJSON(raw.Raw); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			spec, _, _ := unstructured.NestedMap(u.Object, "spec")
			switch {
			case strings.HasSuffix(review.Request.DesiredAPIVersion, "/v2"):
				if hp, ok := spec["hostPort"].(string); ok {
					host, port, _ := strings.Cut(hp, ":")
					delete(spec, "hostPort")
					spec["host"], spec["port"] = host, port
				}
			default:
				if host, ok := spec["host"].(string); ok {
					spec["hostPort"] = host + ":" + spec["port"].(string)
					delete(spec, "host")
					delete(spec, "port")
				}
			}
			unstructured.SetNestedMap(u.Object, spec, "spec")
			u.SetAPIVersion(review.Request.DesiredAPIVersion)
			b, _ := u.MarshalJSON()
			resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: b})
			converted.Add(1)
		}
		review.Response, review.Request = resp, nil
		json.NewEncoder(w).Encode(&review)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestCustomResourceConversionWebhook: a CRD with conversion Webhook
// stores every object at its storage version and serves it at the version
// asked for, converted by the webhook (an object stored at the version
// asked is not sent); a list of objects stored at either version comes
// back at one; a webhook that is gone gives the API's 500 naming it.
func TestCustomResourceConversionWebhook(t *testing.T) {
	ctx := ctxT(t)
	ext, dyn := crdClients(t)
	var converted atomic.Int64
	hook := conversionWebhook(t, &converted)
	group := "conversion.glassplane.io"
	anything := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "endpoints." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "endpoints", Singular: "endpoint", Kind: "Endpoint", ListKind: "EndpointList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: anything},
				{Name: "v2", Served: true, Schema: anything},
			},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: ptr.To(hook.URL + "/convert"), CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})},
				ConversionReviewVersions: []string{"v1", "v1beta1"},
			}},
		},
	}
	createEstablished(t, ext, crd)
	ns := shared.namespace(t)
	v1 := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "endpoints"}).Namespace(ns)
	v2 := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v2", Resource: "endpoints"}).Namespace(ns)
	obj := func(version, name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": group + "/" + version, "kind": "Endpoint", "metadata": map[string]any{"name": name}, "spec": spec,
		}}
	}

	if _, err := v1.Create(ctx, obj("v1", "a", map[string]any{"hostPort": "localhost:8080"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := converted.Load(); n != 0 {
		t.Errorf("a create at the storage version called the webhook for %d objects", n)
	}
	got, err := v2.Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if host, _, _ := unstructured.NestedString(got.Object, "spec", "host"); host != "localhost" || got.GetAPIVersion() != group+"/v2" {
		t.Errorf("v2 read of a v1 object: %v", got.Object)
	}

	if _, err := v2.Create(ctx, obj("v2", "b", map[string]any{"host": "example.com", "port": "443"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resp, err := shared.etcd.Client().Get(ctx, "/registry/"+group+"/endpoints/"+ns+"/b")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("the stored b: %v %v", err, resp)
	}
	if s := string(resp.Kvs[0].Value); !strings.Contains(s, `"apiVersion":"`+group+`/v1"`) || !strings.Contains(s, `"hostPort":"example.com:443"`) {
		t.Errorf("b is stored as %s, want v1 with hostPort", s)
	}

	list, err := v2.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 {
		t.Fatalf("v2 list: %d items", len(list.Items))
	}
	for _, it := range list.Items {
		if port, _, _ := unstructured.NestedString(it.Object, "spec", "port"); it.GetAPIVersion() != group+"/v2" || port == "" {
			t.Errorf("v2 list item %s: %v", it.GetName(), it.Object)
		}
	}

	hook.Close()
	if _, err := v2.Get(ctx, "a", metav1.GetOptions{}); !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "conversion webhook") {
		t.Errorf("a read needing a webhook that is gone: %v, want the API's 500 naming the conversion webhook", err)
	}
	if _, err := v1.Get(ctx, "a", metav1.GetOptions{}); err != nil {
		t.Errorf("a read at the storage version needs no webhook: %v", err)
	}
	if _, err := v2.Create(ctx, obj("v2", "c", map[string]any{"host": "h", "port": "1"}), metav1.CreateOptions{}); !apierrors.IsInternalError(err) {
		t.Errorf("a create needing a webhook that is gone: %v, want 500", err)
	}
	if _, err := v1.Get(ctx, "c", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the create that could not be converted stored c: %v", err)
	}
}
