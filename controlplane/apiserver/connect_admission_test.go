package apiserver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/glassplane/glassplane/controlplane/apiserver"
)

// TestConnectAdmission: pods/attach, exec and portforward go through
// admission as CONNECT with their options as the object, as kube-apiserver
// runs it: a policy matching CONNECT on pods/attach refuses an attach
// with its message before any node is reached, and sees the options
// (a policy on stdin); exec, which it does not match, goes on to the node.
func TestConnectAdmission(t *testing.T) {
	env := newEnvWith(t, func(c *apiserver.Config) { c.NoDynamicAdmission = false })
	startDynamicAdmission(t, env)
	ctx := ctxT(t)
	ns := env.namespace(t)
	if _, err := env.client.CoreV1().Pods(ns).Create(ctx, testPod("web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	reg := env.client.AdmissionregistrationV1()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "no-attach-with-stdin"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Connect},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/attach"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.kind == 'PodAttachOptions' && (!has(object.stdin) || !object.stdin)", Message: "attaching to pod with stdin is not allowed"}},
		},
	}
	if _, err := reg.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "no-attach-with-stdin"},
		Spec:       admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	if _, err := reg.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	base := "/api/v1/namespaces/" + ns + "/pods/web/"
	var body string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		var resp *http.Response
		resp, body = env.do(t, http.MethodPost, base+"attach?container=c&stdin=true&stdout=true", "", nil)
		return resp.StatusCode == http.StatusUnprocessableEntity, nil
	})
	if err != nil || !strings.Contains(body, "attaching to pod with stdin is not allowed") {
		t.Fatalf("attach with stdin: %v %s", err, body)
	}
	// Without stdin the policy passes it: the node is next (this server
	// has no client identity for node agents).
	for _, path := range []string{"attach?container=c&stdout=true", "exec?container=c&command=true&stdout=true"} {
		resp, body := env.do(t, http.MethodPost, base+path, "", nil)
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "no client identity for node agents") {
			t.Errorf("POST %s: %d %s, want past admission to the node", path, resp.StatusCode, body)
		}
	}
}

// TestStreamingSubresourcesNeedRights: a user without rights asking for a
// pod's log over a WebSocket, or to attach, is refused by RBAC with 403
// before any upgrade; a malformed option is a 400.
func TestStreamingSubresourcesNeedRights(t *testing.T) {
	// A server of its own: the shared RBAC server's data lives in the
	// directory of the test that started it first.
	env := newEnvWith(t, func(c *apiserver.Config) { c.RBAC = true })
	cfg, err := env.ca.RESTConfig(env.url, "nobody")
	if err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, "/api/v1/namespaces/default/pods/web/log"},
		{http.MethodPost, "/api/v1/namespaces/default/pods/web/attach?stdout=true"},
	} {
		req, _ := http.NewRequest(tc.method, env.url+tc.path, nil)
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		req.Header.Set("Sec-WebSocket-Protocol", "binary.k8s.io")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s %s as a user without rights: %d, want 403", tc.method, tc.path, resp.StatusCode)
		}
	}
	resp, body := env.do(t, http.MethodPost, "/api/v1/namespaces/default/pods/web/attach?stdin=maybe", "", nil)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `invalid stdin \"maybe\"`) {
		t.Errorf("attach with stdin=maybe: %d %s, want 400", resp.StatusCode, body)
	}
}
