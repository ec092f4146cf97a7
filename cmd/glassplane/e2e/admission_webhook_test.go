package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// webhookServer is an admission webhook written for the tests: HTTPS on
// 127.0.0.1 with a certificate of a CA the test makes. /mutate adds the
// label webhook-added=yes, /deny refuses objects named denied-*, /slow
// answers after 3 s, /allow allows everything. It records the requests.
type webhookServer struct {
	URL      string
	CABundle string // base64 PEM, as a caBundle field in YAML wants it
	CAPEM    []byte
	mu       sync.Mutex
	reviews  []admissionv1.AdmissionRequest
	srv      *http.Server
}

func startWebhookServer(t testing.TB) *webhookServer {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "webhook-test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	w := &webhookServer{URL: "https://" + ln.Addr().String(), CABundle: base64.StdEncoding.EncodeToString(caPEM), CAPEM: caPEM}
	w.srv = &http.Server{
		Handler:   http.HandlerFunc(w.serve),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}},
	}
	go w.srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { w.srv.Close() })
	return w
}

func (w *webhookServer) serve(rw http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(rw, "bad review", http.StatusBadRequest)
		return
	}
	req := review.Request
	w.mu.Lock()
	w.reviews = append(w.reviews, *req)
	w.mu.Unlock()
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	switch r.URL.Path {
	case "/mutate":
		patch := `[{"op":"add","path":"/metadata/labels/webhook-added","value":"yes"}]`
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = []byte(patch), &pt
	case "/deny":
		if strings.HasPrefix(req.Name, "denied-") {
			resp.Allowed = false
			resp.Result = &metav1.Status{Message: "objects named denied-* are not welcome", Code: http.StatusForbidden}
		}
	case "/slow":
		time.Sleep(3 * time.Second)
	}
	review.Response = resp
	review.Request = nil
	rw.Header().Set("Content-Type", "application/json")
	json.NewEncoder(rw).Encode(&review)
}

// reviewOf returns the last request the server saw for the named object.
func (w *webhookServer) reviewOf(name string) (admissionv1.AdmissionRequest, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := len(w.reviews) - 1; i >= 0; i-- {
		if w.reviews[i].Name == name {
			return w.reviews[i], true
		}
	}
	return admissionv1.AdmissionRequest{}, false
}

// closedURL is an HTTPS URL on a loopback port nothing listens on.
func closedURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "https://" + addr
}

// TestAdmissionWebhooks drives kube-apiserver's webhook plugins as wired into
// Glassplane with real kubectl: a mutating webhook patches pods, a validating
// one denies with its message, failurePolicy Fail and Ignore when the server
// is down, a timeout, dry run, and a ValidatingAdmissionPolicy that denies.
// Every configuration is limited to the test's namespace, so other tests on
// the shared cluster never meet them.
func TestAdmissionWebhooks(t *testing.T) {
	c := SharedCluster(t)
	wh := startWebhookServer(t)
	const ns = "admission-webhooks"
	c.MustKubectl(t, "", "create", "namespace", ns)
	t.Cleanup(func() {
		c.Kubectl(t, "", "delete", "mutatingwebhookconfiguration,validatingwebhookconfiguration", "-l", "e2e=admission-webhooks", "--wait=false")
		c.Kubectl(t, "", "delete", "validatingadmissionpolicy,validatingadmissionpolicybinding", "-l", "e2e=admission-webhooks", "--wait=false")
		c.Kubectl(t, "", "delete", "namespace", ns, "--wait=false")
	})
	down := closedURL(t)
	scope := fmt.Sprintf(`
  namespaceSelector:
    matchLabels:
      kubernetes.io/metadata.name: %s
  sideEffects: None
  admissionReviewVersions: ["v1"]`, ns)
	c.MustKubectl(t, fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: e2e-label-pods
  labels: {e2e: admission-webhooks}
webhooks:
- name: label.glassplane.test
  clientConfig:
    url: %[1]s/mutate
    caBundle: %[2]s
  rules:
  - operations: ["CREATE"]
    apiGroups: [""]
    apiVersions: ["v1"]
    resources: ["pods"]%[3]s
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: e2e-checks
  labels: {e2e: admission-webhooks}
webhooks:
- name: deny.glassplane.test
  clientConfig:
    url: %[1]s/deny
    caBundle: %[2]s
  rules:
  - operations: ["CREATE"]
    apiGroups: [""]
    apiVersions: ["v1"]
    resources: ["configmaps"]%[3]s
- name: fail.glassplane.test
  failurePolicy: Fail
  clientConfig:
    url: %[4]s/down
    caBundle: %[2]s
  matchConditions:
  - name: fail-only
    expression: "object.metadata.name.startsWith('fail-')"
  rules:
  - operations: ["CREATE"]
    apiGroups: [""]
    apiVersions: ["v1"]
    resources: ["configmaps"]%[3]s
- name: ignore.glassplane.test
  failurePolicy: Ignore
  clientConfig:
    url: %[4]s/down
    caBundle: %[2]s
  matchConditions:
  - name: ignore-only
    expression: "object.metadata.name.startsWith('ignore-')"
  rules:
  - operations: ["CREATE"]
    apiGroups: [""]
    apiVersions: ["v1"]
    resources: ["configmaps"]%[3]s
- name: slow.glassplane.test
  timeoutSeconds: 1
  clientConfig:
    url: %[1]s/slow
    caBundle: %[2]s
  matchConditions:
  - name: slow-only
    expression: "object.metadata.name.startsWith('slow-')"
  rules:
  - operations: ["CREATE"]
    apiGroups: [""]
    apiVersions: ["v1"]
    resources: ["configmaps"]%[3]s
`, wh.URL, wh.CABundle, scope, down), "apply", "-f", "-")

	// The plugins see new configurations through their informers.
	Eventually(t, 30*time.Second, "the deny webhook to be called", func() error {
		out, err := c.Kubectl(t, "", "-n", ns, "create", "configmap", "denied-probe")
		if err == nil {
			c.Kubectl(t, "", "-n", ns, "delete", "configmap", "denied-probe")
			return fmt.Errorf("created: %s", out)
		}
		return nil
	})

	t.Run("mutating webhook labels pods with a JSON patch", func(t *testing.T) {
		c.MustKubectl(t, `apiVersion: v1
kind: Pod
metadata:
  name: labelled
  labels: {app: web}
spec:
  schedulerName: e2e-nobody
  containers: [{name: c, image: registry.k8s.io/pause:3.10}]
`, "-n", ns, "apply", "-f", "-")
		got := c.MustKubectl(t, "", "-n", ns, "get", "pod", "labelled", "-o", "jsonpath={.metadata.labels.webhook-added}")
		if got != "yes" {
			t.Fatalf("label webhook-added = %q, want yes", got)
		}
	})

	t.Run("validating webhook denies with its message", func(t *testing.T) {
		out, err := c.Kubectl(t, "", "-n", ns, "create", "configmap", "denied-one")
		want := `admission webhook "deny.glassplane.test" denied the request: objects named denied-* are not welcome`
		if err == nil || !strings.Contains(out, want) {
			t.Fatalf("kubectl create = %v, %q; want an error with %q", err, out, want)
		}
		if out, err := c.Kubectl(t, "", "-n", ns, "get", "configmap", "denied-one"); err == nil {
			t.Fatalf("the denied configmap was stored: %s", out)
		}
		c.MustKubectl(t, "", "-n", ns, "create", "configmap", "welcome")
	})

	t.Run("failurePolicy Fail refuses when the webhook is down", func(t *testing.T) {
		out, err := c.Kubectl(t, "", "-n", ns, "create", "configmap", "fail-one")
		want := `Internal error occurred: failed calling webhook "fail.glassplane.test"`
		if err == nil || !strings.Contains(out, want) {
			t.Fatalf("kubectl create = %v, %q; want an error with %q", err, out, want)
		}
	})

	t.Run("failurePolicy Ignore admits when the webhook is down", func(t *testing.T) {
		c.MustKubectl(t, "", "-n", ns, "create", "configmap", "ignore-one")
	})

	t.Run("a webhook slower than timeoutSeconds fails the request", func(t *testing.T) {
		// The server answers (allowing) after 3 s: only the 1 s timeout
		// can make this request fail.
		out, err := c.Kubectl(t, "", "-n", ns, "create", "configmap", "slow-one")
		want := `failed calling webhook "slow.glassplane.test"`
		if err == nil || !strings.Contains(out, want) || !(strings.Contains(out, "deadline exceeded") || strings.Contains(out, "Timeout exceeded")) {
			t.Fatalf("kubectl create = %v, %q; want an error with %q and the timeout", err, out, want)
		}
	})

	t.Run("dry run reaches webhooks with sideEffects None and stores nothing", func(t *testing.T) {
		c.MustKubectl(t, "", "-n", ns, "create", "configmap", "dry-one", "--dry-run=server")
		review, ok := wh.reviewOf("dry-one")
		if !ok || review.DryRun == nil || !*review.DryRun {
			t.Fatalf("the webhook saw %+v (found %v); want a dry-run review", review.DryRun, ok)
		}
		if out, err := c.Kubectl(t, "", "-n", ns, "get", "configmap", "dry-one"); err == nil {
			t.Fatalf("the dry-run configmap was stored: %s", out)
		}
	})

	t.Run("ValidatingAdmissionPolicy denies with its message", func(t *testing.T) {
		c.MustKubectl(t, fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: e2e-max-replicas
  labels: {e2e: admission-webhooks}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["deployments"]
  validations:
  - expression: "object.spec.replicas <= 5"
    message: "replicas must be no greater than 5"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: e2e-max-replicas-binding
  labels: {e2e: admission-webhooks}
spec:
  policyName: e2e-max-replicas
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels:
        kubernetes.io/metadata.name: %s
`, ns), "apply", "-f", "-")
		want := `ValidatingAdmissionPolicy 'e2e-max-replicas' with binding 'e2e-max-replicas-binding' denied request: replicas must be no greater than 5`
		Eventually(t, 30*time.Second, "the policy to deny", func() error {
			out, err := c.Kubectl(t, "", "-n", ns, "create", "deployment", "big", "--image=registry.k8s.io/pause:3.10", "--replicas=6")
			if err == nil {
				c.Kubectl(t, "", "-n", ns, "delete", "deployment", "big")
				return fmt.Errorf("created: %s", out)
			}
			if !strings.Contains(out, want) {
				return fmt.Errorf("kubectl said %q; want %q", out, want)
			}
			return nil
		})
		c.MustKubectl(t, "", "-n", ns, "create", "deployment", "small", "--image=registry.k8s.io/pause:3.10", "--replicas=0")
	})

	t.Run("the validatingadmissionpolicy-status controller type-checks policies", func(t *testing.T) {
		c.MustKubectl(t, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: e2e-type-warning
  labels: {e2e: admission-webhooks}
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["deployments"]
  validations:
  - expression: "object.spec.replicas > '5'"
`, "apply", "-f", "-")
		Eventually(t, 30*time.Second, "status.typeChecking of both policies", func() error {
			out, err := c.Kubectl(t, "", "get", "validatingadmissionpolicy", "e2e-type-warning", "-o",
				`jsonpath={.status.observedGeneration} {.status.typeChecking.expressionWarnings[0].fieldRef}: {.status.typeChecking.expressionWarnings[0].warning}`)
			if err != nil || !strings.HasPrefix(out, "1 spec.validations[0].expression: apps/v1, Kind=Deployment: ") ||
				!strings.Contains(out, "found no matching overload for '_>_' applied to '(int, string)'") {
				return fmt.Errorf("status of e2e-type-warning: %v %q", err, out)
			}
			out, err = c.Kubectl(t, "", "get", "validatingadmissionpolicy", "e2e-max-replicas", "-o", `jsonpath={.status.observedGeneration} {.status.typeChecking}`)
			if err != nil || out != "1 {}" {
				return fmt.Errorf("status of e2e-max-replicas: %v %q, want observed generation 1 and no warnings", err, out)
			}
			return nil
		})
	})

	t.Run("the webhook receives the v1 Pod in an AdmissionReview v1", func(t *testing.T) {
		review, ok := wh.reviewOf("labelled")
		if !ok || review.Operation != admissionv1.Create {
			t.Fatalf("the mutating webhook never saw the pod: %+v", review)
		}
		var pod unstructured.Unstructured
		if err := json.Unmarshal(review.Object.Raw, &pod); err != nil {
			t.Fatal(err)
		}
		if pod.GetKind() != "Pod" || pod.GetAPIVersion() != "v1" {
			t.Fatalf("the webhook got %s %s, want v1 Pod", pod.GetAPIVersion(), pod.GetKind())
		}
	})
}

// TestAdmissionRegistrationValidation sends bad webhook configurations and
// policies and expects kube-apiserver's 422 field paths and messages, with
// nothing stored.
func TestAdmissionRegistrationValidation(t *testing.T) {
	c := SharedCluster(t)
	for _, tc := range []struct {
		name, manifest string
		want           []string
	}{
		{
			name: "webhook faults",
			manifest: `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: e2e-bad-webhooks
webhooks:
- name: plain.glassplane.test
  clientConfig:
    url: http://127.0.0.1:9443/x
  admissionReviewVersions: ["v1"]
  timeoutSeconds: 31
- name: plain.glassplane.test
  sideEffects: Some
  clientConfig:
    url: https://127.0.0.1:9443/x
    service: {namespace: default, name: hook}
  admissionReviewVersions: ["v2"]
  matchConditions:
  - name: broken
    expression: "object.metadata.name.startsWith("
`,
			want: []string{
				`The ValidatingWebhookConfiguration "e2e-bad-webhooks" is invalid`,
				`webhooks[0].clientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]`,
				`webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun`,
				`webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds`,
				`webhooks[1].clientConfig: Required value: exactly one of url or service is required`,
				`webhooks[1].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"`,
				`webhooks[1].admissionReviewVersions: Invalid value: ["v2"]: must include at least one of v1, v1beta1`,
				`webhooks[1].name: Duplicate value: "plain.glassplane.test"`,
				`webhooks[1].matchConditions[0].expression: Invalid value: "object.metadata.name.startsWith(": compilation failed`,
			},
		},
		{
			name: "policy with a bad expression",
			manifest: `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: e2e-bad-policy
spec:
  validations:
  - expression: "object.spec.replicas <="
`,
			want: []string{
				`The ValidatingAdmissionPolicy "e2e-bad-policy" is invalid`,
				`spec.matchConstraints: Required value`,
				`spec.validations[0].expression: Invalid value: "object.spec.replicas <=": compilation failed`,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := c.Kubectl(t, tc.manifest, "create", "-f", "-")
			if err == nil {
				t.Fatalf("kubectl create succeeded: %s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the error lacks %q:\n%s", w, out)
				}
			}
		})
	}
	if out, err := c.Kubectl(t, "", "get", "validatingwebhookconfiguration", "e2e-bad-webhooks"); err == nil {
		t.Fatalf("the invalid configuration was stored: %s", out)
	}
}
