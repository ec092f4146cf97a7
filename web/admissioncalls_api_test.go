package web

import (
	"context"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// TestRequestsPageShowsARealPolicyDenial makes a real API server evaluate
// a ValidatingAdmissionPolicy that refuses ConfigMaps with a "forbidden"
// key: the refused create's row on the requests page shows the policy and
// its binding as a denied sub-stage of admission, with the policy's
// message, read from the API server's own audit annotation.
func TestRequestsPageShowsARealPolicyDenial(t *testing.T) {
	e := newAPIEnv(t)
	ctx, cancel := context.WithTimeout(e.ctx, deadline)
	defer cancel()
	reg := e.client.AdmissionregistrationV1()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "no-forbidden-key"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "!has(object.data) || !('forbidden' in object.data)", Message: "the key <forbidden> is not allowed"}},
		},
	}
	if _, err := reg.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "no-forbidden-key-binding"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: "no-forbidden-key", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	if _, err := reg.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The policy takes effect once the API server's policy informers
	// have it.
	n := 0
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		n++
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bad-" + itoa(int64(n)), Namespace: "default"}, Data: map[string]string{"forbidden": "x"}}
		_, err := e.client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
		return err != nil && strings.Contains(err.Error(), "is not allowed"), nil
	})
	if err != nil {
		t.Fatalf("the policy never denied: %v", err)
	}

	// The audit event reaches the dashboard's log a moment after the
	// response (the API server records it when the handler returns, and
	// the feed copies it over), so the page is read until the call shows.
	var doc *html.Node
	var raw string
	var denied []*html.Node
	for end := time.Now().Add(deadline); ; {
		doc, raw = e.get(t, "/requests?failed=1")
		denied = denied[:0]
		for _, c := range byTestID(doc, "admission-call") {
			if attr(c, "data-kind") == "ValidatingAdmissionPolicy" && attr(c, "data-result") == "denied" {
				denied = append(denied, c)
			}
		}
		if len(denied) > 0 || time.Now().After(end) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if strings.Contains(raw, "<forbidden>") {
		t.Fatal("the policy's message is not escaped")
	}
	if len(denied) == 0 {
		t.Fatalf("no denied ValidatingAdmissionPolicy call on the requests page:\n%s", text(doc))
	}
	for _, c := range denied {
		if name := text(byTestID(c, "admission-call-name")[0]); name != "no-forbidden-key / no-forbidden-key-binding" {
			t.Errorf("call names %q", name)
		}
		if msg := byTestID(c, "admission-call-message"); len(msg) != 1 || !strings.Contains(text(msg[0]), "the key <forbidden> is not allowed") {
			t.Errorf("call message %v", msg)
		}
	}
}
