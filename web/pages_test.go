package web

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/glassplane/glassplane/api/v1alpha1"
	authnv1 "k8s.io/api/authentication/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"golang.org/x/net/html"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/glassplane/glassplane/controlplane/scheduler/explain"
)

func pod(ns, name, node string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "glassplane.local/hello:latest"}}},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

func node(name string, ready corev1.ConditionStatus) *corev1.Node {
	return &corev1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}},
	}
}

func coreEvent(name string, about *corev1.Pod, reason, component, message string, at time.Time) *corev1.Event {
	return &corev1.Event{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta: metav1.ObjectMeta{Namespace: about.Namespace, Name: name},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", APIVersion: "v1", Namespace: about.Namespace, Name: about.Name, UID: about.UID,
		},
		Reason: reason, Message: message, Type: corev1.EventTypeNormal,
		Source:        corev1.EventSource{Component: component},
		LastTimestamp: metav1.NewTime(at), FirstTimestamp: metav1.NewTime(at),
	}
}

func auditEvent(verb, resource, sub, ns, name, user string, at time.Time, ann map[string]string) *auditv1.Event {
	ev := &auditv1.Event{TypeMeta: metav1.TypeMeta{APIVersion: "audit.k8s.io/v1", Kind: "Event"}, Annotations: map[string]string{}}
	ev.Verb, ev.Stage, ev.Level = verb, auditv1.StageResponseComplete, auditv1.LevelMetadata
	ev.User = authnv1.UserInfo{Username: user}
	ev.ObjectRef = &auditv1.ObjectReference{Resource: resource, Subresource: sub, Namespace: ns, Name: name, APIVersion: "v1"}
	ev.RequestReceivedTimestamp = metav1.NewMicroTime(at)
	ev.StageTimestamp = metav1.NewMicroTime(at.Add(time.Millisecond))
	ev.ResponseStatus = &metav1.Status{Code: 201}
	for k, v := range ann {
		ev.Annotations[k] = v
	}
	return ev
}

// get fetches path and parses the page.
func (e *env) get(t *testing.T, path string) (*html.Node, string) {
	t.Helper()
	resp, err := http.Get(e.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d: %s", path, resp.StatusCode, body)
	}
	doc, err := html.Parse(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	return doc, string(body)
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func findAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func byTestID(n *html.Node, id string) []*html.Node {
	return findAll(n, func(n *html.Node) bool { return attr(n, "data-testid") == id })
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

func TestPages(t *testing.T) {
	e := newEnv(t)
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	mypod := pod("default", "mypod", "node1", corev1.PodRunning)
	// The decision that bound mypod, in its record.
	var bound explain.Decision
	if err := json.Unmarshal([]byte(`{"attempt":1,"time":"2026-03-01T10:00:00Z","pod":"default/mypod","node":"node1","nodes":2,"feasible":1,`+
		`"filter":[{"node":"node1","passed":true},{"node":"node2","passed":false,"plugin":"TaintToleration","reason":"node(s) had untolerated taint {role: infra}"}],`+
		`"scores":[{"node":"node1","plugins":[{"plugin":"NodeResourcesFit","raw":70,"normalized":70,"weight":1,"weighted":70}],"total":70}],"message":"Successfully assigned default/mypod to node1"}`), &bound); err != nil {
		t.Fatal(err)
	}
	e.putRecord(t, mypod, explain.History{Pod: "default/mypod", UID: string(mypod.UID), Attempts: []explain.Decision{bound}})
	e.put(t, "/registry/minions/node1", node("node1", corev1.ConditionTrue))
	e.put(t, "/registry/pods/default/mypod", mypod)
	e.put(t, "/registry/pods/default/waiting", pod("default", "waiting", "", ""))
	scheduled := coreEvent("mypod.1", mypod, "Scheduled", "default-scheduler", "Successfully assigned default/mypod to node1", t0)
	scheduled.EventTime = metav1.NewMicroTime(t0.Add(40 * time.Millisecond))
	e.put(t, "/registry/events/default/mypod.1", scheduled)
	e.put(t, "/registry/events/default/mypod.2", coreEvent("mypod.2", mypod, "Started", "kubelet",
		"Started container c", t0.Add(900*time.Millisecond)))
	e.put(t, "/registry/events/default/other.1", coreEvent("other.1", pod("default", "other", "", ""), "Scheduled", "default-scheduler", "x", t0))
	e.put(t, "/registry/secrets/default/token", map[string]any{
		"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "token", "namespace": "default"},
		"data": map[string]any{"password": "aHVudGVyMg=="},
	})
	stages := map[string]string{v1alpha1.AnnotationStages: "authentication,authorization,admission,etcd", v1alpha1.AnnotationEtcdKey: "/registry/pods/default/mypod"}
	e.ring.Add(auditEvent("create", "pods", "", "default", "mypod", "kubernetes-admin", t0, stages))
	e.ring.Add(auditEvent("create", "pods", "binding", "default", "mypod", "system:kube-scheduler", t0.Add(30*time.Millisecond),
		map[string]string{v1alpha1.AnnotationStages: "authentication,authorization,admission,etcd"}))
	e.ring.Add(auditEvent("update", "pods", "status", "default", "mypod", "system:node:node1", t0.Add(500*time.Millisecond),
		map[string]string{v1alpha1.AnnotationStages: "authentication,authorization", v1alpha1.AnnotationFailedStage: "admission"}))
	e.ring.Add(auditEvent("create", "pods", "", "default", "other", "kubernetes-admin", t0, nil))
	// The kubelet's Event has a second-precision timestamp; the audit event
	// of its write places it at +900 ms.
	e.ring.Add(auditEvent("create", "events", "", "default", "mypod.2", "system:node:node1", t0.Add(900*time.Millisecond),
		map[string]string{v1alpha1.AnnotationEtcdKey: "/registry/events/default/mypod.2"}))

	t.Run("overview lists pods under their node", func(t *testing.T) {
		doc, _ := e.get(t, "/")
		boxes := byTestID(doc, "node-node1")
		if len(boxes) != 1 {
			t.Fatalf("node boxes = %d", len(boxes))
		}
		chips := byTestID(boxes[0], "pod-default-mypod")
		if len(chips) != 1 || attr(chips[0], "data-phase") != "Running" {
			t.Fatalf("mypod chip in node1: %d (phase %q)", len(chips), attr(chips[0], "data-phase"))
		}
		waiting := byTestID(byTestID(doc, "unscheduled")[0], "pod-default-waiting")
		if len(waiting) != 1 || attr(waiting[0], "data-phase") != "Pending" {
			t.Fatalf("waiting pod not among the unscheduled")
		}
		if n := len(byTestID(doc, "feed-item")); n < 5 {
			t.Errorf("feed items = %d, want the 4 creates/updates and 3 events", n)
		}
	})
	t.Run("object timeline merges audit and events in time order", func(t *testing.T) {
		doc, _ := e.get(t, "/objects/pods/default/mypod")
		rows := byTestID(doc, "timeline-row")
		want := []struct{ source, action, rel string }{
			{"audit", "create pods", "+0 ms"},
			{"audit", "create pods/binding", "+30 ms"},
			{"event", "Scheduled", "+40 ms"},
			{"audit", "update pods/status", "+500 ms"},
			{"event", "Started", "+900 ms"},
		}
		if len(rows) != len(want) {
			t.Fatalf("rows = %d, want %d", len(rows), len(want))
		}
		for i, w := range want {
			got := text(rows[i])
			if attr(rows[i], "data-source") != w.source || !strings.Contains(got, w.action) || !strings.Contains(got, w.rel) {
				t.Errorf("row %d = %q (%s), want %s %q %s", i, got, attr(rows[i], "data-source"), w.source, w.action, w.rel)
			}
		}
		failed := findAll(rows[3], func(n *html.Node) bool { return attr(n, "data-state") == "failed" })
		if len(failed) != 1 || attr(failed[0], "data-stage") != "admission" {
			t.Errorf("status update row should show admission failed")
		}
		if !strings.Contains(text(rows[2]), "default-scheduler") {
			t.Errorf("event row lacks its component: %q", text(rows[2]))
		}
		if len(byTestID(doc, "decision")) != 1 || len(byTestID(doc, "filter-row")) != 2 || len(byTestID(doc, "score-row")) != 1 {
			t.Errorf("scheduler decision not rendered")
		}
		if got := text(byTestID(doc, "object-yaml")[0]); !strings.Contains(got, "name: mypod") {
			t.Errorf("object yaml = %q", got)
		}
	})
	t.Run("cluster-scoped object", func(t *testing.T) {
		doc, _ := e.get(t, "/objects/nodes/node1")
		if got := text(byTestID(doc, "object-key")[0]); got != "/registry/minions/node1" {
			t.Errorf("key = %q", got)
		}
	})
	t.Run("etcd explorer", func(t *testing.T) {
		doc, _ := e.get(t, "/etcd?key=/registry/pods/default/mypod")
		keys := findAll(doc, func(n *html.Node) bool { return attr(n, "data-key") == "/registry/pods/default/mypod" })
		if len(keys) != 1 {
			t.Fatalf("key links = %d", len(keys))
		}
		if len(byTestID(doc, "etcd-group-pods")) != 1 || len(byTestID(doc, "etcd-group-minions")) != 1 {
			t.Error("groups missing")
		}
		if got := text(byTestID(doc, "etcd-json")[0]); !strings.Contains(got, `"name": "mypod"`) {
			t.Errorf("value = %q", got)
		}
	})
	t.Run("secrets are masked", func(t *testing.T) {
		for _, path := range []string{"/etcd?key=/registry/secrets/default/token", "/objects/secrets/default/token"} {
			_, body := e.get(t, path)
			if strings.Contains(body, "aHVudGVyMg==") || !strings.Contains(body, maskedSecret) {
				t.Errorf("%s shows the secret's value", path)
			}
		}
	})
	t.Run("object as json", func(t *testing.T) {
		resp, err := http.Get(e.srv.URL + "/objects/pods/default/mypod?format=json")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"nodeName": "node1"`) {
			t.Errorf("format=json: %d %s", resp.StatusCode, b)
		}
	})
	t.Run("missing object", func(t *testing.T) {
		doc, _ := e.get(t, "/objects/pods/default/nope")
		if len(byTestID(doc, "not-found")) != 1 {
			t.Error("no not-found notice")
		}
	})
}

// putBusyEvents writes Events "step 000" … "step 149" for one pod, a
// second apart.
func putBusyEvents(t *testing.T, e *env) {
	t.Helper()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	p := pod("default", "busy", "", "")
	for i := range 150 {
		name := fmt.Sprintf("busy.%03d", i)
		e.put(t, "/registry/events/default/"+name, coreEvent(name, p, "Pulled", "kubelet", fmt.Sprintf("step %03d", i), t0.Add(time.Duration(i)*time.Second)))
	}
}

// checkFeed checks that the overview's feed lists 40 items, from step
// first down to step last.
func checkFeed(t *testing.T, e *env, first, last string) {
	t.Helper()
	doc, _ := e.get(t, "/")
	items := byTestID(doc, "feed-item")
	if len(items) != 40 {
		t.Fatalf("feed items = %d, want 40", len(items))
	}
	if got, gotLast := text(items[0]), text(items[len(items)-1]); !strings.Contains(got, "step "+first) || !strings.Contains(gotLast, "step "+last) {
		t.Errorf("feed runs from %q to %q, want step %s down to step %s", got, gotLast, first, last)
	}
}

// TestOverviewFeedFromTheStoreHistory: when the store's history holds the
// newest Events, the overview's feed comes from it (not a list of every
// Event) and still leaves out a deleted one.
func TestOverviewFeedFromTheStoreHistory(t *testing.T) {
	e := newEnvHistory(t, 512)
	putBusyEvents(t, e)
	if _, _, err := e.store.Delete(e.ctx, "/registry/events/default/busy.149", 0); err != nil {
		t.Fatal(err)
	}
	// The page's feed is what the store's history says it is.
	newest, ok, err := e.store.Newest(e.ctx, "/registry/events/", 80, 0)
	if err != nil || !ok || len(newest) != 80 {
		t.Fatalf("the store's history: %d Events, ok %v, %v; want 80 from the history", len(newest), ok, err)
	}
	checkFeed(t, e, "148", "109") // 149 was deleted
}

// TestOverviewFeedShowsTheNewestEvents: with more Events than the feed
// holds (and than the store's history), the overview lists the newest,
// newest first.
func TestOverviewFeedShowsTheNewestEvents(t *testing.T) {
	e := newEnv(t)
	putBusyEvents(t, e)
	checkFeed(t, e, "149", "110")
}
