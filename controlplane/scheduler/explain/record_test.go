package explain

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// plugins are the default profile's score plugins and weights.
var plugins = []struct {
	name   string
	weight int64
}{
	{"TaintToleration", 3}, {"NodeAffinity", 2}, {"NodeResourcesFit", 1}, {"PodTopologySpread", 2},
	{"InterPodAffinity", 2}, {"NodeResourcesBalancedAllocation", 1}, {"ImageLocality", 1},
}

// fullDecision is an attempt over nodes nodes in which every node was
// filtered and scored, except every tenth, rejected with a
// kube-scheduler-length reason.
func fullDecision(attempt, nodes int) Decision {
	d := Decision{
		Attempt: attempt, Time: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(attempt) * time.Second)),
		Pod: "default/web-7d9f8b6c5-x2x9z", Node: "node-0000", Nodes: nodes,
		FilterPlugins: []string{"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity"},
		Message:       "Successfully assigned default/web-7d9f8b6c5-x2x9z to node-0000",
	}
	for i := range nodes {
		name := fmt.Sprintf("node-%04d", i)
		if i%10 == 9 {
			d.Filter = append(d.Filter, NodeFilter{Node: name, Plugin: "NodeResourcesFit", Reason: "Insufficient cpu"})
			continue
		}
		d.Filter = append(d.Filter, NodeFilter{Node: name, Passed: true})
		ns := NodeScore{Node: name}
		for j, p := range plugins {
			raw := int64((i*7919 + j*104729) % 1000)
			norm := raw / 10
			ns.Plugins = append(ns.Plugins, PluginScore{Plugin: p.name, Raw: raw, Normalized: norm, Weight: p.weight, Weighted: norm * p.weight})
			ns.Total += norm * p.weight
		}
		d.Scores = append(d.Scores, ns)
	}
	d.Feasible = len(d.Scores)
	return d
}

// TestCompressedAtThousandNodes: ten attempts over 1,000 nodes, held
// compressed while they wait to be written, take a few KiB each and come
// back as they were.
func TestCompressedAtThousandNodes(t *testing.T) {
	d := fullDecision(1, 1000)
	plain, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	h := History{Pod: d.Pod, UID: "u1"}
	for i := range DefaultHistory {
		h.Attempts = append(h.Attempts, fullDecision(i+1, 1000))
	}
	b, err := EncodeHistory(h)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("one attempt: %d bytes of JSON; %d attempts: %d bytes compressed", len(plain), len(h.Attempts), len(b))
	if len(b) > DefaultHistory*32*1024 {
		t.Fatalf("%d attempts compress to %d bytes, more than 32 KiB each", len(h.Attempts), len(b))
	}
	got, err := DecodeHistory(b)
	if err != nil {
		t.Fatal(err)
	}
	last := got.Attempts[len(got.Attempts)-1]
	if len(got.Attempts) != DefaultHistory || last.Attempt != DefaultHistory || len(last.Filter) != 1000 || len(last.Scores) != 900 {
		t.Errorf("decoded %d attempts, the newest %d with %d filter and %d score entries", len(got.Attempts), last.Attempt, len(last.Filter), len(last.Scores))
	}
	if !reflect.DeepEqual(last.Scores[5], d.Scores[5]) {
		t.Errorf("scores changed in the round trip: %+v, want %+v", last.Scores[5], d.Scores[5])
	}
}

// recordBytes is the JSON of h's record.
func recordBytes(t *testing.T, h History) int {
	t.Helper()
	b, err := json.Marshal(Record("default", "p", "u", h))
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

func TestCap(t *testing.T) {
	tests := []struct {
		name        string
		attempts    int
		max         int
		reasonBytes int
		wantFirst   int
		wantDropped int
	}{
		{"below the cap keeps all", 3, 5, 10, 1, 0},
		{"the cap keeps the newest", 12, 5, 10, 8, 7},
		{"zero means the default", 15, 0, 10, 15 - DefaultHistory + 1, 15 - DefaultHistory},
		// About 240 KB of JSON per attempt: only the newest two fit
		// into MaxRecordBytes.
		{"the size limit drops the oldest", 4, 10, 12000, 3, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := History{Pod: "default/p", UID: "u"}
			for i := range tt.attempts {
				d := Decision{Attempt: i + 1, Pod: "default/p", Nodes: MaxRecordNodes}
				for n := range MaxRecordNodes {
					d.Filter = append(d.Filter, NodeFilter{Node: fmt.Sprintf("n%d", n), Plugin: "P", Reason: noise(i*1000+n, tt.reasonBytes)})
				}
				h.Attempts = append(h.Attempts, d)
			}
			got := Cap(h, tt.max)
			if n := recordBytes(t, got); n > MaxRecordBytes+1024 {
				t.Fatalf("the record has %d bytes, limit %d", n, MaxRecordBytes)
			}
			if got.Attempts[0].Attempt != tt.wantFirst || got.Dropped != tt.wantDropped || got.Attempts[len(got.Attempts)-1].Attempt != tt.attempts {
				t.Errorf("kept attempts %d..%d, dropped %d; want %d..%d, dropped %d",
					got.Attempts[0].Attempt, got.Attempts[len(got.Attempts)-1].Attempt, got.Dropped, tt.wantFirst, tt.attempts, tt.wantDropped)
			}
			if len(h.Attempts) != tt.attempts || h.Attempts[0].Attempt != 1 {
				t.Error("Cap changed its argument's attempts")
			}
		})
	}
}

// TestCapListsTheBestNodesAndEveryReason: an attempt over 1,000 nodes
// keeps the best scored nodes and rejected nodes of every rejecting
// plugin, MaxRecordNodes of each, and counts the others.
func TestCapListsTheBestNodesAndEveryReason(t *testing.T) {
	d := fullDecision(1, 1000)
	reasons := []string{"NodeResourcesFit", "TaintToleration", "NodeAffinity"}
	for i := range d.Filter {
		if !d.Filter[i].Passed {
			d.Filter[i].Plugin = reasons[(i/10)%3]
		}
	}
	got := Cap(History{Pod: d.Pod, Attempts: []Decision{d}}, 0).Attempts[0]
	best := slices.Clone(d.Scores)
	slices.SortStableFunc(best, func(a, b NodeScore) int {
		if a.Total != b.Total {
			return int(b.Total - a.Total)
		}
		return strings.Compare(a.Node, b.Node)
	})
	if len(got.Scores) != MaxRecordNodes || got.ScoresOmitted != 900-MaxRecordNodes || !reflect.DeepEqual(got.Scores, best[:MaxRecordNodes]) {
		t.Errorf("%d scores (%d omitted), want the best %d of 900", len(got.Scores), got.ScoresOmitted, MaxRecordNodes)
	}
	if len(got.Filter) != 2*MaxRecordNodes || got.FilterOmitted != 1000-2*MaxRecordNodes {
		t.Fatalf("%d filter entries (%d omitted), want %d", len(got.Filter), got.FilterOmitted, 2*MaxRecordNodes)
	}
	for i, f := range got.Filter[:MaxRecordNodes] {
		if !f.Passed || f.Node != got.Scores[i].Node {
			t.Errorf("filter entry %d is %+v, want the scored node %s", i, f, got.Scores[i].Node)
		}
	}
	seen := map[string]int{}
	for _, f := range got.Filter[MaxRecordNodes:] {
		if f.Passed {
			t.Errorf("a passed node %s among the rejected", f.Node)
		}
		seen[f.Plugin]++
	}
	if len(seen) != len(reasons) || seen["NodeAffinity"] < MaxRecordNodes/3 {
		t.Errorf("rejections by plugin %v, want each of %v in turn", seen, reasons)
	}
	if n := recordBytes(t, History{Attempts: []Decision{got}}); n > 32*1024 {
		t.Errorf("the attempt's record has %d bytes", n)
	}

	unscored := Decision{Attempt: 2, Nodes: 50}
	for n := range 50 {
		unscored.Filter = append(unscored.Filter, NodeFilter{Node: fmt.Sprintf("n%02d", 49-n), Passed: true})
	}
	got = Cap(History{Attempts: []Decision{unscored}}, 0).Attempts[0]
	if len(got.Filter) != MaxRecordNodes || got.Filter[0].Node != "n00" || got.FilterOmitted != 50-MaxRecordNodes {
		t.Errorf("unscored feasible nodes: %d kept, the first %s", len(got.Filter), got.Filter[0].Node)
	}
}

// TestCapCutsOneHugeAttempt: an attempt too big alone even with
// MaxRecordNodes of each keeps as many nodes as fit, and counts the
// others.
func TestCapCutsOneHugeAttempt(t *testing.T) {
	huge := Decision{Attempt: 1, Pod: "default/p", Nodes: 1000}
	for n := range 1000 {
		huge.Filter = append(huge.Filter, NodeFilter{Node: fmt.Sprintf("n%d", n), Plugin: "P", Reason: noise(n, 40000)})
	}
	got := Cap(History{Pod: "default/p", Attempts: []Decision{huge}}, 0)
	if n := recordBytes(t, got); n > MaxRecordBytes+1024 {
		t.Fatalf("the record has %d bytes, limit %d", n, MaxRecordBytes)
	}
	if a := got.Attempts[0]; len(a.Filter) == 0 || len(a.Filter)+a.FilterOmitted != 1000 || got.Dropped != 0 {
		t.Errorf("kept %d filter entries, %d omitted", len(a.Filter), a.FilterOmitted)
	}
}

func TestDecodeHistoryRefusesGarbage(t *testing.T) {
	for _, b := range [][]byte{nil, []byte("not gzip"), mustGzip(t, "{not json")} {
		if _, err := DecodeHistory(b); err == nil {
			t.Errorf("DecodeHistory(%q) succeeded", b)
		}
	}
}

func TestSummarize(t *testing.T) {
	d := fullDecision(2, 50)
	s := Summarize(d)
	if s.Attempt != 2 || s.Nodes != 50 || s.Evaluated != 50 || s.Feasible != 45 || s.Node != "node-0000" || s.Rejected["NodeResourcesFit"] != 5 {
		t.Errorf("summary %+v", s)
	}
	if s.Score != d.Scores[0].Total {
		t.Errorf("score %d, want the chosen node's %d", s.Score, d.Scores[0].Total)
	}
	if n := len(SummaryJSON(fullDecision(1, 1000))); n > 1024 {
		t.Errorf("summary of 1,000 nodes has %d bytes", n)
	}
}

// noise returns n pseudo-random letters that gzip cannot shrink much.
func noise(seed, n int) string {
	b := make([]byte, n)
	x := uint32(seed*2654435761 + 1)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = 'a' + byte(x%26)
	}
	return string(b)
}

func mustGzip(t *testing.T, s string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// viaJSON is d after a round trip through its own JSON, what a record
// of d must decode to (times to the second, invalid UTF-8 replaced).
func viaJSON(t *testing.T, d Decision) Decision {
	t.Helper()
	var out Decision
	if err := json.Unmarshal(encodingJSON(t, d), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// recordJSON inflates a record.
func recordJSON(t *testing.T, b []byte) string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := out.ReadFrom(zr); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestRecordRoundTrip(t *testing.T) {
	rejectedAll := fullDecision(3, 20)
	for i := range rejectedAll.Filter {
		rejectedAll.Filter[i] = NodeFilter{Node: rejectedAll.Filter[i].Node, Plugin: "TaintToleration", Reason: "node(s) had untolerated taint(s)"}
	}
	rejectedAll.Scores, rejectedAll.Feasible, rejectedAll.Node = nil, 0, ""
	mixedPlugins := fullDecision(4, 6)
	mixedPlugins.Scores[2].Plugins = mixedPlugins.Scores[2].Plugins[1:]
	oddWeighted := fullDecision(5, 6)
	oddWeighted.Scores[1].Plugins[0].Weighted++
	unfiltered := fullDecision(6, 6)
	unfiltered.Filter, unfiltered.FilterOmitted = unfiltered.Filter[:2], 4
	noPlugins := Decision{Attempt: 7, Pod: "default/p", Filter: []NodeFilter{{Node: "a", Passed: true}}, Scores: []NodeScore{{Node: "a", Plugins: []PluginScore{}, Total: 0}}}

	// form is how the attempt must be written: in columns, as a
	// Decision's fields, or either.
	type test struct {
		name string
		d    Decision
		form string
	}
	tests := []test{
		{"1,000 nodes, every tenth rejected", fullDecision(1, 1000), "columns"},
		{"every node rejected", rejectedAll, "columns"},
		{"no plugins", noPlugins, "columns"},
		{"plugins differ between nodes", mixedPlugins, "fields"},
		{"weighted is not normalized × weight", oddWeighted, "fields"},
		{"scored nodes missing from the filter list", unfiltered, "fields"},
	}
	for i, d := range sampleDecisions() {
		tests = append(tests, test{fmt.Sprintf("sample %d", i), d, ""})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := History{Pod: "default/p", UID: "u", Attempts: []Decision{tt.d, fullDecision(9, 3)}, Dropped: 2}
			b, err := EncodeHistory(h)
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeHistory(b)
			if err != nil {
				t.Fatalf("DecodeHistory: %v\n%s", err, recordJSON(t, b))
			}
			want := History{Pod: h.Pod, UID: h.UID, Attempts: []Decision{viaJSON(t, tt.d), viaJSON(t, h.Attempts[1])}, Dropped: 2}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("round trip changed the history:\n got %+v\nwant %+v", got, want)
			}
			raw := recordJSON(t, b)
			if tt.form == "columns" && !strings.Contains(raw, `"evaluated"`) {
				t.Errorf("the attempt was not written in columns: %.300s", raw)
			}
			if tt.form == "fields" && !strings.Contains(raw, `"scores":[{`) {
				t.Errorf("the attempt that does not fit columns was not written as a Decision: %.300s", raw)
			}
		})
	}
}

func TestColumnarRecordIsSmall(t *testing.T) {
	d := fullDecision(1, 1000)
	fields := len(encodingJSON(t, History{Pod: d.Pod, Attempts: []Decision{d}}))
	columns := len(appendRecord(nil, &History{Pod: d.Pod, Attempts: []Decision{d}}))
	t.Logf("one attempt at 1,000 nodes: %d bytes field by field, %d in columns", fields, columns)
	if columns*4 > fields {
		t.Errorf("the columnar record has %d bytes, more than a quarter of the %d of Decision's JSON", columns, fields)
	}
}

func TestDecodeHistoryRefusesMalformedColumns(t *testing.T) {
	head := `{"version":2,"pod":"default/p","uid":"u","attempts":[{"attempt":1,"time":null,"pod":"default/p","nodes":2,"feasible":1,`
	for name, attempt := range map[string]string{
		"score row of a node not evaluated": `"evaluated":["a"],"scorePlugins":[{"plugin":"P","weight":1}],"scoreRows":[[1,5,5,5]]}`,
		"negative node index":               `"evaluated":["a"],"scorePlugins":[{"plugin":"P","weight":1}],"scoreRows":[[-1,5,5,5]]}`,
		"score row too short":               `"evaluated":["a"],"scorePlugins":[{"plugin":"P","weight":1}],"scoreRows":[[0,5,5]]}`,
		"score row too long":                `"evaluated":["a"],"scorePlugins":[],"scoreRows":[[0,5,5]]}`,
		"rejection out of range":            `"evaluated":["a"],"rejected":[{"i":3,"plugin":"P"}]}`,
		"node rejected twice":               `"evaluated":["a","b"],"rejected":[{"i":1},{"i":1}]}`,
		"rejection without evaluated":       `"rejected":[{"i":0}]}`,
		"both filter forms":                 `"filter":[{"node":"a","passed":true}],"evaluated":["a"]}`,
		"both score forms":                  `"evaluated":["a"],"scores":[{"node":"a","plugins":[],"total":0}],"scorePlugins":[],"scoreRows":[[0,0]]}`,
	} {
		t.Run(name, func(t *testing.T) {
			if h, err := DecodeHistory(mustGzip(t, head+attempt+`]}`)); err == nil {
				t.Errorf("decoded %+v", h)
			}
		})
	}
	if _, err := DecodeHistory(mustGzip(t, `{"version":3,"pod":"default/p","uid":"u","attempts":[]}`)); err == nil || !strings.Contains(err.Error(), "version 3") {
		t.Errorf("a record of a later version: %v", err)
	}
}
