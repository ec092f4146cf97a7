package web

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/scheduler/explain"
	"github.com/glassplane/glassplane/controlplane/storage"
	"github.com/glassplane/glassplane/web/webtest"
)

var testFilterPlugins = []string{"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit"}

// twoAttempts is a record of a pod that first fit nowhere, then fit on
// node-b and node-c and went to node-b; one node has a hostile name.
func twoAttempts(p *corev1.Pod, at time.Time) explain.History {
	failed := explain.Decision{
		Attempt: 1, Time: metav1.NewTime(at), Pod: p.Namespace + "/" + p.Name, Nodes: 2, FilterPlugins: testFilterPlugins,
		Filter: []explain.NodeFilter{
			{Node: "node-a", Plugin: "TaintToleration", Reason: "node(s) had untolerated taint {dedicated: gpu}"},
			{Node: hostileName, Plugin: "NodeResourcesFit", Reason: "Insufficient cpu"},
		},
		Message: "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {dedicated: gpu}.",
	}
	score := func(node string, fit, balanced int64) explain.NodeScore {
		return explain.NodeScore{Node: node, Total: 300 + fit + balanced, Plugins: []explain.PluginScore{
			{Plugin: "TaintToleration", Raw: 0, Normalized: 100, Weight: 3, Weighted: 300},
			{Plugin: "NodeResourcesFit", Raw: fit, Normalized: fit, Weight: 1, Weighted: fit},
			{Plugin: "NodeResourcesBalancedAllocation", Raw: balanced, Normalized: balanced, Weight: 1, Weighted: balanced},
		}}
	}
	bound := explain.Decision{
		Attempt: 2, Time: metav1.NewTime(at.Add(3 * time.Second)), Pod: p.Namespace + "/" + p.Name, Node: "node-b", Nodes: 4, Feasible: 2,
		FilterPlugins: testFilterPlugins,
		Filter: []explain.NodeFilter{
			{Node: "node-a", Plugin: "TaintToleration", Reason: "node(s) had untolerated taint {dedicated: gpu}"},
			{Node: "node-b", Passed: true},
			{Node: "node-c", Passed: true},
			{Node: hostileName, Plugin: "NodeResourcesFit", Reason: "Insufficient cpu"},
		},
		Scores:  []explain.NodeScore{score("node-b", 91, 93), score("node-c", 45, 80)},
		Message: "Successfully assigned default/web to node-b",
	}
	return explain.History{Pod: p.Namespace + "/" + p.Name, UID: string(p.UID), Attempts: []explain.Decision{failed, bound}}
}

// putRecord stores h as the pod's decision record.
func (e *env) putRecord(t *testing.T, p *corev1.Pod, h explain.History, label bool) {
	t.Helper()
	data, _, err := explain.EncodeHistory(h, 0)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: explain.RecordNamespace, Name: explain.RecordName(p.Namespace, p.Name)},
		BinaryData: map[string][]byte{explain.RecordKey: data},
	}
	if label {
		cm.Labels = explain.RecordLabels(p.Namespace, p.Name, string(p.UID))
	}
	e.put(t, storage.Key("configmaps", explain.RecordNamespace, cm.Name), cm)
}

func TestSchedulerPage(t *testing.T) {
	e := newEnv(t)
	p := pod("default", "web", "node-b", corev1.PodRunning)
	e.put(t, "/registry/pods/default/web", p)
	e.putRecord(t, p, twoAttempts(p, time.Now().Add(-time.Hour)), true)

	t.Run("the newest attempt as a matrix", func(t *testing.T) {
		doc, body := e.get(t, "/scheduler/default/web")
		if n := len(byTestID(doc, "sched-attempt")); n != 2 {
			t.Errorf("%d attempts listed, want 2", n)
		}
		if got := attr(byTestID(doc, "sched-matrix-view")[0], "data-attempt"); got != "2" {
			t.Errorf("showing attempt %s, want the newest, 2", got)
		}
		rows := byTestID(doc, "sched-row")
		if len(rows) != 4 {
			t.Fatalf("%d rows, want 4 nodes", len(rows))
		}
		want := []struct{ node, passed, rejectedAt, winner string }{
			{"node-b", "true", "-1", "true"}, {"node-c", "true", "-1", "false"},
			{"node-a", "false", "2", "false"}, {hostileName, "false", "5", "false"},
		}
		for i, w := range want {
			r := rows[i]
			if attr(r, "data-node") != w.node || attr(r, "data-passed") != w.passed || attr(r, "data-rejected-at") != w.rejectedAt || attr(r, "data-winner") != w.winner {
				t.Errorf("row %d: node %q passed %s rejected at %s winner %s; want %+v", i, attr(r, "data-node"), attr(r, "data-passed"), attr(r, "data-rejected-at"), attr(r, "data-winner"), w)
			}
		}
		// node-a: passed NodeUnschedulable and NodeName, failed TaintToleration, skipped the rest.
		var states []string
		for _, c := range byTestID(rows[2], "sched-filter-cell") {
			states = append(states, attr(c, "data-state"))
		}
		if got := strings.Join(states, ","); got != "pass,pass,fail,skip,skip,skip" {
			t.Errorf("node-a filter cells %s", got)
		}
		if why := text(byTestID(rows[2], "sched-why")[0]); why != "TaintToleration: node(s) had untolerated taint {dedicated: gpu}" {
			t.Errorf("node-a reason %q", why)
		}
		cells := byTestID(rows[0], "sched-score-cell")
		if len(cells) != 3 || attr(cells[1], "data-raw") != "91" || attr(cells[1], "data-weighted") != "91" || attr(cells[0], "data-weighted") != "300" {
			t.Errorf("node-b score cells %d", len(cells))
		}
		if total := strings.TrimSpace(text(byTestID(rows[0], "sched-total")[0])); total != "484" {
			t.Errorf("node-b total %q, want 484", total)
		}
		if strings.Contains(body, "<img src=x") {
			t.Error("the hostile node name is not escaped")
		}
	})
	t.Run("an earlier attempt", func(t *testing.T) {
		doc, _ := e.get(t, "/scheduler/default/web?attempt=1")
		if n := len(byTestID(doc, "sched-row")); n != 2 {
			t.Errorf("%d rows in attempt 1, want 2", n)
		}
		if n := len(byTestID(doc, "sched-score-cell")); n != 0 {
			t.Errorf("%d score cells in a failed attempt", n)
		}
		if msg := text(byTestID(doc, "sched-message")[0]); !strings.HasPrefix(msg, "0/2 nodes are available") {
			t.Errorf("message %q", msg)
		}
	})
	t.Run("the pod page links here", func(t *testing.T) {
		doc, _ := e.get(t, "/objects/pods/default/web")
		links := byTestID(doc, "object-scheduler-link")
		if len(links) != 1 || attr(links[0], "href") != "/scheduler/default/web" {
			t.Errorf("links %d", len(links))
		}
	})
	t.Run("status for polling", func(t *testing.T) {
		resp, err := http.Get(e.srv.URL + "/scheduler/default/web?format=json")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st schedulerStatus
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatal(err)
		}
		if st != (schedulerStatus{Attempts: 2, Latest: 2, Node: "node-b"}) {
			t.Errorf("status %+v", st)
		}
	})
	t.Run("bad attempts", func(t *testing.T) {
		for path, code := range map[string]int{"/scheduler/default/web?attempt=9": 404, "/scheduler/default/web?attempt=x": 400} {
			resp, err := http.Get(e.srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != code {
				t.Errorf("GET %s = %d, want %d", path, resp.StatusCode, code)
			}
		}
	})
	t.Run("a ConfigMap that is not a record", func(t *testing.T) {
		other := pod("default", "other", "", corev1.PodPending)
		e.put(t, "/registry/pods/default/other", other)
		e.putRecord(t, other, twoAttempts(other, time.Now()), false)
		doc, _ := e.get(t, "/scheduler/default/other")
		if errs := byTestID(doc, "sched-error"); len(errs) != 1 || !strings.Contains(text(errs[0]), "not a decision record") {
			t.Errorf("errors %d", len(errs))
		}
		if n := len(byTestID(doc, "sched-row")); n != 0 {
			t.Errorf("%d rows from a foreign ConfigMap", n)
		}
	})
	t.Run("a record of an earlier pod of the name", func(t *testing.T) {
		old := pod("default", "again", "", corev1.PodPending)
		e.putRecord(t, old, twoAttempts(old, time.Now()), true)
		fresh := old.DeepCopy()
		fresh.UID = "uid-again-2"
		e.put(t, "/registry/pods/default/again", fresh)
		doc, _ := e.get(t, "/scheduler/default/again")
		if n := len(byTestID(doc, "sched-row")); n != 0 || len(byTestID(doc, "sched-error")) != 1 {
			t.Errorf("%d rows from an earlier pod's record", n)
		}
	})
}

// TestSchedulerPageBrowser plays a recent attempt in chromium: the filter
// columns first, then the scores, then the winner; hostile names stay text.
func TestSchedulerPageBrowser(t *testing.T) {
	e := newEnv(t)
	ctx := webtest.Browser(t)
	p := pod("default", "web", "node-b", corev1.PodRunning)
	e.put(t, "/registry/pods/default/web", p)
	e.putRecord(t, p, twoAttempts(p, time.Now()), true)

	webtest.Navigate(t, ctx, e.srv.URL+"/scheduler/default/web")
	webtest.WaitSelector(t, ctx, webtest.TestID("sched-matrix"))
	// Recent, so it plays on load, up to the winner.
	webtest.WaitFor(t, ctx, `document.getElementById("sched-matrix").classList.contains("decided")`)
	if got := webtest.Eval[string](t, ctx, `document.getElementById("sched-caption").textContent`); got != "The highest sum wins: node-b (484)." {
		t.Errorf("caption %q", got)
	}
	if n := webtest.Eval[int](t, ctx, `document.querySelectorAll("img").length`); n != 0 {
		t.Errorf("found %d <img> elements", n)
	}
	webtest.Screenshot(t, ctx, filepath.Join(webtest.OutputDir(t), "scheduler-matrix.png"))

	// Step by step: the first step shows the first filter column only.
	webtest.Eval[bool](t, ctx, `document.getElementById("sched-all").click(), true`)
	webtest.Eval[bool](t, ctx, `document.getElementById("sched-step").click(), true`)
	webtest.WaitFor(t, ctx, `document.getElementById("sched-matrix").dataset.step === "1"`)
	if got := webtest.Eval[string](t, ctx, `document.getElementById("sched-caption").textContent`); got != "Filter NodeUnschedulable: every remaining node passes." {
		t.Errorf("first step caption %q", got)
	}
	webtest.Eval[bool](t, ctx, `document.getElementById("sched-step").click(), document.getElementById("sched-step").click(), true`)
	if got := webtest.Eval[string](t, ctx, `document.getElementById("sched-caption").textContent`); got != "Filter TaintToleration: removes 1 node(s)." {
		t.Errorf("third step caption %q", got)
	}
	if !webtest.Eval[bool](t, ctx, `document.querySelector('tr[data-node="node-a"]').classList.contains("out") &&
		!document.querySelector('tr[data-node="node-b"] td[data-col="s0"]').classList.contains("shown")`) {
		t.Error("after the TaintToleration step node-a is not struck out, or the scores already show")
	}
}
