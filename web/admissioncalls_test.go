package web

import (
	"strings"
	"testing"
	"time"

	"github.com/glassplane/glassplane/api/v1alpha1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDecodeAdmissionCalls(t *testing.T) {
	tests := []struct {
		name    string
		value   string
		want    []AdmissionCall
		wantErr bool
	}{
		{name: "empty", value: ""},
		{name: "empty array", value: "[]", want: []AdmissionCall{}},
		{
			name: "webhook and policy calls in order",
			value: `[{"kind":"MutatingWebhook","configuration":"add-label","name":"label.example.com","durationMicros":1520,"result":"patched","message":"","patch":[{"op":"add","path":"/metadata/labels/team","value":"a"}]},
			{"kind":"ValidatingAdmissionPolicy","configuration":"replicas-limit","name":"replicas-limit-binding","durationMicros":80,"result":"denied","message":"spec.replicas must be at most 5"}]`,
			want: []AdmissionCall{
				{Kind: "MutatingWebhook", Configuration: "add-label", Name: "label.example.com", DurationMicros: 1520, Result: "patched",
					Patch: []byte(`[{"op":"add","path":"/metadata/labels/team","value":"a"}]`)},
				{Kind: "ValidatingAdmissionPolicy", Configuration: "replicas-limit", Name: "replicas-limit-binding", DurationMicros: 80, Result: "denied", Message: "spec.replicas must be at most 5"},
			},
		},
		{name: "not JSON", value: "patched: [{", wantErr: true},
		{name: "an object, not an array", value: `{"kind":"MutatingWebhook"}`, wantErr: true},
		{name: "a field of the wrong type", value: `[{"kind":"MutatingWebhook","durationMicros":"slow"}]`, wantErr: true},
		{name: "data after the array", value: `[] []`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeAdmissionCalls(tt.value)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if len(got) != len(tt.want) || (got == nil) != (tt.want == nil) {
				t.Fatalf("got %d calls (%#v), want %d", len(got), got, len(tt.want))
			}
			for i := range got {
				g, w := got[i], tt.want[i]
				if g.Kind != w.Kind || g.Configuration != w.Configuration || g.Name != w.Name || g.DurationMicros != w.DurationMicros ||
					g.Result != w.Result || g.Message != w.Message || string(g.Patch) != string(w.Patch) {
					t.Errorf("call %d = %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

func TestAdmissionCallsOnTheAdmissionStage(t *testing.T) {
	ann := map[string]string{
		v1alpha1.AnnotationStages:  "authentication,authorization,admission,etcd",
		AnnotationDynamicAdmission: `[{"kind":"MutatingWebhook","configuration":"c","name":"w.example.com","durationMicros":2500,"result":"patched","patch":[{"op":"add","path":"/metadata/labels/x","value":"<b>"}]},{"kind":"ValidatingWebhook","configuration":"v","name":"deny.example.com","durationMicros":3,"result":"error-ignored","message":"connection refused"}]`,
	}
	ev := &auditv1.Event{Verb: "create", Annotations: ann}
	var admission *struct{}
	for _, s := range stagesOf(ev) {
		if s.Name != "admission" {
			if len(s.Calls) > 0 {
				t.Errorf("stage %s has calls", s.Name)
			}
			continue
		}
		admission = &struct{}{}
		if len(s.Calls) != 2 {
			t.Fatalf("admission calls = %+v, want 2", s.Calls)
		}
		if c := s.Calls[0]; c.Name != "w.example.com" || c.Result != "patched" || c.Duration != "2.5ms" || !strings.Contains(c.Patch, `"value": "<b>"`) {
			t.Errorf("first call = %+v", c)
		}
		if c := s.Calls[1]; c.Result != "error-ignored" || c.Message != "connection refused" || c.Patch != "" {
			t.Errorf("second call = %+v", c)
		}
	}
	if admission == nil {
		t.Fatal("no admission stage")
	}
	ri := requestInfo(ev)
	for _, a := range ri.Admission {
		if a.Plugin == "dynamic" {
			t.Errorf("the calls annotation is listed as a plugin note too: %+v", a)
		}
	}
	if len(ri.Calls) != 2 {
		t.Errorf("request info has %d calls, want 2", len(ri.Calls))
	}

	ann[AnnotationDynamicAdmission] = "not json"
	for _, s := range stagesOf(ev) {
		if s.Name == "admission" && (len(s.Calls) != 0 || !strings.Contains(s.CallsNote, "could not be read")) {
			t.Errorf("a malformed annotation gives calls %+v, note %q", s.Calls, s.CallsNote)
		}
	}
}

// TestRequestsPageShowsAdmissionCalls renders a request whose admission
// called a webhook that patched and a policy that denied: each is a
// sub-stage of admission with its name, duration, result and patch, every
// value escaped; a malformed record shows a note, not a broken page.
func TestRequestsPageShowsAdmissionCalls(t *testing.T) {
	e := newEnv(t)
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	ev := auditEvent("create", "pods", "", "default", "mypod", "kubernetes-admin", t0, map[string]string{
		v1alpha1.AnnotationStages:      "authentication,authorization,admission",
		v1alpha1.AnnotationFailedStage: "admission",
		AnnotationDynamicAdmission: `[{"kind":"MutatingWebhook","configuration":"labels","name":"label.example.com","durationMicros":1520,"result":"patched","patch":[{"op":"add","path":"/metadata/labels/x","value":"<script>alert(1)</script>"}]},` +
			`{"kind":"ValidatingAdmissionPolicy","configuration":"no-latest","name":"no-latest-binding","durationMicros":40,"result":"denied","message":"image tag <latest> is not allowed"}]`,
	})
	ev.ResponseStatus = &metav1.Status{Code: 422, Message: "denied"}
	e.ring.Add(ev)
	bad := auditEvent("create", "pods", "", "default", "other", "kubernetes-admin", t0.Add(time.Second), map[string]string{
		v1alpha1.AnnotationStages:  "authentication,authorization,admission,etcd",
		AnnotationDynamicAdmission: `{"kind":`,
	})
	e.ring.Add(bad)

	doc, raw := e.get(t, "/requests")
	if strings.Contains(raw, "<script>alert(1)") || strings.Contains(raw, "<latest>") {
		t.Fatal("a call's patch or message is not escaped")
	}
	calls := byTestID(doc, "admission-call")
	if len(calls) != 2 {
		t.Fatalf("admission calls = %d, want 2", len(calls))
	}
	if attr(calls[0], "data-kind") != "MutatingWebhook" || attr(calls[0], "data-result") != "patched" {
		t.Errorf("first call %v", calls[0].Attr)
	}
	if got := text(byTestID(calls[0], "admission-call-patch")[0]); !strings.Contains(got, `"/metadata/labels/x"`) {
		t.Errorf("patch %q", got)
	}
	if got := text(byTestID(calls[1], "admission-call-message")[0]); got != "image tag <latest> is not allowed" {
		t.Errorf("denial message %q", got)
	}
	if notes := byTestID(doc, "admission-calls-note"); len(notes) != 1 || !strings.Contains(text(notes[0]), "could not be read") {
		t.Errorf("the malformed record's note: %d notes", len(notes))
	}
}
