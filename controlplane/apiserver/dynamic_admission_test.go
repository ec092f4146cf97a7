package apiserver_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/glassplane/glassplane/controlplane/apiserver"
	dynamicadmission "github.com/glassplane/glassplane/controlplane/apiserver/admission/dynamic"
	"github.com/glassplane/glassplane/controlplane/apiserver/audit"
)

// startDynamicAdmission runs env's webhooks and policies for the test.
func startDynamicAdmission(t *testing.T, env *testEnv) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); env.server.RunDynamicAdmission(ctx, env.config) }()
	t.Cleanup(func() { cancel(); <-done })
}

// TestWritesWaitForDynamicAdmission: a server whose webhooks and policies
// have not started holds a write for dynamic.ReadyWait and then refuses it
// with 403, as kube-apiserver's plugins do (before, writes passed them
// after every restart); webhook configurations stay writable; a held write
// goes through once they start.
func TestWritesWaitForDynamicAdmission(t *testing.T) {
	env := newEnvWith(t, func(c *apiserver.Config) { c.NoDynamicAdmission = false })
	ctx := context.Background()
	defer func(d time.Duration) { dynamicadmission.ReadyWait = d }(dynamicadmission.ReadyWait)
	dynamicadmission.ReadyWait = 200 * time.Millisecond

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "early", Namespace: "default"}}
	_, err := env.client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "not yet ready to handle request") {
		t.Fatalf("a write before the webhooks started: %v, want 403 not yet ready to handle request", err)
	}
	if _, err := env.client.CoreV1().ConfigMaps("default").Get(ctx, "early", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the refused ConfigMap: %v, want not found", err)
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "mend-me"}}
	if _, err := env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, vwc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a webhook configuration before the webhooks started: %v", err)
	}

	dynamicadmission.ReadyWait = time.Minute
	created := make(chan error, 1)
	go func() {
		_, err := env.client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
		created <- err
	}()
	time.Sleep(100 * time.Millisecond)
	startDynamicAdmission(t, env)
	if err := <-created; err != nil {
		t.Fatalf("a write held until the webhooks started: %v", err)
	}
}

// admissionWebhook is a TLS AdmissionReview server: /mutate adds the label
// mutated=yes, /deny refuses ConfigMaps named denied-*, /unknown-field adds
// spec.injected to a custom resource. It returns the server and its CA.
func admissionWebhook(t *testing.T) (*httptest.Server, []byte) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		pt := admissionv1.PatchTypeJSONPatch
		switch r.URL.Path {
		case "/mutate":
			resp.Patch, resp.PatchType = []byte(`[{"op":"add","path":"/metadata/labels","value":{"mutated":"yes"}}]`), &pt
		case "/unknown-field":
			resp.Patch, resp.PatchType = []byte(`[{"op":"add","path":"/spec/injected","value":"by the webhook"},{"op":"add","path":"/spec/size","value":3}]`), &pt
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

// webhookFor is a webhook on resources in namespace ns calling path.
func webhookFor(srv *httptest.Server, ca []byte, path, group, resource, ns string) (admissionregistrationv1.WebhookClientConfig, []admissionregistrationv1.RuleWithOperations, *metav1.LabelSelector) {
	url := srv.URL + path
	return admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
		[]admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{resource}},
		}},
		&metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}
}

// auditedStages returns the dynamic admission stages of the create of name.
func auditedStages(t *testing.T, env *testEnv, resource, name string) (*audit.Event, []dynamicadmission.Stage) {
	t.Helper()
	recs := env.audit.Find(func(ev *audit.Event) bool {
		return ev.Verb == "create" && ev.ObjectRef != nil && ev.ObjectRef.Resource == resource && ev.ObjectRef.Name == name
	})
	if len(recs) == 0 {
		t.Fatalf("no audit event for the create of %s %s", resource, name)
	}
	ev := recs[len(recs)-1].Event
	var stages []dynamicadmission.Stage
	if err := json.Unmarshal([]byte(ev.Annotations[audit.AnnotationDynamicAdmission]), &stages); err != nil {
		t.Fatalf("annotation %s = %q: %v", audit.AnnotationDynamicAdmission, ev.Annotations[audit.AnnotationDynamicAdmission], err)
	}
	return ev, stages
}

func TestDynamicAdmissionStagesInAudit(t *testing.T) {
	env := newEnv(t)
	startDynamicAdmission(t, env)
	ctx := ctxT(t)
	ns := env.namespace(t)
	srv, ca := admissionWebhook(t)
	none := admissionregistrationv1.SideEffectClassNone
	mcc, rules, nsSel := webhookFor(srv, ca, "/mutate", "", "configmaps", ns)
	if _, err := env.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "label-adder"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "mutate.test.glassplane.io", ClientConfig: mcc, Rules: rules, NamespaceSelector: nsSel,
			SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vcc, rules, nsSel := webhookFor(srv, ca, "/deny", "", "configmaps", ns)
	if _, err := env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "denier"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "deny.test.glassplane.io", ClientConfig: vcc, Rules: rules, NamespaceSelector: nsSel,
			SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Once the plugins have the configurations, a ConfigMap gets the label.
	var name string
	for i := 0; ; i++ {
		name = "fine-" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		cm, err := env.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cm.Labels["mutated"] == "yes" {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the mutating webhook never labelled a ConfigMap")
		}
	}
	ev, stages := auditedStages(t, env, "configmaps", name)
	if len(stages) != 2 {
		t.Fatalf("stages = %+v, want the mutating and the validating webhook", stages)
	}
	m, v := stages[0], stages[1]
	if m.Kind != "MutatingWebhook" || m.Configuration != "label-adder" || m.Name != "mutate.test.glassplane.io" || m.Result != "patched" ||
		string(m.Patch) != `[{"op":"add","path":"/metadata/labels","value":{"mutated":"yes"}}]` || m.DurationMicros <= 0 {
		t.Errorf("mutating stage = %+v (patch %s), want label-adder/mutate.test.glassplane.io patched with its patch", m, m.Patch)
	}
	if v.Kind != "ValidatingWebhook" || v.Configuration != "denier" || v.Name != "deny.test.glassplane.io" || v.Result != "allowed" || v.Message != "" {
		t.Errorf("validating stage = %+v, want denier/deny.test.glassplane.io allowed", v)
	}
	if ev.Annotations["mutation.webhook.admission.k8s.io/round_0_index_0"] == "" {
		t.Errorf("annotations %v lack upstream's mutation.webhook.admission.k8s.io/round_0_index_0", ev.Annotations)
	}

	_, err := env.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "denied-one"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `admission webhook "deny.test.glassplane.io" denied the request: no denied-* here`) {
		t.Fatalf("create denied-one: %v, want the webhook's 403", err)
	}
	if _, err := env.client.CoreV1().ConfigMaps(ns).Get(ctx, "denied-one", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused ConfigMap was stored: %v", err)
	}
	_, stages = auditedStages(t, env, "configmaps", "denied-one")
	if len(stages) != 2 || stages[0].Result != "patched" || stages[1].Result != "denied" || stages[1].Message != "no denied-* here" ||
		stages[1].Name != "deny.test.glassplane.io" || stages[1].Patch != nil {
		t.Errorf("stages of the refused create = %+v, want patched then denied with the webhook's message", stages)
	}
}

func TestMutatingAdmissionPolicyLabelsConfigMaps(t *testing.T) {
	env := newEnv(t)
	startDynamicAdmission(t, env)
	ctx := ctxT(t)
	ns := env.namespace(t)
	policies := env.client.AdmissionregistrationV1().MutatingAdmissionPolicies()

	// Upstream's validation: a policy needs mutations and a reinvocation policy.
	_, err := policies.Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "empty"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{MatchConstraints: &admissionregistrationv1.MatchResources{
			ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}}},
		}},
	}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("create an empty policy: %v, want 422", err)
	}
	for _, want := range []string{`spec.mutations: Required value: mutations must contain at least one item`, `spec.reinvocationPolicy: Required value`,
		`spec.matchConstraints.resourceRules.operations: Unsupported value: "DELETE": supported values: "*", "CONNECT", "CREATE", "UPDATE"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q lacks %q", err, want)
		}
	}
	if _, err := policies.Get(ctx, "empty", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused policy was stored: %v", err)
	}

	if _, err := policies.Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "add-team-label"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				}}},
			},
			Mutations: []admissionregistrationv1.Mutation{
				{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration, ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{
					Expression: `Object{metadata: Object.metadata{labels: {"team": "platform"}}}`,
				}},
				{PatchType: admissionregistrationv1.PatchTypeJSONPatch, JSONPatch: &admissionregistrationv1.JSONPatch{
					Expression: `[JSONPatch{op: "add", path: "/data", value: {"patched": "by-policy"}}]`,
				}},
			},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.client.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "add-team-label-here"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{
			PolicyName: "add-team-label",
			MatchResources: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var cm *corev1.ConfigMap
	for i := 0; ; i++ {
		cm, err = env.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "cm-"}}, metav1.CreateOptions{})
		switch {
		case apierrors.IsServiceUnavailable(err) && ctx.Err() == nil:
			// The plugin has not read the OpenAPI of ConfigMaps yet.
			continue
		case err != nil:
			t.Fatal(err)
		}
		if cm.Labels["team"] != "" {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the policy never labelled a ConfigMap")
		}
	}
	if cm.Labels["team"] != "platform" || cm.Data["patched"] != "by-policy" {
		t.Errorf("created ConfigMap labels %v data %v, want team=platform from the apply configuration and patched=by-policy from the JSON patch", cm.Labels, cm.Data)
	}
	stored, err := env.client.CoreV1().ConfigMaps(ns).Get(ctx, cm.Name, metav1.GetOptions{})
	if err != nil || stored.Labels["team"] != "platform" {
		t.Errorf("stored ConfigMap = %v, %v, want the label", stored, err)
	}
	_, stages := auditedStages(t, env, "configmaps", cm.Name)
	if len(stages) != 1 || stages[0].Kind != "MutatingAdmissionPolicy" || stages[0].Configuration != "add-team-label" ||
		stages[0].Name != "add-team-label-here" || stages[0].Result != "patched" || !strings.Contains(string(stages[0].Patch), `"team":"platform"`) {
		t.Errorf("stages = %+v, want the policy's binding patched", stages)
	}
}

func TestWebhookFieldsOutsideTheSchemaArePruned(t *testing.T) {
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
	createEstablished(t, ext, widgetCRD("prune.glassplane.io"))
	srv, ca := admissionWebhook(t)
	none := admissionregistrationv1.SideEffectClassNone
	cc, rules, nsSel := webhookFor(srv, ca, "/unknown-field", "prune.glassplane.io", "widgets", ns)
	if _, err := env.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "injector"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "inject.test.glassplane.io", ClientConfig: cc, Rules: rules, NamespaceSelector: nsSel,
			SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	widgets := dyn.Resource(schema.GroupVersionResource{Group: "prune.glassplane.io", Version: "v1", Resource: "widgets"}).Namespace(ns)
	var got *unstructured.Unstructured
	for i := 0; ; i++ {
		w := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "prune.glassplane.io/v1", "kind": "Widget",
			"metadata": map[string]any{"generateName": "w-"},
			"spec":     map[string]any{"size": int64(1)},
		}}
		if got, err = widgets.Create(ctx, w, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size == 3 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the webhook never patched a Widget")
		}
	}
	for what, obj := range map[string]*unstructured.Unstructured{"created": got} {
		if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "injected"); found {
			t.Errorf("%s widget keeps the webhook's spec.injected, which the schema does not declare: %v", what, obj.Object["spec"])
		}
		if color, _, _ := unstructured.NestedString(obj.Object, "spec", "color"); color != "blue" {
			t.Errorf("%s widget spec = %v, want the schema's default color", what, obj.Object["spec"])
		}
	}
	stored, err := widgets.Get(ctx, got.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(stored.Object, "spec", "injected"); found {
		t.Errorf("stored widget keeps spec.injected: %v", stored.Object["spec"])
	}
	if size, _, _ := unstructured.NestedInt64(stored.Object, "spec", "size"); size != 3 {
		t.Errorf("stored widget spec = %v, want the webhook's size 3", stored.Object["spec"])
	}
}
