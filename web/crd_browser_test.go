package web

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glassplane/glassplane/api/v1alpha1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/glassplane/glassplane/web/webtest"
)

// TestBrowserCustomResources drives chromium against a dashboard in front
// of a real API server: a custom resource's object page follows it live
// (a patch through the API adds a timeline row and refreshes its YAML),
// the CRD page renders, and the requests page draws a request's admission
// webhook and policy calls as they arrive, a hostile patch as text.
func TestBrowserCustomResources(t *testing.T) {
	e := newAPIEnv(t)
	ctx := webtest.Browser(t)
	out := webtest.OutputDir(t)
	e.createCRD(t, widgetsCRD())
	widgets := e.dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).Namespace("default")
	if _, err := widgets.Create(e.ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1", "namespace": "default"},
		"spec":     map[string]any{"replicas": int64(1), "color": "blue"},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("a widget's page follows it live", func(t *testing.T) {
		webtest.Navigate(t, ctx, e.srv.URL+"/objects/widgets.example.com/default/w1")
		webtest.WaitSelector(t, ctx, webtest.TestID("timeline-row"))
		webtest.WaitLive(t, ctx)
		before := webtest.Eval[int](t, ctx, `document.querySelectorAll('[data-testid="timeline-row"]').length`)
		patch := []byte(`{"spec":{"color":"red"}}`)
		if _, err := widgets.Patch(e.ctx, "w1", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		webtest.WaitFor(t, ctx, `document.querySelectorAll('[data-testid="timeline-row"]').length > `+itoa(int64(before)))
		webtest.WaitFor(t, ctx, `document.getElementById("object-yaml").textContent.includes("color: red")`)
		webtest.Screenshot(t, ctx, filepath.Join(out, "dashboard-custom-resource.png"))
	})

	t.Run("the CRD page", func(t *testing.T) {
		webtest.Navigate(t, ctx, e.srv.URL+"/crds/widgets.example.com")
		webtest.WaitSelector(t, ctx, webtest.TestID("schema-field")+`[data-path="spec.replicas"][data-required="true"]`)
		webtest.WaitSelector(t, ctx, webtest.TestID("crd-list-link")+`[data-count="1"]`)
		webtest.Screenshot(t, ctx, filepath.Join(out, "dashboard-crd.png"))
	})

	t.Run("admission calls arrive on the requests page", func(t *testing.T) {
		hostileJSON, _ := json.Marshal(hostileName)
		webtest.Navigate(t, ctx, e.srv.URL+"/requests")
		webtest.WaitLive(t, ctx)
		e.ring.Add(auditEvent("create", "widgets", "", "default", "w2", "kubernetes-admin", time.Now(), map[string]string{
			v1alpha1.AnnotationStages: "authentication,authorization,admission,etcd",
			AnnotationDynamicAdmission: `[{"kind":"MutatingWebhook","configuration":"labels","name":"label.example.com","durationMicros":1520,"result":"patched","patch":[{"op":"add","path":"/metadata/labels/x","value":` +
				string(hostileJSON) + `}]},{"kind":"ValidatingAdmissionPolicy","configuration":"p","name":"p-binding","durationMicros":12,"result":"allowed"}]`,
		}))
		calls := `document.querySelectorAll('[data-testid="request"][data-verb="create"] [data-testid="admission-call"]')`
		webtest.WaitFor(t, ctx, calls+`.length === 2`)
		if got := webtest.Eval[string](t, ctx, calls+`[0].dataset.result + " " + `+calls+`[1].dataset.kind`); got != "patched ValidatingAdmissionPolicy" {
			t.Errorf("calls read %q", got)
		}
		if n := webtest.Eval[int](t, ctx, `document.querySelectorAll("img").length`); n != 0 {
			t.Errorf("found %d <img> elements", n)
		}
		patch := webtest.Eval[string](t, ctx, `document.querySelector('[data-testid="admission-call-patch"]').textContent`)
		if !strings.Contains(patch, hostileName) {
			t.Errorf("patch text %q", patch)
		}
		webtest.Screenshot(t, ctx, filepath.Join(out, "dashboard-admission-calls.png"))
	})
}
