package apiserver_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/api/v1alpha1"
)

// decisionBody is a SchedulingDecision of pod web with one attempt that
// chose node-b over node-a.
const decisionBody = `{"apiVersion":"glassplane.io/v1alpha1","kind":"SchedulingDecision","metadata":{"name":"web"},"podUID":"uid-web",` +
	`"attempts":[{"attempt":1,"time":"2026-03-01T10:00:00Z","node":"node-b","nodes":2,"feasible":2,"filterPlugins":["NodeResourcesFit"],` +
	`"filter":[{"node":"node-a","passed":true},{"node":"node-b","passed":true}],` +
	`"scores":[{"node":"node-b","plugins":[{"plugin":"NodeResourcesFit","raw":91,"normalized":91,"weight":1,"weighted":91}],"total":91},` +
	`{"node":"node-a","plugins":[{"plugin":"NodeResourcesFit","raw":40,"normalized":40,"weight":1,"weighted":40}],"total":40}],` +
	`"message":"Successfully assigned default/web to node-b"}]}`

// TestSchedulingDecisions: glassplane.io/v1alpha1 schedulingdecisions are
// stored as they are, under the group's own prefix in etcd, listed with
// kubectl's columns, and served with every verb of a stored resource.
func TestSchedulingDecisions(t *testing.T) {
	env := shared
	ns := env.namespace(t)
	base := "/apis/glassplane.io/v1alpha1/namespaces/" + ns + "/schedulingdecisions"

	resp, body := env.do(t, http.MethodPost, base, "application/json", strings.NewReader(decisionBody))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create = %d: %s", resp.StatusCode, body)
	}
	var created v1alpha1.SchedulingDecision
	if err := json.Unmarshal([]byte(body), &created); err != nil {
		t.Fatal(err)
	}
	if created.Namespace != ns || created.UID == "" || created.ResourceVersion == "" || created.PodUID != "uid-web" || len(created.Attempts) != 1 || len(created.Attempts[0].Scores) != 2 {
		t.Errorf("created %+v", created)
	}

	kv, err := env.store.Get(ctxT(t), "/registry/glassplane.io/schedulingdecisions/"+ns+"/web")
	if err != nil {
		t.Fatalf("the record is not at its etcd key: %v", err)
	}
	if !strings.Contains(string(kv.Value), `"kind":"SchedulingDecision"`) || !strings.Contains(string(kv.Value), `"podUID":"uid-web"`) {
		t.Errorf("stored value %.200s", kv.Value)
	}

	resp, body = env.do(t, http.MethodGet, base+"/web", "", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"weighted":91`) {
		t.Errorf("get = %d: %.300s", resp.StatusCode, body)
	}

	req, err := http.NewRequest(http.MethodGet, env.url+base, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	tresp, err := env.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var table metav1.Table
	err = json.NewDecoder(tresp.Body).Decode(&table)
	tresp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if got := strings.Join(cols, ","); got != "Name,Node,Attempts,Last Attempt,Age,Pod UID,Message" {
		t.Errorf("columns %s", got)
	}
	if len(table.Rows) != 1 || table.Rows[0].Cells[0] != "web" || table.Rows[0].Cells[1] != "node-b" || table.Rows[0].Cells[2] != float64(1) || table.Rows[0].Cells[5] != "uid-web" {
		t.Errorf("rows %+v", table.Rows)
	}

	created.Attempts = append(created.Attempts, v1alpha1.SchedulingAttempt{Attempt: 2, Nodes: 2, Message: "0/2 nodes are available"})
	update, err := json.Marshal(created)
	if err != nil {
		t.Fatal(err)
	}
	if resp, body := env.do(t, http.MethodPut, base+"/web", "application/json", strings.NewReader(string(update))); resp.StatusCode != http.StatusOK {
		t.Errorf("update = %d: %s", resp.StatusCode, body)
	}
	if resp, body := env.do(t, http.MethodPut, base+"/web", "application/json", strings.NewReader(string(update))); resp.StatusCode != http.StatusConflict {
		t.Errorf("update from a stale resourceVersion = %d: %s", resp.StatusCode, body)
	}
	if resp, body := env.do(t, http.MethodPatch, base+"/web", "application/merge-patch+json", strings.NewReader(`{"droppedAttempts":3}`)); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"droppedAttempts":3`) {
		t.Errorf("patch = %d: %.300s", resp.StatusCode, body)
	}
	if resp, body := env.do(t, http.MethodDelete, base+"/web", "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("delete = %d: %s", resp.StatusCode, body)
	}
	if _, err := env.store.Get(ctxT(t), "/registry/glassplane.io/schedulingdecisions/"+ns+"/web"); err == nil {
		t.Error("the record's key is still in etcd after the delete")
	}
}

// TestSchedulingDecisionValidation: a record must be named as a pod, name
// its pod's uid and hold well-formed attempts; otherwise 422 with the
// field paths, as kube-apiserver words it.
func TestSchedulingDecisionValidation(t *testing.T) {
	env := shared
	ns := env.namespace(t)
	base := "/apis/glassplane.io/v1alpha1/namespaces/" + ns + "/schedulingdecisions"
	tests := []struct {
		name   string
		body   string
		fields []string
	}{
		{"a name no pod can have", `{"metadata":{"name":"Web_1"},"podUID":"u"}`, []string{"metadata.name"}},
		{"no pod uid", `{"metadata":{"name":"web"}}`, []string{"podUID"}},
		{"bad counts and nodes", `{"metadata":{"name":"web"},"podUID":"u","droppedAttempts":-1,"attempts":[{"attempt":0,"time":null,"nodes":-2,"feasible":0,` +
			`"filter":[{"node":"","passed":true},{"node":"b","passed":false},{"node":"c","passed":true,"plugin":"P"}],` +
			`"scores":[{"node":"","plugins":[{"plugin":"","weight":-1}],"total":0}]}]}`,
			[]string{"droppedAttempts", "attempts[0].attempt", "attempts[0].nodes", "attempts[0].filter[0].node", "attempts[0].filter[1].plugin",
				"attempts[0].filter[2].plugin", "attempts[0].scores[0].node", "attempts[0].scores[0].plugins[0].plugin", "attempts[0].scores[0].plugins[0].weight"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := env.do(t, http.MethodPost, base, "application/json", strings.NewReader(`{"apiVersion":"glassplane.io/v1alpha1","kind":"SchedulingDecision",`+tt.body[1:]))
			if resp.StatusCode != http.StatusUnprocessableEntity {
				t.Fatalf("create = %d: %s", resp.StatusCode, body)
			}
			var st metav1.Status
			if err := json.Unmarshal([]byte(body), &st); err != nil {
				t.Fatal(err)
			}
			if st.Reason != metav1.StatusReasonInvalid || st.Details == nil || st.Details.Group != "glassplane.io" || st.Details.Kind != "SchedulingDecision" {
				t.Errorf("status %+v", st)
			}
			var got []string
			for _, c := range st.Details.Causes {
				got = append(got, c.Field)
			}
			if strings.Join(got, " ") != strings.Join(tt.fields, " ") {
				t.Errorf("causes on %v, want %v (%s)", got, tt.fields, st.Message)
			}
			if !strings.HasPrefix(st.Message, `SchedulingDecision.glassplane.io "`) {
				t.Errorf("message %q", st.Message)
			}
		})
	}
}
