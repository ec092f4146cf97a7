package explain

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// encodingJSON is what encoding/json writes for v with HTML escaping off,
// without the Encoder's newline.
func encodingJSON(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// awkward are strings whose JSON needs escapes or replacements.
var awkward = []string{
	"", "plain", `quote " and \ backslash`, "<html> & more", "tab\tnew\nline\rcr\bbs\fff",
	"\x00\x01\x1f\x7f", "한국어 노드", "line\u2028sep\u2029par", "bad \xff utf8 \xc3", "emoji 🙂",
}

// sampleDecisions are decisions with awkward strings and shapes.
func sampleDecisions() []Decision {
	decisions := []Decision{
		{},
		bigDecision(7, 3),
		{
			Attempt: 4, Time: metav1.NewTime(time.Date(2026, 12, 2, 1, 2, 3, 456, time.FixedZone("KST", 9*3600))),
			Pod: "default/web", Nodes: 3, FilterPlugins: []string{"NodeName", "TaintToleration"},
			Filter:        []NodeFilter{{Node: "a", Plugin: "TaintToleration", Reason: "node(s) had untolerated taint {k: v}"}},
			FilterOmitted: 2, ScoresOmitted: 1, NominatedNode: "b", Victims: []string{"default/low", "x"}, PDBViolations: 1,
			Scores:  []NodeScore{{Node: "b", Plugins: nil, Total: -1}, {Node: "c", Plugins: []PluginScore{{Plugin: "P", Weight: 0}}}},
			Message: "0/3 nodes are available: 1 node(s) had untolerated taint(s).",
		},
	}
	for _, s := range awkward {
		decisions = append(decisions, Decision{Pod: s, Node: s, Message: s, FilterPlugins: []string{s}, Filter: []NodeFilter{{Node: s, Plugin: s, Reason: s}},
			Scores: []NodeScore{{Node: s, Plugins: []PluginScore{{Plugin: s, Raw: 1, Normalized: 2, Weight: 3, Weighted: 6}}}}, Victims: []string{s}, NominatedNode: s})
	}
	return decisions
}

func TestAppendDecisionMatchesEncodingJSON(t *testing.T) {
	for i, d := range sampleDecisions() {
		if got, want := appendDecision(nil, &d), encodingJSON(t, d); !bytes.Equal(got, want) {
			t.Errorf("decision %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range awkward {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := appendString(nil, s), encodingJSON(t, s); !bytes.Equal(got, want) {
			t.Errorf("appendString(%q) = %s, want %s", s, got, want)
		}
	})
}
