package apiserver_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	dynamicadmission "github.com/glassplane/glassplane/controlplane/apiserver/admission/dynamic"
	"github.com/glassplane/glassplane/controlplane/storage"
)

// serviceWebhook is a TLS AdmissionReview server on 127.0.0.1 that keeps
// every request it answers. /mutate adds the label mutated=yes, /validate
// refuses objects named denied-*, any other path allows.
type serviceWebhook struct {
	srv *httptest.Server
	// ca is the PEM of the server's self-signed certificate, valid for
	// 127.0.0.1 and the Service names given to newServiceWebhook.
	ca []byte

	// mu guards reviews, the requests received, by path.
	mu      sync.Mutex
	reviews map[string][]admissionv1.AdmissionRequest
}

// newServiceWebhook starts the server with a certificate for 127.0.0.1
// and dnsNames (a Service's <name>.<namespace>.svc, the name the API
// server's client checks).
func newServiceWebhook(t *testing.T, dnsNames ...string) *serviceWebhook {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test webhook"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    dnsNames, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := &serviceWebhook{reviews: map[string][]admissionv1.AdmissionRequest{}}
	w.srv = &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(w.serve)}}
	w.srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	w.srv.StartTLS()
	t.Cleanup(w.srv.Close)
	w.ca = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return w
}

func (w *serviceWebhook) serve(rw http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(rw, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	w.reviews[r.URL.Path] = append(w.reviews[r.URL.Path], *review.Request)
	w.mu.Unlock()
	resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	switch r.URL.Path {
	case "/mutate":
		var obj metav1.PartialObjectMetadata
		_ = json.Unmarshal(review.Request.Object.Raw, &obj)
		patch := `[{"op":"add","path":"/metadata/labels","value":{"mutated":"yes"}}]`
		if obj.Labels != nil {
			patch = `[{"op":"add","path":"/metadata/labels/mutated","value":"yes"}]`
		}
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = []byte(patch), &pt
	case "/validate":
		if strings.HasPrefix(review.Request.Name, "denied-") {
			resp.Allowed = false
			resp.Result = &metav1.Status{Message: "no denied-* here", Code: http.StatusForbidden}
		}
	}
	review.Response, review.Request = resp, nil
	_ = json.NewEncoder(rw).Encode(&review)
}

// calls returns the requests path received for the object named name.
func (w *serviceWebhook) calls(path, name string) []admissionv1.AdmissionRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	var got []admissionv1.AdmissionRequest
	for _, r := range w.reviews[path] {
		if r.Name == name {
			got = append(got, r)
		}
	}
	return got
}

// url is the webhook's clientConfig.url for path.
func (w *serviceWebhook) url(path string) *string { return ptr.To(w.srv.URL + path) }

// port is the port the webhook listens on.
func (w *serviceWebhook) port() int32 {
	return int32(w.srv.Listener.Addr().(*net.TCPAddr).Port)
}

// configMapRules are webhook rules for operations on ConfigMaps.
func configMapRules(ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: ops,
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}
}

// inNamespace selects the namespace ns only.
func inNamespace(ns string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}
}

// webhookEndpointSlice is the EndpointSlice of the Service svc with one
// endpoint, 127.0.0.1 at port, ready or not.
func webhookEndpointSlice(svc string, port int32, ready bool) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: svc + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{"127.0.0.1"},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)},
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
}

// TestWebhookThroughService: webhooks whose clientConfig names a Service
// (no selector, an EndpointSlice to the test server) are called at its
// ready endpoint with the server name <service>.<namespace>.svc, get the
// AdmissionReview kube-apiserver sends and decide; once the slice has no
// ready endpoint a create fails as kube-apiserver's aggregator routing has
// it (500, failed calling webhook ... no endpoints available for service)
// with failurePolicy Fail, and passes the webhook with Ignore; either way
// the audited stage says why the webhook was not called.
func TestWebhookThroughService(t *testing.T) {
	env := newEnv(t)
	startDynamicAdmission(t, env)
	ctx := ctxT(t)
	ns := env.namespace(t)
	const svcName = "admission"
	hook := newServiceWebhook(t, svcName+"."+ns+".svc")

	if _, err := env.client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: svcName},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
			Name: "https", Port: 443, TargetPort: intstr.FromInt32(hook.port()), Protocol: corev1.ProtocolTCP,
		}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slices := env.client.DiscoveryV1().EndpointSlices(ns)
	if _, err := slices.Create(ctx, webhookEndpointSlice(svcName, hook.port(), true), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	service := func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{
			Service:  &admissionregistrationv1.ServiceReference{Namespace: ns, Name: svcName, Path: ptr.To(path), Port: ptr.To[int32](443)},
			CABundle: hook.ca,
		}
	}
	none := admissionregistrationv1.SideEffectClassNone
	fail := admissionregistrationv1.Fail
	mutating := env.client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	validating := env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := mutating.Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "svc-mutate"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "mutate.svc.test.glassplane.io", ClientConfig: service("/mutate"), Rules: configMapRules(admissionregistrationv1.Create),
			NamespaceSelector: inNamespace(ns), SideEffects: &none, FailurePolicy: &fail, AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := validating.Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "svc-validate"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "validate.svc.test.glassplane.io", ClientConfig: service("/validate"), Rules: configMapRules(admissionregistrationv1.Create),
			NamespaceSelector: inNamespace(ns), SideEffects: &none, FailurePolicy: &fail, AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := env.client.CoreV1().ConfigMaps(ns)
	// The API server finds the Service and its EndpointSlice through its
	// informers, soon after their creates, not at once: until then a call
	// fails closed (service "admission" not found).
	var lastErr error
	t.Cleanup(func() {
		if t.Failed() && lastErr != nil {
			t.Logf("the last probe's create: %v", lastErr)
		}
	})
	eventually(t, "both webhooks to see a ConfigMap", func() bool {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-"}}, metav1.CreateOptions{})
		if err != nil {
			lastErr = err
			return false
		}
		return cm.Labels["mutated"] == "yes" && len(hook.calls("/validate", cm.Name)) == 1
	})

	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "through-service"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Labels["mutated"] != "yes" {
		t.Errorf("created ConfigMap labels = %v, want the mutating webhook's mutated=yes", cm.Labels)
	}
	for _, path := range []string{"/mutate", "/validate"} {
		calls := hook.calls(path, "through-service")
		if len(calls) != 1 {
			t.Fatalf("%s got %d AdmissionReviews for through-service, want 1", path, len(calls))
		}
		r := calls[0]
		if r.UID == "" || r.Kind != (metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}) ||
			r.Resource != (metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"}) ||
			r.Operation != admissionv1.Create || r.Namespace != ns || r.Name != "through-service" || r.DryRun == nil || *r.DryRun {
			t.Errorf("%s AdmissionReview request = uid %q kind %v resource %v operation %s %s/%s dryRun %v, want a CREATE of v1 ConfigMap %s/through-service, not dry run",
				path, r.UID, r.Kind, r.Resource, r.Operation, r.Namespace, r.Name, r.DryRun, ns)
		}
	}
	// The validating webhook sees the mutated object.
	var validated corev1.ConfigMap
	if err := json.Unmarshal(hook.calls("/validate", "through-service")[0].Object.Raw, &validated); err != nil || validated.Labels["mutated"] != "yes" {
		t.Errorf("the validating webhook's object = %+v (%v), want the mutated label", validated.ObjectMeta, err)
	}

	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "denied-through-service"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `admission webhook "validate.svc.test.glassplane.io" denied the request: no denied-* here`) {
		t.Fatalf("create denied-through-service: %v, want the webhook's 403", err)
	}

	// No ready endpoint: failurePolicy Fail refuses the write as
	// kube-apiserver with --enable-aggregator-routing does.
	if _, err := slices.Update(ctx, webhookEndpointSlice(svcName, hook.port(), false), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	noEndpoints := `no endpoints available for service "` + svcName + `"`
	attempt := 0
	unreachable := func(webhook string) {
		t.Helper()
		var name string
		var err error
		eventually(t, webhook+" to fail", func() bool {
			attempt++
			name = fmt.Sprintf("unreachable-%d", attempt)
			_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			return err != nil && strings.Contains(err.Error(), webhook)
		})
		want := []string{
			`Internal error occurred: failed calling webhook "` + webhook + `": failed to call webhook: Post "https://` + svcName + `.` + ns + `.svc:443/`,
			noEndpoints,
		}
		if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), want[0]) || !strings.Contains(err.Error(), want[1]) {
			t.Errorf("create without a ready endpoint: %v, want 500 with %q and %q", err, want[0], want[1])
		}
		_, stages := auditedStages(t, env, "configmaps", name)
		if last := stages[len(stages)-1]; last.Name != webhook || last.Result != dynamicadmission.ResultError || last.Message != "the webhook was not called: "+noEndpoints {
			t.Errorf("audited stages of the refused create = %+v, want %s's call last, an error saying the service has no endpoints", stages, webhook)
		}
	}
	unreachable("mutate.svc.test.glassplane.io")

	mc, err := mutating.Get(ctx, "svc-mutate", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mc.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	if _, err := mutating.Update(ctx, mc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Now the mutating webhook is passed and the validating one fails.
	unreachable("validate.svc.test.glassplane.io")
	vc, err := validating.Get(ctx, "svc-validate", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vc.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	if _, err := validating.Update(ctx, vc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var ignored string
	for i := 0; ; i++ {
		ignored = fmt.Sprintf("ignored-%d", i)
		if cm, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ignored}}, metav1.CreateOptions{}); err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no create passed both webhooks with failurePolicy Ignore: %v", err)
		}
	}
	if cm.Labels["mutated"] != "" {
		t.Errorf("ConfigMap created past an unreachable mutating webhook has labels %v, want none", cm.Labels)
	}
	if n := len(hook.calls("/mutate", cm.Name)) + len(hook.calls("/validate", cm.Name)); n != 0 {
		t.Errorf("the webhooks got %d AdmissionReviews without a ready endpoint", n)
	}
	ev, stages := auditedStages(t, env, "configmaps", ignored)
	for i, want := range []string{"mutate.svc.test.glassplane.io", "validate.svc.test.glassplane.io"} {
		if len(stages) != 2 || stages[i].Name != want || stages[i].Result != dynamicadmission.ResultErrorIgnored ||
			stages[i].Message != "the webhook was not called: "+noEndpoints {
			t.Errorf("audited stages = %+v, want %s's call ignored, saying the service has no endpoints", stages, want)
		}
	}
	for key, want := range map[string]string{
		"failed-open.mutation.webhook.admission.k8s.io/round_0_index_0":   "mutate.svc.test.glassplane.io",
		"failed-open.validating.webhook.admission.k8s.io/round_0_index_0": "validate.svc.test.glassplane.io",
	} {
		if ev.Annotations[key] != want {
			t.Errorf("audit annotation %s = %q, want upstream's %q", key, ev.Annotations[key], want)
		}
	}
}

// TestWebhookObjectSelector: a webhook with objectSelector is sent only the
// objects whose labels it selects; on UPDATE, as upstream's matcher, when
// either the old or the new object has them.
func TestWebhookObjectSelector(t *testing.T) {
	env := newEnv(t)
	startDynamicAdmission(t, env)
	ctx := ctxT(t)
	ns := env.namespace(t)
	hook := newServiceWebhook(t)
	none := admissionregistrationv1.SideEffectClassNone
	if _, err := env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "selected"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "selected.test.glassplane.io", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: hook.url("/selected"), CABundle: hook.ca},
			Rules:             configMapRules(admissionregistrationv1.Create, admissionregistrationv1.Update),
			NamespaceSelector: inNamespace(ns), ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"admit": "checked"}},
			SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := env.client.CoreV1().ConfigMaps(ns)
	checked := map[string]string{"admit": "checked"}
	eventually(t, "the webhook to see a labelled ConfigMap", func() bool {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Labels: checked}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create a probe: %v", err)
		}
		return len(hook.calls("/selected", cm.Name)) == 1
	})

	create := func(name string, labels map[string]string) *corev1.ConfigMap {
		t.Helper()
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		return cm
	}
	plain := create("plain", map[string]string{"admit": "unchecked"})
	labelled := create("labelled", checked)
	if n := len(hook.calls("/selected", "plain")); n != 0 {
		t.Errorf("the webhook got %d AdmissionReviews for a ConfigMap its objectSelector does not select, want 0", n)
	}
	if calls := hook.calls("/selected", "labelled"); len(calls) != 1 || calls[0].Operation != admissionv1.Create {
		t.Errorf("the webhook got %+v for the labelled ConfigMap, want one CREATE", calls)
	}

	plain.Data = map[string]string{"still": "unselected"}
	if _, err := cms.Update(ctx, plain, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := len(hook.calls("/selected", "plain")); n != 0 {
		t.Errorf("the webhook got %d AdmissionReviews for an update that neither the old nor the new object is selected by, want 0", n)
	}
	// The update drops the label: the old object is selected, so the
	// webhook is called.
	labelled.Labels = nil
	if _, err := cms.Update(ctx, labelled, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	calls := hook.calls("/selected", "labelled")
	if len(calls) != 2 || calls[1].Operation != admissionv1.Update {
		t.Fatalf("the webhook got %+v for the labelled ConfigMap, want its CREATE and the UPDATE that removes the label", calls)
	}
	var old, updated corev1.ConfigMap
	if err := json.Unmarshal(calls[1].OldObject.Raw, &old); err != nil || old.Labels["admit"] != "checked" {
		t.Errorf("the UPDATE's oldObject = %+v (%v), want the label", old.ObjectMeta, err)
	}
	if err := json.Unmarshal(calls[1].Object.Raw, &updated); err != nil || len(updated.Labels) != 0 {
		t.Errorf("the UPDATE's object = %+v (%v), want no labels", updated.ObjectMeta, err)
	}
}

// TestWebhookSideEffectsOnDryRun: webhooks with sideEffects None or
// NoneOnDryRun are called for dry-run writes and told so; one with Some or
// Unknown (which only configurations stored before admissionregistration
// v1 can hold: v1 refuses them) makes a dry-run write fail with upstream's
// 400, and is called for a real one.
func TestWebhookSideEffectsOnDryRun(t *testing.T) {
	env := newEnv(t)
	startDynamicAdmission(t, env)
	ctx := ctxT(t)
	ns := env.namespace(t)
	hook := newServiceWebhook(t)
	none := admissionregistrationv1.SideEffectClassNone
	noneOnDryRun := admissionregistrationv1.SideEffectClassNoneOnDryRun
	mutating := env.client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	validating := env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := mutating.Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "none-on-dry-run"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "noneondryrun.test.glassplane.io", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: hook.url("/mutate"), CABundle: hook.ca},
			Rules: configMapRules(admissionregistrationv1.Create), NamespaceSelector: inNamespace(ns),
			SideEffects: &noneOnDryRun, AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := validating.Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "none"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "none.test.glassplane.io", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: hook.url("/none"), CABundle: hook.ca},
			Rules: configMapRules(admissionregistrationv1.Create), NamespaceSelector: inNamespace(ns),
			SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := env.client.CoreV1().ConfigMaps(ns)
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	var cm *corev1.ConfigMap
	eventually(t, "both webhooks to see a dry-run create", func() bool {
		var err error
		if cm, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dry"}}, dryRun); err != nil {
			t.Fatalf("dry-run create: %v", err)
		}
		return len(hook.calls("/mutate", "dry")) > 0 && len(hook.calls("/none", "dry")) > 0
	})
	if cm.Labels["mutated"] != "yes" {
		t.Errorf("dry-run created ConfigMap labels = %v, want the NoneOnDryRun webhook's mutated=yes", cm.Labels)
	}
	for _, path := range []string{"/mutate", "/none"} {
		calls := hook.calls(path, "dry")
		if r := calls[len(calls)-1]; r.DryRun == nil || !*r.DryRun || r.Operation != admissionv1.Create {
			t.Errorf("%s AdmissionReview request: operation %s dryRun %v, want a dry-run CREATE", path, r.Operation, r.DryRun)
		}
	}
	if _, err := cms.Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the dry-run ConfigMap: %v, want not found", err)
	}

	// admissionregistration.k8s.io/v1 refuses Some and Unknown, as upstream.
	some := admissionregistrationv1.SideEffectClassSome
	_, err := validating.Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "side-effects"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "some.test.glassplane.io", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: hook.url("/some"), CABundle: hook.ca},
			Rules: configMapRules(admissionregistrationv1.Create), NamespaceSelector: inNamespace(ns),
			SideEffects: &some, AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{})
	if want := `webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"`; !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("create a webhook with sideEffects Some: %v, want 422 with %q", err, want)
	}

	// Configurations stored by an older version of the API keep them.
	// (none's webhook is rewritten in etcd: its name says which one is in
	// effect.)
	for _, class := range []admissionregistrationv1.SideEffectClass{admissionregistrationv1.SideEffectClassSome, admissionregistrationv1.SideEffectClassUnknown} {
		t.Run(string(class), func(t *testing.T) {
			name := strings.ToLower(string(class)) + ".test.glassplane.io"
			path := "/" + strings.ToLower(string(class))
			rewriteStoredWebhook(t, env, "validatingwebhookconfigurations", "none", map[string]any{
				"name": name, "sideEffects": string(class), "clientConfig": map[string]any{"url": *hook.url(path), "caBundle": hook.ca},
			})
			want := `admission webhook "` + name + `" does not support dry run`
			var err error
			eventually(t, "a dry-run create to meet "+name, func() bool {
				_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dry"}}, dryRun)
				return err != nil && strings.Contains(err.Error(), name)
			})
			if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), want) {
				t.Errorf("dry-run create past sideEffects %s: %v, want 400 %q", class, err, want)
			}
			if n := len(hook.calls(path, "dry")); n != 0 {
				t.Errorf("the sideEffects %s webhook got %d dry-run AdmissionReviews, want 0", class, n)
			}
			wet := "wet-" + strings.ToLower(string(class))
			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: wet}}, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create %s: %v", wet, err)
			}
			if calls := hook.calls(path, wet); len(calls) != 1 || calls[0].DryRun == nil || *calls[0].DryRun {
				t.Errorf("the sideEffects %s webhook got %+v for a create, want one AdmissionReview, not dry run", class, calls)
			}
		})
	}
}

// rewriteStoredWebhook sets fields of the first webhook of a webhook
// configuration in etcd, past the API's validation, as an older API
// version could have stored it.
func rewriteStoredWebhook(t *testing.T, env *testEnv, resource, name string, fields map[string]any) {
	t.Helper()
	_, err := env.store.GuaranteedUpdate(context.Background(), storage.Key(resource, "", name), func(cur *storage.KeyValue) ([]byte, error) {
		var obj map[string]any
		if err := json.Unmarshal(cur.Value, &obj); err != nil {
			return nil, err
		}
		hooks, _ := obj["webhooks"].([]any)
		if len(hooks) == 0 {
			t.Fatalf("stored %s %s has no webhooks: %s", resource, name, cur.Value)
		}
		hook := hooks[0].(map[string]any)
		for k, v := range fields {
			hook[k] = v
		}
		return json.Marshal(obj)
	})
	if err != nil {
		t.Fatalf("rewrite the stored %s %s: %v", resource, name, err)
	}
}
