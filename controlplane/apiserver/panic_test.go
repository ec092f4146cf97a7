package apiserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/apiserver"
	"github.com/glassplane/glassplane/controlplane/apiserver/admission"
	"github.com/glassplane/glassplane/controlplane/apiserver/audit"
)

// panicky is an admission plugin that panics on ConfigMaps named "panic".
type panicky struct{}

func (panicky) Name() string { return "Panicky" }

func (panicky) Admit(_ context.Context, a *admission.Attributes) error {
	if a.Resource.Resource == "configmaps" && a.Name == "panic" {
		panic("admission blew up")
	}
	return nil
}

// A panic while serving a write (which runs on one of the server's
// long-lived workers) is the request's 500 Status and its audit event's
// Panic stage, and the server goes on serving writes.
func TestWritePanicIsInternalError(t *testing.T) {
	env := newEnvWith(t, func(c *apiserver.Config) { c.Admission = admission.NewChain(panicky{}) })
	ns := env.namespace(t)
	// More panics than the pool has workers: none may be lost to one.
	for range 20 {
		resp, body := env.do(t, http.MethodPost, "/api/v1/namespaces/"+ns+"/configmaps", "application/json",
			strings.NewReader(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"panic"}}`))
		if resp.StatusCode != http.StatusInternalServerError {
			t.Fatalf("a panicking create answered %d, want 500: %s", resp.StatusCode, body)
		}
		var status metav1.Status
		if err := json.Unmarshal([]byte(body), &status); err != nil || status.Kind != "Status" {
			t.Fatalf("a panicking create's body is not a Status (%v): %s", err, body)
		}
		if status.Reason != metav1.StatusReasonInternalError || !strings.Contains(status.Message, "admission blew up") {
			t.Fatalf("a panicking create's Status is %s %q, want InternalError naming the panic", status.Reason, status.Message)
		}
	}
	recs := env.audit.Find(func(ev *audit.Event) bool {
		return ev.Verb == "create" && ev.ObjectRef != nil && ev.ObjectRef.Resource == "configmaps" && ev.ObjectRef.Namespace == ns
	})
	panics := 0
	for _, rec := range recs {
		if rec.Event.Stage == audit.StagePanic && rec.Event.ResponseStatus != nil && rec.Event.ResponseStatus.Code == http.StatusInternalServerError {
			panics++
		}
	}
	if panics != 20 {
		t.Fatalf("the audit log has %d create events at stage Panic with code 500, want 20", panics)
	}
	cm, err := env.client.CoreV1().ConfigMaps(ns).Create(ctxT(t), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "calm"}}, metav1.CreateOptions{})
	if err != nil || cm.UID == "" {
		t.Fatalf("a create after the panics: %v", err)
	}
}
