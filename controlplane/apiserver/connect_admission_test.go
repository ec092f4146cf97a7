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
