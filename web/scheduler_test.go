package web

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/glassplane/glassplane/api/v1alpha1"
	"github.com/glassplane/glassplane/controlplane/scheduler/explain"
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

// decisionAPI is a fake API server for what the scheduler page and the
// pod page read as the page's user: SchedulingDecisions and Events.
type decisionAPI struct {
	mu      sync.Mutex // guards records, events and forbidden
	records map[string]*v1alpha1.SchedulingDecision
	events  []corev1.Event
	// forbidden refuses reading the records of these pods
	// ("namespace/name").
	forbidden map[string]bool
}

// decisionAPIs holds each env's fake API, once one is needed.
var decisionAPIs sync.Map // *env → *decisionAPI

// decisions returns e's fake API of records and events, which the
// dashboard then reads as its user's API.
func (e *env) decisions(t *testing.T) *decisionAPI {
	t.Helper()
	if a, ok := decisionAPIs.Load(e); ok {
		return a.(*decisionAPI)
	}
	a := &decisionAPI{records: map[string]*v1alpha1.SchedulingDecision{}, forbidden: map[string]bool{}}
	srv := httptest.NewServer(a)
	t.Cleanup(func() {
		srv.Close()
		decisionAPIs.Delete(e)
	})
	e.dash.api = func(*http.Request) (kubernetes.Interface, error) {
		return kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	}
	decisionAPIs.Store(e, a)
	return a
}

func (a *decisionAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	status := func(code int32, reason metav1.StatusReason, message string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(int(code))
		json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: code, Reason: reason, Message: message})
	}
	write := func(obj any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(obj)
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) == 7 && parts[0] == "apis" && parts[1] == "glassplane.io" && parts[5] == "schedulingdecisions":
		key := parts[4] + "/" + parts[6]
		if a.forbidden[key] {
			status(http.StatusForbidden, metav1.StatusReasonForbidden, `schedulingdecisions.glassplane.io "`+parts[6]+`" is forbidden: User "student" cannot get resource "schedulingdecisions" in API group "glassplane.io" in the namespace "`+parts[4]+`"`)
			return
		}
		rec, ok := a.records[key]
		if !ok {
			status(http.StatusNotFound, metav1.StatusReasonNotFound, `schedulingdecisions.glassplane.io "`+parts[6]+`" not found`)
			return
		}
		write(rec)
	case len(parts) == 5 && parts[0] == "api" && parts[4] == "events":
		want := "involvedObject.kind=Pod,involvedObject.name="
		name, ok := strings.CutPrefix(r.URL.Query().Get("fieldSelector"), want)
		if !ok {
			status(http.StatusBadRequest, metav1.StatusReasonBadRequest, "unexpected field selector "+r.URL.Query().Get("fieldSelector"))
			return
		}
		list := corev1.EventList{TypeMeta: metav1.TypeMeta{Kind: "EventList", APIVersion: "v1"}}
		for _, ev := range a.events {
			if ev.Namespace == parts[3] && ev.InvolvedObject.Name == name {
				list.Items = append(list.Items, ev)
			}
		}
		write(list)
	default:
		status(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
	}
}

// putRecord stores h as the pod's decision record.
func (e *env) putRecord(t *testing.T, p *corev1.Pod, h explain.History) {
	t.Helper()
	a := e.decisions(t)
	rec := explain.Record(p.Namespace, p.Name, types.UID(h.UID), h)
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	// As the API returns it: through its JSON.
	var stored v1alpha1.SchedulingDecision
	if err := json.Unmarshal(b, &stored); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.records[p.Namespace+"/"+p.Name] = &stored
}

// putEvents stores the events the API lists.
func (e *env) putEvents(t *testing.T, events ...corev1.Event) {
	t.Helper()
	a := e.decisions(t)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events = append(a.events, events...)
}

func TestSchedulerPage(t *testing.T) {
	e := newEnv(t)
	p := pod("default", "web", "node-b", corev1.PodRunning)
	e.put(t, "/registry/pods/default/web", p)
	e.putRecord(t, p, twoAttempts(p, time.Now().Add(-time.Hour)))

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
	t.Run("the record's page and command", func(t *testing.T) {
		doc, _ := e.get(t, "/scheduler/default/web")
		link := byTestID(doc, "sched-record-link")
		if len(link) != 1 || attr(link[0], "href") != "/objects/schedulingdecisions.glassplane.io/default/web" || text(link[0]) != "schedulingdecisions.glassplane.io/web" ||
			text(byTestID(doc, "sched-record-command")[0]) != "kubectl describe schedulingdecision web -n default" || len(byTestID(doc, "sched-no-record")) != 0 {
			t.Errorf("record links %d", len(link))
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
	t.Run("a record the user may not read", func(t *testing.T) {
		secret := pod("default", "secret", "", corev1.PodPending)
		e.put(t, "/registry/pods/default/secret", secret)
		e.putRecord(t, secret, twoAttempts(secret, time.Now()))
		a := e.decisions(t)
		a.mu.Lock()
		a.forbidden["default/secret"] = true
		a.mu.Unlock()
		doc, _ := e.get(t, "/scheduler/default/secret")
		if errs := byTestID(doc, "sched-error"); len(errs) != 1 || !strings.Contains(text(errs[0]), `User "student" cannot get resource "schedulingdecisions"`) {
			t.Errorf("errors %d", len(errs))
		}
		if n := len(byTestID(doc, "sched-row")); n != 0 || len(byTestID(doc, "sched-no-record")) != 0 || len(byTestID(doc, "sched-no-events")) != 1 {
			t.Errorf("%d rows from a record the user may not read, or no word on the events", n)
		}
	})
	t.Run("a record of an earlier pod of the name", func(t *testing.T) {
		old := pod("default", "again", "", corev1.PodPending)
		e.putRecord(t, old, twoAttempts(old, time.Now()))
		fresh := old.DeepCopy()
		fresh.UID = "uid-again-2"
		e.put(t, "/registry/pods/default/again", fresh)
		doc, _ := e.get(t, "/scheduler/default/again")
		if n := len(byTestID(doc, "sched-row")); n != 0 || len(byTestID(doc, "sched-error")) != 1 {
			t.Errorf("%d rows from an earlier pod's record", n)
		}
	})
}

// TestSchedulerPageWithoutRecord: a pod without a decision record (its
// scheduler is kube-scheduler, or Glassplane's has not written one) is
// explained by its Scheduled and FailedScheduling Events, oldest first,
// with Glassplane's counts where its scheduler attached them, and the
// page says once that per-plugin scores exist only under Glassplane's
// scheduler.
func TestSchedulerPageWithoutRecord(t *testing.T) {
	e := newEnv(t)
	p := pod("default", "web", "", corev1.PodPending)
	e.put(t, "/registry/pods/default/web", p)
	t0 := time.Now().Add(-time.Minute).UTC()
	ref := corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web", UID: p.UID}
	ev := func(name, reason, typ, message string, at time.Time) corev1.Event {
		return corev1.Event{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, InvolvedObject: ref, Reason: reason, Type: typ, Message: message,
		}
	}
	// kube-scheduler's, as events.k8s.io/v1 writes them: an eventTime, a
	// reporting controller and a series.
	failed := ev("web.1", "FailedScheduling", corev1.EventTypeWarning, "0/3 nodes are available: 3 Insufficient cpu. "+hostileText, t0)
	failed.EventTime, failed.ReportingController = metav1.NewMicroTime(t0), "default-scheduler"
	failed.Series = &corev1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(t0.Add(20 * time.Second))}
	// Glassplane's scheduler's, with its summary.
	scheduled := ev("web.2", "Scheduled", corev1.EventTypeNormal, "Successfully assigned default/web to node-b", t0)
	scheduled.LastTimestamp, scheduled.Source.Component = metav1.NewTime(t0.Add(30*time.Second)), "default-scheduler"
	scheduled.Annotations = map[string]string{explain.SummaryAnnotation: `{"attempt":4,"nodes":3,"evaluated":3,"feasible":1,"node":"node-b","rejected":{"NodeResourcesFit":2}}`}
	pulled := ev("web.3", "Pulled", corev1.EventTypeNormal, "pulled", t0)
	earlier := ev("web.4", "Scheduled", corev1.EventTypeNormal, "an earlier web", t0)
	earlier.InvolvedObject.UID = "uid-of-an-earlier-web"
	e.putEvents(t, scheduled, failed, pulled, earlier)

	doc, body := e.get(t, "/scheduler/default/web")
	if n := len(byTestID(doc, "sched-no-record")); n != 1 {
		t.Errorf("%d notes that only Glassplane's scheduler records scores, want 1", n)
	}
	if n := len(byTestID(doc, "sched-matrix")) + len(byTestID(doc, "sched-attempt")); n != 0 {
		t.Errorf("%d attempts or matrices without a record", n)
	}
	events := byTestID(doc, "sched-event")
	if len(events) != 2 || attr(events[0], "data-reason") != "FailedScheduling" || attr(events[1], "data-reason") != "Scheduled" {
		t.Fatalf("%d events, want FailedScheduling then Scheduled", len(events))
	}
	if got := text(events[0]); !strings.Contains(got, "default-scheduler") || !strings.Contains(got, "×3") || !strings.Contains(got, "0/3 nodes are available") {
		t.Errorf("kube-scheduler's event reads %q", got)
	}
	if n := len(byTestID(events[0], "sched-event-summary")); n != 0 {
		t.Errorf("kube-scheduler's event has %d summaries", n)
	}
	if got := text(byTestID(events[1], "sched-event-summary")[0]); got != "3 node(s) known, 3 filtered, 1 passed every filter. NodeResourcesFit rejected 2 node(s)." {
		t.Errorf("summary %q", got)
	}
	if strings.Contains(body, "<img src=x") {
		t.Error("the hostile message is not escaped")
	}
	if len(byTestID(doc, "sched-record-link")) != 0 || text(byTestID(doc, "sched-record-name")[0]) != "schedulingdecisions.glassplane.io/web" ||
		text(byTestID(doc, "sched-record-command")[0]) != "kubectl describe schedulingdecision web -n default" {
		t.Error("the missing record is linked, or not named with its kubectl command")
	}

	resp, err := http.Get(e.srv.URL + "/scheduler/default/web?format=json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st schedulerStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if st != (schedulerStatus{Events: 4, Pending: true}) {
		t.Errorf("status %+v, want 4 events of a pending pod", st)
	}

	quiet := pod("default", "quiet", "", corev1.PodPending)
	e.put(t, "/registry/pods/default/quiet", quiet)
	doc, _ = e.get(t, "/scheduler/default/quiet")
	if len(byTestID(doc, "sched-no-record")) != 1 || len(byTestID(doc, "sched-no-events")) != 1 || len(byTestID(doc, "sched-event")) != 0 {
		t.Error("a pod without record or events does not say so")
	}
}

// TestSchedulerPageBrowser plays a recent attempt in chromium: the filter
// columns first, then the scores, then the winner; hostile names stay text.
func TestSchedulerPageBrowser(t *testing.T) {
	e := newEnv(t)
	ctx := webtest.Browser(t)
	p := pod("default", "web", "node-b", corev1.PodRunning)
	e.put(t, "/registry/pods/default/web", p)
	e.putRecord(t, p, twoAttempts(p, time.Now()))

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
