package apiserver_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/glassplane/glassplane/controlplane/apiserver/audit"
)

// TestAuditPolicyRequestResponseKeepsResponses checks that a policy rule at
// RequestResponse records the response body, and that a Secret's never is.
func TestAuditPolicyRequestResponseKeepsResponses(t *testing.T) {
	policy, err := audit.ParsePolicy([]byte(`apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: RequestResponse
  resources:
  - group: ""
    resources: ["configmaps", "secrets"]
- level: Metadata
`))
	if err != nil {
		t.Fatal(err)
	}
	shared.audit.SetPolicy(policy)
	t.Cleanup(func() { shared.audit.SetPolicy(nil) })

	ns := shared.namespace(t)
	last := shared.audit.Since(0)
	var seq int64
	if len(last) > 0 {
		seq = last[len(last)-1].Seq
	}
	shared.do(t, http.MethodPost, "/api/v1/namespaces/"+ns+"/configmaps", "application/json",
		strings.NewReader(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"kept"},"data":{"k":"v"}}`))
	shared.do(t, http.MethodPost, "/api/v1/namespaces/"+ns+"/secrets", "application/json",
		strings.NewReader(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"hidden"},"stringData":{"password":"hunter2"}}`))

	var cm, secret *audit.Event
	for _, rec := range shared.audit.Since(seq) {
		ev := rec.Event
		if ev.Verb != "create" || ev.ObjectRef == nil || ev.ObjectRef.Namespace != ns {
			continue
		}
		switch ev.ObjectRef.Name {
		case "kept":
			cm = ev
		case "hidden":
			secret = ev
		}
	}
	if cm == nil || secret == nil {
		t.Fatalf("missing audit events: configmap %v secret %v", cm, secret)
	}
	if cm.ResponseObject == nil || !strings.Contains(string(cm.ResponseObject.Raw), `"kept"`) {
		t.Errorf("RequestResponse did not keep the configmap's response: %+v", cm.ResponseObject)
	}
	if secret.ResponseObject != nil || secret.RequestObject != nil {
		t.Error("a Secret's request or response body was recorded")
	}
}
