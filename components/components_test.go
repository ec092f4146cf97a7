package components

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/a-h/templ"
	"golang.org/x/net/html"
)

const hostile = `<img src=x onerror=alert(1)>`

// render renders comp and parses the result.
func render(t *testing.T, comp templ.Component) (*html.Node, string) {
	t.Helper()
	var buf bytes.Buffer
	if err := comp.Render(context.Background(), &buf); err != nil {
		t.Fatalf("render: %v", err)
	}
	doc, err := html.Parse(strings.NewReader(buf.String()))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return doc, buf.String()
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
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
	return findAll(n, func(n *html.Node) bool { v, _ := attr(n, "data-testid"); return v == id })
}

func one(t *testing.T, n *html.Node, id string) *html.Node {
	t.Helper()
	found := byTestID(n, id)
	if len(found) != 1 {
		t.Fatalf("found %d elements with data-testid=%q, want 1", len(found), id)
	}
	return found[0]
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

func layout(p Page) Layout {
	return Layout{Title: "t", Page: p, Mode: "simulated", Revision: 42, AuditSeq: 7}
}

func TestPageViewHeader(t *testing.T) {
	doc, _ := render(t, OverviewPage(layout(PageOverview), Overview{}))
	if got := text(one(t, doc, "runtime-mode")); got != "runtime: simulated nodes" {
		t.Errorf("mode = %q", got)
	}
	body := findAll(doc, func(n *html.Node) bool { return n.Data == "body" })[0]
	for key, want := range map[string]string{"data-page": "overview", "data-revision": "42", "data-audit-seq": "7"} {
		if got, _ := attr(body, key); got != want {
			t.Errorf("body %s = %q, want %q", key, got, want)
		}
	}
	if cls, _ := attr(one(t, doc, "nav-overview"), "class"); cls != "active" {
		t.Errorf("overview nav class = %q, want active", cls)
	}
	one(t, doc, "no-nodes")
}

func TestOverviewPage(t *testing.T) {
	vm := Overview{
		Nodes: []NodeBox{{Name: "node1", Ready: "True", Href: "/objects/nodes/node1", Pods: []PodChip{
			{Namespace: "default", Name: "mypod", Phase: "Running", NodeName: "node1", Href: "/objects/pods/default/mypod"},
			{Namespace: "default", Name: hostile, Phase: "Pending", NodeName: "node1", Href: "/objects/pods/default/x"},
		}}},
		Unscheduled: []PodChip{{Namespace: "kube-system", Name: "waiting", Phase: "Pending"}},
		Feed: []FeedItem{{
			Source: "audit", Time: "2026-01-02T03:04:05.678Z", Component: "admin", Action: "create pods",
			Target: "pods/default/mypod", Href: "/objects/pods/default/mypod",
			Stages: []Stage{{Name: "authentication", Label: "authn", State: "ok"}, {Name: "admission", Label: "admission", State: "failed"}},
		}},
	}
	doc, raw := render(t, OverviewPage(layout(PageOverview), vm))

	t.Run("pods sit in their node", func(t *testing.T) {
		node := one(t, doc, "node-node1")
		if ready := text(one(t, node, "node-ready")); ready != "Ready" {
			t.Errorf("ready = %q", ready)
		}
		chip := one(t, node, "pod-default-mypod")
		if phase, _ := attr(chip, "data-phase"); phase != "Running" {
			t.Errorf("data-phase = %q", phase)
		}
		one(t, one(t, doc, "unscheduled"), "pod-kube-system-waiting")
	})
	t.Run("hostile name is escaped", func(t *testing.T) {
		chip := one(t, doc, "pod-default-"+hostile)
		if got := text(chip); !strings.Contains(got, hostile) {
			t.Errorf("chip text = %q, want the name as text", got)
		}
		if imgs := findAll(doc, func(n *html.Node) bool { return n.Data == "img" }); len(imgs) != 0 {
			t.Errorf("found %d <img> elements: the name was not escaped", len(imgs))
		}
		if strings.Contains(raw, hostile) {
			t.Error("raw HTML contains the unescaped name")
		}
	})
	t.Run("feed with stage chips", func(t *testing.T) {
		item := one(t, doc, "feed-item")
		chips := findAll(item, func(n *html.Node) bool { _, ok := attr(n, "data-stage"); return ok })
		if len(chips) != 2 {
			t.Fatalf("found %d stage chips, want 2", len(chips))
		}
		if s, _ := attr(chips[1], "data-state"); s != "failed" {
			t.Errorf("admission chip state = %q", s)
		}
		if !strings.Contains(text(item), "create pods") {
			t.Errorf("feed item text = %q", text(item))
		}
	})
}

func TestObjectPage(t *testing.T) {
	vm := Object{
		Resource: "pods", Namespace: "default", Name: "mypod", Kind: "Pod", UID: "u1", Key: "/registry/pods/default/mypod",
		Found: true, ResourceVersion: 12, YAML: "kind: Pod\nmetadata:\n  name: " + hostile + "\n",
		Timeline: []TimelineRow{
			{Source: "audit", Time: "2026-01-02T03:04:05.000Z", Relative: "+0 ms", Actor: "admin", Action: "create pods", Code: 201,
				Stages: []Stage{{Name: "etcd", Label: "etcd", State: "ok"}}},
			{Source: "event", Time: "2026-01-02T03:04:05.120Z", Relative: "+120 ms", Actor: "default-scheduler", Action: "Scheduled",
				Message: "Successfully assigned default/mypod to node1"},
		},
		Decision: &Decision{Attempt: 1, Node: "node1", Plugins: []string{"NodeResourcesFit", "TaintToleration"},
			Filter: []FilterRow{{Node: "node1", Passed: true}, {Node: "node2", Plugin: "TaintToleration", Reason: "node(s) had untolerated taint(s)"}},
			Scores: []ScoreRow{{Node: "node1", Chosen: true, Total: 300, Cells: []ScoreCell{
				{Present: true, Raw: 80, Normalized: 100, Weight: 1, Weighted: 100}, {Present: true, Normalized: 100, Weight: 2, Weighted: 200}}}}},
	}
	doc, raw := render(t, ObjectPage(layout(PageObject), vm))
	rows := byTestID(doc, "timeline-row")
	if len(rows) != 2 {
		t.Fatalf("timeline rows = %d, want 2", len(rows))
	}
	for i, want := range []string{"audit", "event"} {
		if src, _ := attr(rows[i], "data-source"); src != want {
			t.Errorf("row %d source = %q, want %q", i, src, want)
		}
	}
	if got := text(rows[1]); !strings.Contains(got, "+120 ms") || !strings.Contains(got, "default-scheduler") || !strings.Contains(got, "Scheduled") {
		t.Errorf("event row = %q", got)
	}
	if got := text(rows[0]); !strings.Contains(got, "201") {
		t.Errorf("audit row = %q, want the status code", got)
	}
	if got := text(one(t, doc, "decision-node")); got != "node1" {
		t.Errorf("decision node = %q", got)
	}
	filter := byTestID(doc, "filter-row")
	if len(filter) != 2 || !strings.Contains(text(filter[1]), "untolerated taint") {
		t.Errorf("filter rows = %d", len(filter))
	}
	if got := text(one(t, doc, "score-total")); got != "300" {
		t.Errorf("score total = %q", got)
	}
	if strings.Contains(raw, hostile) {
		t.Error("stored YAML was not escaped")
	}
	if got := text(one(t, doc, "object-yaml")); !strings.Contains(got, hostile) {
		t.Errorf("object yaml text = %q", got)
	}
}

func TestEtcdPage(t *testing.T) {
	vm := Etcd{Total: 2, Groups: []KeyGroup{{Resource: "pods", Count: 2, Namespaces: []KeyNamespace{{Namespace: "default", Keys: []EtcdKey{
		{Key: "/registry/pods/default/a", Name: "a", Href: "/etcd?key=a", ModRevision: 5},
		{Key: "/registry/pods/default/b", Name: "b", Href: "/etcd?key=b", ModRevision: 6, Selected: true},
	}}}}}, Selected: &EtcdValue{Key: "/registry/pods/default/b", JSON: `{"kind":"Pod"}`, CreateRevision: 4, ModRevision: 6}}
	doc, _ := render(t, EtcdPage(layout(PageEtcd), vm))
	keys := byTestID(doc, "etcd-key")
	if len(keys) != 2 {
		t.Fatalf("keys = %d, want 2", len(keys))
	}
	if k, _ := attr(keys[1], "data-key"); k != "/registry/pods/default/b" {
		t.Errorf("data-key = %q", k)
	}
	if got := text(one(t, doc, "etcd-create-revision")); got != "4" {
		t.Errorf("create revision = %q", got)
	}
	if got := text(one(t, doc, "etcd-json")); got != `{"kind":"Pod"}` {
		t.Errorf("json = %q", got)
	}
	one(t, doc, "etcd-group-pods")
}

func TestApplyPage(t *testing.T) {
	tests := []struct {
		name    string
		vm      Apply
		results int
		errText string
	}{
		{name: "empty form", vm: Apply{CSRFToken: "tok", Examples: []Example{{Name: "pod", Label: "Pod"}}}},
		{name: "results", vm: Apply{CSRFToken: "tok", Results: []ApplyResult{
			{Ref: "pod/mypod", Action: "created", Href: "/objects/pods/default/mypod"},
			{Ref: "pod/My_Pod", Error: `Pod "My_Pod" is invalid: metadata.name: Invalid value`},
		}}, results: 2},
		{name: "error", vm: Apply{CSRFToken: "tok", Error: "failed to read the manifest"}, errText: "failed to read the manifest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, _ := render(t, ApplyPage(layout(PageApply), tt.vm))
			form := one(t, doc, "apply-form")
			inputs := findAll(form, func(n *html.Node) bool { v, _ := attr(n, "name"); return v == "_csrf" })
			if len(inputs) != 1 {
				t.Fatalf("csrf inputs = %d", len(inputs))
			}
			if v, _ := attr(inputs[0], "value"); v != "tok" {
				t.Errorf("csrf = %q", v)
			}
			if got := len(byTestID(doc, "apply-result")); got != tt.results {
				t.Errorf("results = %d, want %d", got, tt.results)
			}
			if tt.results == 2 {
				r := byTestID(doc, "apply-result")
				if a, _ := attr(r[0], "data-action"); a != "created" {
					t.Errorf("action = %q", a)
				}
				if !strings.Contains(text(r[1]), "is invalid") {
					t.Errorf("error result = %q", text(r[1]))
				}
			}
			if tt.errText != "" && !strings.Contains(text(one(t, doc, "apply-error")), tt.errText) {
				t.Errorf("error text missing")
			}
			if len(tt.vm.Examples) > 0 {
				one(t, doc, "example-pod")
			}
		})
	}
}

func TestClusterMap(t *testing.T) {
	vm := Overview{Nodes: []NodeBox{
		{Name: "node1", Ready: "True", Pods: []PodChip{{Namespace: "default", Name: "mypod", Phase: "Running", NodeName: "node1"}}},
		{Name: hostile, Ready: "False", Pods: []PodChip{{Namespace: "default", Name: hostile, Phase: "Pending", NodeName: hostile}}},
	}}
	doc, raw := render(t, OverviewPage(layout(PageOverview), vm))
	one(t, doc, "cluster-map")
	tests := []struct {
		name, testID string
	}{
		{"user", "map-box-user"},
		{"api server", "map-box-apiserver"},
		{"etcd", "map-box-etcd"},
		{"scheduler", "map-box-scheduler"},
		{"controller manager", "map-box-controller-manager"},
		{"dashboard", "map-box-dashboard"},
		{"cluster DNS", "map-box-dns"},
		{"node agent", "map-box-node:node1"},
		{"containerd", "map-box-containerd:node1"},
		{"pod inside its node", "map-pod-default-mypod"},
		{"narration", "narration-text"},
		{"korean button", "lang-ko"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { one(t, doc, tt.testID) })
	}
	t.Run("every edge ends at the API server or inside a node", func(t *testing.T) {
		edges := findAll(doc, func(n *html.Node) bool { c, _ := attr(n, "class"); return n.Data == "line" && c == "edge" })
		if len(edges) != 4+2+2*2 {
			t.Fatalf("edges = %d, want 10", len(edges))
		}
		for _, e := range edges {
			from, _ := attr(e, "data-from")
			to, _ := attr(e, "data-to")
			if from != "apiserver" && to != "apiserver" && !strings.HasPrefix(to, "containerd:") {
				t.Errorf("edge %s → %s bypasses the API server", from, to)
			}
		}
	})
	t.Run("pod phase colours the dot", func(t *testing.T) {
		if p, _ := attr(one(t, doc, "map-pod-default-mypod"), "data-phase"); p != "Running" {
			t.Errorf("data-phase = %q", p)
		}
	})
	t.Run("hostile names are text", func(t *testing.T) {
		if imgs := findAll(doc, func(n *html.Node) bool { return n.Data == "img" }); len(imgs) != 0 {
			t.Errorf("found %d <img> elements", len(imgs))
		}
		if strings.Contains(raw, hostile) {
			t.Error("raw HTML contains the unescaped name")
		}
		if got := text(one(t, doc, "map-node-"+hostile)); !strings.Contains(got, hostile) {
			t.Errorf("node text = %q", got)
		}
	})
}

// TestLoginPageRemote: only a dashboard listening beyond this machine says
// so (and that it takes its own login token).
func TestLoginPageRemote(t *testing.T) {
	for _, remote := range []bool{false, true} {
		t.Run(fmt.Sprint("remote=", remote), func(t *testing.T) {
			doc, _ := render(t, LoginPage(layout(PageLogin), Login{Remote: remote}))
			if got := len(byTestID(doc, "login-remote")); got != map[bool]int{false: 0, true: 1}[remote] {
				t.Errorf("login-remote shown %d times", got)
			}
		})
	}
}

// TestAttemptMatrixOneFeasible: an attempt with one feasible node and no
// scores says why, in words the page can show in Korean too.
func TestAttemptMatrixOneFeasible(t *testing.T) {
	tests := []struct {
		name string
		m    AttemptMatrix
		want int
	}{
		{"one feasible node", AttemptMatrix{Nodes: 1, Evaluated: 1, Feasible: 1, Node: "n1"}, 1},
		{"scored nodes", AttemptMatrix{Nodes: 3, Evaluated: 3, Feasible: 3, Node: "n1", ScorePlugins: []ScorePluginHead{{Name: "NodeResourcesFit", Weight: 1}}}, 0},
		{"no feasible node", AttemptMatrix{Nodes: 1, Evaluated: 1}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, _ := render(t, AttemptMatrixView(tt.m))
			notes := byTestID(doc, "sched-no-scores")
			if len(notes) != tt.want {
				t.Fatalf("sched-no-scores shown %d times, want %d", len(notes), tt.want)
			}
			if tt.want == 1 && !strings.Contains(text(notes[0]), "--simulated-nodes 3") {
				t.Errorf("note = %q, want it to name --simulated-nodes 3", text(notes[0]))
			}
		})
	}
}

// TestDemosPageSaysWhereEachDemoRuns: each demo's row says its namespace.
func TestDemosPageSaysWhereEachDemoRuns(t *testing.T) {
	where := "Runs in namespace glassplane-demo-pod-lifecycle, created for the run and removed after it with everything in it."
	doc, _ := render(t, DemosPage(layout(PageDemos), Demos{Demos: []DemoInfo{{Name: "pod-lifecycle", Title: "t", Steps: 4, Where: where}}}))
	if got := text(one(t, doc, "demo-where-pod-lifecycle")); got != where {
		t.Errorf("where = %q", got)
	}
}
