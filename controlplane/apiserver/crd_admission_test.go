package apiserver_test

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// reviewed is what a webhook was sent about one object.
type reviewed struct {
	kind, requestKind             metav1.GroupVersionKind
	resource, requestResource     metav1.GroupVersionResource
	objectAPIVersion, subresource string
}

// recordingWebhook is a TLS AdmissionReview server that allows everything
// and records each request by path and object name; /mutate also adds the
// label mutated=yes. It returns the server, its CA and the records' reader.
func recordingWebhook(t *testing.T) (*httptest.Server, []byte, func(path, name string) []reviewed) {
	var mu sync.Mutex
	seen := map[string][]reviewed{}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req := review.Request
		var obj unstructured.Unstructured
		if err := obj.UnmarshalJSON(req.Object.Raw); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rec := reviewed{kind: req.Kind, resource: req.Resource, objectAPIVersion: obj.GetAPIVersion(), subresource: req.SubResource}
		if req.RequestKind != nil {
			rec.requestKind = *req.RequestKind
		}
		if req.RequestResource != nil {
			rec.requestResource = *req.RequestResource
		}
		mu.Lock()
		seen[r.URL.Path+"/"+req.Name] = append(seen[r.URL.Path+"/"+req.Name], rec)
		mu.Unlock()
		resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
		if r.URL.Path == "/mutate" {
			pt := admissionv1.PatchTypeJSONPatch
			resp.Patch, resp.PatchType = []byte(`[{"op":"add","path":"/metadata/labels","value":{"mutated":"yes"}}]`), &pt
		}
		review.Response, review.Request = resp, nil
		json.NewEncoder(w).Encode(&review)
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return srv, ca, func(path, name string) []reviewed {
		mu.Lock()
		defer mu.Unlock()
		return append([]reviewed(nil), seen[path+"/"+name]...)
	}
}

// TestWebhookMatchPolicyOnCustomResources: webhooks whose rules name v1 of
// a CRD are called for a create through its v1beta1 with matchPolicy
// Equivalent, as kube-apiserver calls them: with the object converted to
// v1 (kind and resource v1, requestKind and requestResource v1beta1), a
// mutation converted back to v1beta1; with matchPolicy Exact they are not.
func TestWebhookMatchPolicyOnCustomResources(t *testing.T) {
	env := newEnv(t)
	startDynamicAdmission(t, env)
	ctx := ctxT(t)
	ns := env.namespace(t)
	ext, err := apiextensionsclient.NewForConfig(env.config)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(env.config)
	if err != nil {
		t.Fatal(err)
	}
	const group = "equivalent.glassplane.io"
	createEstablished(t, ext, widgetCRD(group))
	srv, ca, seen := recordingWebhook(t)
	none := admissionregistrationv1.SideEffectClassNone
	equivalent, exact := admissionregistrationv1.Equivalent, admissionregistrationv1.Exact
	hook := func(path string) (admissionregistrationv1.WebhookClientConfig, []admissionregistrationv1.RuleWithOperations, *metav1.LabelSelector) {
		cc, rules, nsSel := webhookFor(srv, ca, path, group, "widgets", ns)
		rules[0].APIVersions = []string{"v1"}
		return cc, rules, nsSel
	}
	var validating []admissionregistrationv1.ValidatingWebhook
	for name, policy := range map[string]*admissionregistrationv1.MatchPolicyType{"equivalent": &equivalent, "exact": &exact} {
		cc, rules, nsSel := hook("/" + name)
		validating = append(validating, admissionregistrationv1.ValidatingWebhook{
			Name: name + ".test.glassplane.io", ClientConfig: cc, Rules: rules, NamespaceSelector: nsSel, MatchPolicy: policy,
			SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		})
	}
	if _, err := env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "widget-versions"}, Webhooks: validating,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cc, rules, nsSel := hook("/mutate")
	if _, err := env.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "widget-labeller"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "mutate.test.glassplane.io", ClientConfig: cc, Rules: rules, NamespaceSelector: nsSel, MatchPolicy: &equivalent,
			SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	create := func(version string) *unstructured.Unstructured {
		t.Helper()
		w := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": group + "/" + version, "kind": "Widget",
			"metadata": map[string]any{"generateName": version + "-"},
			"spec":     map[string]any{"size": int64(2)},
		}}
		got, err := dyn.Resource(schema.GroupVersionResource{Group: group, Version: version, Resource: "widgets"}).Namespace(ns).Create(ctx, w, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create through %s: %v", version, err)
		}
		return got
	}
	// The configurations reach the plugins through their informers.
	var beta *unstructured.Unstructured
	eventually(t, "the Equivalent webhooks called for a create through v1beta1", func() bool {
		beta = create("v1beta1")
		return len(seen("/equivalent", beta.GetName())) > 0 && len(seen("/mutate", beta.GetName())) > 0
	})

	v1 := metav1.GroupVersionKind{Group: group, Version: "v1", Kind: "Widget"}
	v1beta1 := metav1.GroupVersionKind{Group: group, Version: "v1beta1", Kind: "Widget"}
	for _, path := range []string{"/equivalent", "/mutate"} {
		got := seen(path, beta.GetName())
		want := reviewed{
			kind: v1, requestKind: v1beta1, objectAPIVersion: group + "/v1",
			resource:        metav1.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"},
			requestResource: metav1.GroupVersionResource{Group: group, Version: "v1beta1", Resource: "widgets"},
		}
		if len(got) != 1 || got[0] != want {
			t.Errorf("%s webhook was sent %+v for a create through v1beta1, want %+v", path, got, want)
		}
	}
	if got := seen("/exact", beta.GetName()); len(got) != 0 {
		t.Errorf("the Exact webhook on v1 was called for a create through v1beta1: %+v", got)
	}
	if beta.GetAPIVersion() != group+"/v1beta1" || beta.GetLabels()["mutated"] != "yes" {
		t.Errorf("created through v1beta1: apiVersion %q labels %v, want v1beta1 with the webhook's label", beta.GetAPIVersion(), beta.GetLabels())
	}

	// A create through v1 meets both rules exactly.
	direct := create("v1")
	for _, path := range []string{"/equivalent", "/exact"} {
		if got := seen(path, direct.GetName()); len(got) != 1 || got[0].kind != v1 || got[0].requestKind != v1 {
			t.Errorf("%s webhook was sent %+v for a create through v1", path, got)
		}
	}
}
