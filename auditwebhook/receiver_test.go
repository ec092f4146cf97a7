package auditwebhook

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// TestReceiver: a batch is delivered in order; what is not an EventList is
// refused with what was wrong.
func TestReceiver(t *testing.T) {
	var got []auditv1.Event
	srv := httptest.NewServer(&Receiver{Deliver: func(evs []auditv1.Event) { got = append(got, evs...) }})
	defer srv.Close()
	post := func(body string) (int, string) {
		t.Helper()
		resp, err := http.Post(srv.URL, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, _ := post(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[
		{"level":"Metadata","auditID":"a1","stage":"ResponseComplete","verb":"create","requestURI":"/api/v1/namespaces/default/pods","objectRef":{"resource":"pods","namespace":"default","name":"web"}},
		{"level":"Metadata","auditID":"a2","stage":"ResponseComplete","verb":"get","requestURI":"/api/v1/namespaces/default/pods/web"}]}`)
	if code != http.StatusOK || len(got) != 2 || got[0].AuditID != "a1" || got[1].Verb != "get" || got[0].ObjectRef.Name != "web" || got[0].Kind != "Event" {
		t.Fatalf("%d, got %+v", code, got)
	}
	for body, want := range map[string]string{
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1"}`:          "not an audit.k8s.io/v1 EventList",
		`{"kind":"EventList","apiVersion":"audit.k8s.io/v1beta1"}`: "audit.k8s.io/v1beta1, Kind=EventList, not an audit.k8s.io/v1 EventList",
		`not json`: "not an audit.k8s.io/v1 EventList in JSON",
		`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":7}`: "not an audit.k8s.io/v1 EventList in JSON",
	} {
		if code, msg := post(body); code != http.StatusBadRequest || !strings.Contains(msg, want) {
			t.Errorf("%s: %d %q, want 400 %q", body, code, msg, want)
		}
	}
	if len(got) != 2 {
		t.Errorf("refused batches delivered events: %d", len(got))
	}
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET = %d", resp.StatusCode)
	}
}
