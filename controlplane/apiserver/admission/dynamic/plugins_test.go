package dynamic

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/discovery"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/openapi"

	"github.com/glassplane/glassplane/controlplane/apiserver/admission"
	"github.com/glassplane/glassplane/controlplane/apiserver/audit"
)

type allowAll struct{}

func (allowAll) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionAllow, "", nil
}

// webhook answers AdmissionReviews: /mutate adds a label, /deny refuses
// objects named denied-*, /down fails with a 500.
func webhook(t *testing.T) (*httptest.Server, []byte) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		switch r.URL.Path {
		case "/mutate":
			pt := admissionv1.PatchTypeJSONPatch
			resp.Patch, resp.PatchType = []byte(`[{"op":"add","path":"/metadata/labels","value":{"mutated":"yes"}}]`), &pt
		case "/down":
			http.Error(w, "down for maintenance", http.StatusInternalServerError)
			return
		case "/deny":
			if strings.HasPrefix(review.Request.Name, "denied-") {
				resp.Allowed = false
				resp.Result = &metav1.Status{Message: "no denied-* here", Code: http.StatusForbidden}
			}
		}
		review.Response, review.Request = resp, nil
		json.NewEncoder(w).Encode(&review)
	}))
	t.Cleanup(srv.Close)
	return srv, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

func TestPluginsCallWebhooks(t *testing.T) {
	srv, ca := webhook(t)
	none := admissionregistrationv1.SideEffectClassNone
	fail, ignore := admissionregistrationv1.Fail, admissionregistrationv1.Ignore
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}
	url := func(path string) *string { s := srv.URL + path; return &s }
	client := fake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		&admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "m"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{
				Name: "mutate.test", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: url("/mutate"), CABundle: ca},
				Rules: rules, SideEffects: &none, FailurePolicy: &fail, AdmissionReviewVersions: []string{"v1"},
				NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{},
			}, {
				Name: "down.test", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: url("/down"), CABundle: ca},
				Rules: rules, SideEffects: &none, FailurePolicy: &ignore, AdmissionReviewVersions: []string{"v1"},
				NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{},
			}},
		},
		&admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "v"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name: "deny.test", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: url("/deny"), CABundle: ca},
				Rules: rules, SideEffects: &none, FailurePolicy: &fail, AdmissionReviewVersions: []string{"v1"},
				NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{},
			}},
		},
	)
	p, err := New()
	if err != nil {
		t.Fatal(err)
	}
	p.RegisterKind(corev1.SchemeGroupVersion.WithResource("configmaps"), "", corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	attrs := func(name string) *admission.Attributes {
		return &admission.Attributes{
			Operation: admission.Create, Resource: corev1.SchemeGroupVersion.WithResource("configmaps"),
			Kind: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Namespace: "default", Name: name,
			Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}, UserName: "alice",
		}
	}
	chain := admission.NewChain(p.Mutating(), p.ValidatingPolicy(), p.ValidatingWebhook())

	// Before Start, a write waits ReadyWait and is refused; disabled, the
	// plugins let it through; a webhook configuration always passes.
	defer func(d time.Duration) { ReadyWait = d }(ReadyWait)
	ReadyWait = 50 * time.Millisecond
	if _, err := chain.Run(ctx, attrs("early")); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "not yet ready to handle request") {
		t.Fatalf("before Start: %v, want 403 not yet ready to handle request", err)
	}
	config := &admission.Attributes{
		Operation: admission.Create, Resource: admissionregistrationv1.SchemeGroupVersion.WithResource("validatingwebhookconfigurations"),
		Kind: admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingWebhookConfiguration"), Name: "mend",
		Object: &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "mend"}}, UserName: "alice",
	}
	if _, err := chain.Run(ctx, config); err != nil {
		t.Fatalf("a webhook configuration before Start: %v", err)
	}
	if _, err := chain.Run(Bootstrapping(ctx), attrs("bootstrap")); err != nil {
		t.Fatalf("the server's bootstrap before Start: %v", err)
	}
	p.Disable()
	if _, err := chain.Run(ctx, attrs("denied-early")); err != nil {
		t.Fatalf("disabled, before Start: %v", err)
	}
	start(ctx, t, p, client)

	a := attrs("fine")
	steps, err := chain.Run(ctx, a)
	if err != nil {
		t.Fatalf("allowed object: %v", err)
	}
	if got := a.Object.(*corev1.ConfigMap).Labels["mutated"]; got != "yes" {
		t.Errorf("label mutated = %q, want yes (steps %+v)", got, steps)
	}
	if steps[0].Plugin != MutatingWebhookName || !strings.Contains(steps[0].Patch, "mutated") {
		t.Errorf("first step = %+v, want the webhook's patch", steps[0])
	}
	if a.AuditAnnotations["mutation.webhook.admission.k8s.io/round_0_index_0"] == "" {
		t.Errorf("audit annotations = %v, want upstream's mutation annotation", a.AuditAnnotations)
	}

	// Each call is a stage of admission on the pipeline page.
	got := stagesOf(t, a)
	if len(got) != 3 {
		t.Fatalf("stages = %+v, want the two mutating calls and the validating one", got)
	}
	if m := got[0]; m.Kind != KindMutatingWebhook || m.Configuration != "m" || m.Name != "mutate.test" || m.Result != ResultPatched ||
		string(m.Patch) != `[{"op":"add","path":"/metadata/labels","value":{"mutated":"yes"}}]` {
		t.Errorf("mutating stage = %+v (patch %s), want m/mutate.test patched with its patch", m, m.Patch)
	}
	if d := got[1]; d.Kind != KindMutatingWebhook || d.Name != "down.test" || d.Result != ResultErrorIgnored || !strings.Contains(d.Message, "500") {
		t.Errorf("stage of the webhook that is down = %+v, want its error ignored", d)
	}
	if v := got[2]; v.Kind != KindValidatingWebhook || v.Configuration != "v" || v.Name != "deny.test" || v.Result != ResultAllowed || v.Patch != nil {
		t.Errorf("validating stage = %+v, want v/deny.test allowed", v)
	}
	denied := attrs("denied-one")
	_, err = chain.Run(ctx, denied)
	got = stagesOf(t, denied)
	if len(got) != 3 || got[2].Result != ResultDenied || got[2].Message != "no denied-* here" || got[2].Name != "deny.test" {
		t.Errorf("stages of the denied request = %+v, want deny.test denied with its message", got)
	}
	want := `admission webhook "deny.test" denied the request: no denied-* here`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("denied object: %v, want 403 %q", err, want)
	}
}

// start starts p over the fake clientset, with no OpenAPI and an
// authorizer that allows everything.
func start(ctx context.Context, t *testing.T, p *Plugins, client *fake.Clientset) {
	t.Helper()
	if err := p.Start(ctx, Deps{
		Client: noOpenAPI{client}, Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()),
		RESTMapper: meta.NewDefaultRESTMapper(nil), Authorizer: allowAll{},
	}); err != nil {
		t.Fatal(err)
	}
}

// stagesOf decodes a request's dynamic admission stages.
func stagesOf(t *testing.T, a *admission.Attributes) []Stage {
	t.Helper()
	var stages []Stage
	if err := json.Unmarshal([]byte(a.AuditAnnotations[audit.AnnotationDynamicAdmission]), &stages); err != nil {
		t.Fatalf("annotation %s = %q: %v", audit.AnnotationDynamicAdmission, a.AuditAnnotations[audit.AnnotationDynamicAdmission], err)
	}
	return stages
}

// noOpenAPI is the fake clientset with a discovery client that serves no
// OpenAPI (the fake's panics), for the mutating policies' type converters.
type noOpenAPI struct{ *fake.Clientset }

func (c noOpenAPI) Discovery() discovery.DiscoveryInterfaces {
	return noOpenAPIDiscovery{c.Clientset.Discovery()}
}

type noOpenAPIDiscovery struct{ discovery.DiscoveryInterfaces }

func (noOpenAPIDiscovery) OpenAPIV3() openapi.Client { return noPaths{} }

type noPaths struct{}

func (noPaths) Paths() (map[string]openapi.GroupVersion, error) { return nil, nil }

// TestWebhookReinvocation: a webhook with reinvocationPolicy IfNeeded is
// called again when a webhook after it changed the object, and one with
// Never is not, as kube-apiserver's reinvoker does; the chain records the
// second pass's steps as reinvoked.
func TestWebhookReinvocation(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var cm corev1.ConfigMap
		if err := json.Unmarshal(review.Request.Object.Raw, &cm); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		name := strings.TrimPrefix(r.URL.Path, "/")
		mu.Lock()
		calls[name]++
		mu.Unlock()
		resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		// Each adds its label once; "again" also counts the labels it saw
		// when called a second time.
		if cm.Labels[name] == "" {
			pt := admissionv1.PatchTypeJSONPatch
			op := `[{"op":"add","path":"/metadata/labels","value":{"` + name + `":"yes"}}]`
			if len(cm.Labels) > 0 {
				op = `[{"op":"add","path":"/metadata/labels/` + name + `","value":"yes"}]`
			}
			resp.Patch, resp.PatchType = []byte(op), &pt
		} else if name == "again" {
			pt := admissionv1.PatchTypeJSONPatch
			resp.Patch, resp.PatchType = []byte(fmt.Sprintf(`[{"op":"add","path":"/metadata/labels/again-saw","value":"%d"}]`, len(cm.Labels))), &pt
		}
		review.Response, review.Request = resp, nil
		json.NewEncoder(w).Encode(&review)
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	none := admissionregistrationv1.SideEffectClassNone
	fail := admissionregistrationv1.Fail
	ifNeeded, never := admissionregistrationv1.IfNeededReinvocationPolicy, admissionregistrationv1.NeverReinvocationPolicy
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}
	hook := func(name string, policy *admissionregistrationv1.ReinvocationPolicyType) admissionregistrationv1.MutatingWebhook {
		u := srv.URL + "/" + name
		return admissionregistrationv1.MutatingWebhook{
			Name: name + ".test", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: ca},
			Rules: rules, SideEffects: &none, FailurePolicy: &fail, AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{}, ReinvocationPolicy: policy,
		}
	}
	client := fake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		&admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "m"},
			Webhooks:   []admissionregistrationv1.MutatingWebhook{hook("again", &ifNeeded), hook("once", &never), hook("last", &never)},
		},
	)
	p, err := New()
	if err != nil {
		t.Fatal(err)
	}
	p.RegisterKind(corev1.SchemeGroupVersion.WithResource("configmaps"), "", corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start(ctx, t, p, client)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}}
	a := &admission.Attributes{
		Operation: admission.Create, Resource: corev1.SchemeGroupVersion.WithResource("configmaps"),
		Kind: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Namespace: "default", Name: "c", Object: cm, UserName: "alice",
	}
	steps, err := admission.NewChain(p.Mutating()).Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := fmt.Sprint(calls)
	mu.Unlock()
	if want := "map[again:2 last:1 once:1]"; got != want {
		t.Errorf("webhook calls %s, want %s", got, want)
	}
	// The second call of "again" saw the labels of all three.
	if want := map[string]string{"again": "yes", "once": "yes", "last": "yes", "again-saw": "3"}; fmt.Sprint(cm.Labels) != fmt.Sprint(want) {
		t.Errorf("labels %v, want %v", cm.Labels, want)
	}
	if len(steps) != 2 || steps[0].Reinvoked || !steps[1].Reinvoked || steps[1].Patch == "" {
		t.Errorf("steps %+v, want the webhooks' pass and a reinvoked one that patched", steps)
	}
}

// TestStepsWithNothingConfiguredAreSkipped: once started, a step with no
// configuration of its kind (no webhook configurations, no policy
// bindings) does not handle requests, so the chain does not look for its
// patch; a configuration created later makes it act again.
func TestStepsWithNothingConfiguredAreSkipped(t *testing.T) {
	srv, ca := webhook(t)
	client := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	p, err := New()
	if err != nil {
		t.Fatal(err)
	}
	p.RegisterKind(corev1.SchemeGroupVersion.WithResource("configmaps"), "", corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	attrs := &admission.Attributes{
		Operation: admission.Create, Resource: corev1.SchemeGroupVersion.WithResource("configmaps"),
		Kind: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Namespace: "default", Name: "c",
		Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}}, UserName: "alice",
	}
	steps := map[string]admission.Handler{"webhook": p.Mutating().(admission.Handler), "policy": p.MutatingPolicy().(admission.Handler)}
	for name, h := range steps {
		if !h.Handles(attrs) {
			t.Errorf("before Start the mutating %s step does not handle a create: its gate would not hold it", name)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start(ctx, t, p, client)
	for name, h := range steps {
		if h.Handles(attrs) {
			t.Errorf("with nothing configured the mutating %s step handles a create", name)
		}
	}
	none, fail := admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.Fail
	u := srv.URL + "/mutate"
	if _, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "m"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "mutate.test", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: ca},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
			SideEffects: &none, FailurePolicy: &fail, AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !steps["webhook"].Handles(attrs) {
		if time.Now().After(deadline) {
			t.Fatal("the mutating webhook step does not handle a create after a configuration was made")
		}
		time.Sleep(10 * time.Millisecond)
	}
	got, err := admission.NewChain(p.MutatingPolicy(), p.Mutating()).Run(ctx, attrs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 2 || got[0].Patch != "" || !strings.Contains(got[1].Patch, "mutated") || attrs.Object.(*corev1.ConfigMap).Labels["mutated"] != "yes" {
		t.Errorf("steps %+v, labels %v: want the idle policy step unchanged and the webhook's patch", got, attrs.Object.(*corev1.ConfigMap).Labels)
	}
}
