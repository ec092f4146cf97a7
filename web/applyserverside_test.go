package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// submitApply posts manifest to the apply form as b with the form's extra
// fields and returns the page.
func submitApply(t *testing.T, b *browser, manifest string, fields url.Values) (*http.Response, *html.Node) {
	t.Helper()
	_, form := b.do(http.MethodGet, "/apply", nil)
	m := csrfRE.FindStringSubmatch(form)
	if m == nil {
		t.Fatalf("no CSRF token on the apply form: %s", form)
	}
	fields.Set("_csrf", m[1])
	fields.Set("manifest", manifest)
	resp, body := b.do(http.MethodPost, "/apply", fields, "Origin", b.base, "Sec-Fetch-Site", "same-origin")
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return resp, doc
}

// TestApplyFormServerSide sends manifests through the apply form as
// server-side apply patches to a real API server: a dry run stores
// nothing, an apply by one field manager is recorded in managedFields, a
// second manager's different value is refused with Kubernetes' 409
// message naming the first manager and the field, and force takes the
// field over.
func TestApplyFormServerSide(t *testing.T) {
	e := newAPIEnv(t)
	b := newBrowser(t, e.srv.URL)
	e.login(t, b)
	manifest := func(value string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\ndata:\n  level: \"" + value + "\"\n"
	}
	result := func(t *testing.T, doc *html.Node) (action, msg string) {
		t.Helper()
		rs := byTestID(doc, "apply-result")
		if len(rs) != 1 {
			t.Fatalf("results = %d, want 1; page: %s", len(rs), text(doc))
		}
		if errs := byTestID(rs[0], "apply-result-error"); len(errs) == 1 {
			msg = text(errs[0])
		}
		return attr(rs[0], "data-action"), msg
	}
	cms := e.client.CoreV1().ConfigMaps("default")

	t.Run("a server-side dry run stores nothing", func(t *testing.T) {
		_, doc := submitApply(t, b, manifest("1"), url.Values{"serverSide": {"on"}, "fieldManager": {"alice"}, "action": {"dryrun"}})
		if action, msg := result(t, doc); action != "serverside-applied (server dry run)" || msg != "" {
			t.Fatalf("action %q, error %q", action, msg)
		}
		if _, err := cms.Get(e.ctx, "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("after a dry run: %v", err)
		}
		if box := byTestID(doc, "apply-server-side")[0]; !hasAttr(box, "checked") || attr(byTestID(doc, "apply-field-manager")[0], "value") != "alice" {
			t.Error("the form does not keep its server-side apply fields")
		}
	})
	t.Run("alice applies", func(t *testing.T) {
		_, doc := submitApply(t, b, manifest("1"), url.Values{"serverSide": {"on"}, "fieldManager": {"alice"}, "action": {"apply"}})
		if action, msg := result(t, doc); action != "serverside-applied" || msg != "" {
			t.Fatalf("action %q, error %q", action, msg)
		}
		cm, err := cms.Get(e.ctx, "settings", metav1.GetOptions{})
		if err != nil || cm.Data["level"] != "1" || managerOf(cm.ManagedFields, "alice") != metav1.ManagedFieldsOperationApply {
			t.Fatalf("stored %+v, %v", cm, err)
		}
	})
	t.Run("bob's different value conflicts with alice's", func(t *testing.T) {
		resp, doc := submitApply(t, b, manifest("2"), url.Values{"serverSide": {"on"}, "fieldManager": {"bob"}, "action": {"apply"}})
		_, msg := result(t, doc)
		if resp.StatusCode != http.StatusOK || !strings.Contains(msg, "Apply failed with 1 conflict") || !strings.Contains(msg, `conflict with "alice"`) || !strings.Contains(msg, ".data.level") {
			t.Fatalf("status %d, error %q", resp.StatusCode, msg)
		}
		if cm, _ := cms.Get(e.ctx, "settings", metav1.GetOptions{}); cm.Data["level"] != "1" {
			t.Errorf("the conflict changed the object: %v", cm.Data)
		}
	})
	t.Run("bob forces the conflict", func(t *testing.T) {
		_, doc := submitApply(t, b, manifest("2"), url.Values{"serverSide": {"on"}, "fieldManager": {"bob"}, "force": {"on"}, "action": {"apply"}})
		if action, msg := result(t, doc); action != "serverside-applied" || msg != "" {
			t.Fatalf("action %q, error %q", action, msg)
		}
		cm, err := cms.Get(e.ctx, "settings", metav1.GetOptions{})
		if err != nil || cm.Data["level"] != "2" || managerOf(cm.ManagedFields, "bob") != metav1.ManagedFieldsOperationApply {
			t.Fatalf("stored %+v, %v", cm, err)
		}
	})
	t.Run("a bad field manager gets the API's message", func(t *testing.T) {
		_, doc := submitApply(t, b, manifest("3"), url.Values{"serverSide": {"on"}, "fieldManager": {strings.Repeat("m", 129)}, "action": {"apply"}})
		if _, msg := result(t, doc); !strings.Contains(msg, "fieldManager") {
			t.Errorf("error %q", msg)
		}
	})
}

// managerOf is the operation of manager's managedFields entry, "" when
// it has none.
func managerOf(fields []metav1.ManagedFieldsEntry, manager string) metav1.ManagedFieldsOperationType {
	for _, f := range fields {
		if f.Manager == manager {
			return f.Operation
		}
	}
	return ""
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}
