package explain

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
)

func bigDecision(nodes int, reasonLen int) Decision {
	d := Decision{Attempt: 1, Pod: "default/p", Node: "n0", Nodes: nodes, Feasible: nodes / 2, Message: "Successfully assigned default/p to n0"}
	for i := 0; i < nodes; i++ {
		name := fmt.Sprintf("n%d", i)
		if i%2 == 0 {
			d.Filter = append(d.Filter, NodeFilter{Node: name, Passed: true})
			d.Scores = append(d.Scores, NodeScore{Node: name, Total: int64(i), Plugins: []PluginScore{{Plugin: "NodeResourcesFit", Raw: int64(i), Normalized: int64(i), Weight: 1, Weighted: int64(i)}}})
		} else {
			d.Filter = append(d.Filter, NodeFilter{Node: name, Plugin: "NodeResourcesFit", Reason: strings.Repeat("x", reasonLen)})
		}
	}
	return d
}

func TestCompact(t *testing.T) {
	tests := []struct {
		name              string
		d                 Decision
		wantFilter        int
		wantScores        int
		wantFirstScore    string
		wantFilterOmitted int
	}{
		{"small decision kept whole", bigDecision(4, 10), 4, 2, "n2", 0},
		{"capped at the best 5", bigDecision(100, 10), 5, 5, "n98", 95},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Compact(tt.d)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) > MaxCompactBytes {
				t.Fatalf("compact form has %d bytes, limit %d", len(b), MaxCompactBytes)
			}
			var got Decision
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if len(got.Filter) != tt.wantFilter || len(got.Scores) != tt.wantScores {
				t.Errorf("%d filter and %d score entries, want %d and %d", len(got.Filter), len(got.Scores), tt.wantFilter, tt.wantScores)
			}
			if len(got.Scores) == 0 || got.Scores[0].Node != tt.wantFirstScore {
				t.Errorf("best score first: got %s, want %s", got.Scores[0].Node, tt.wantFirstScore)
			}
			if got.FilterOmitted != tt.wantFilterOmitted || got.ScoresOmitted != len(tt.d.Scores)-tt.wantScores {
				t.Errorf("omitted %d filter / %d scores", got.FilterOmitted, got.ScoresOmitted)
			}
			if !got.Filter[0].Passed || got.Filter[0].Node != tt.wantFirstScore {
				t.Errorf("first filter entry %+v, want the best passed node", got.Filter[0])
			}
		})
	}
}

func TestCompactHalvesUntilItFits(t *testing.T) {
	d := Decision{Attempt: 3, Pod: "default/p", Nodes: 100, Message: "0/100 nodes are available: 100 x."}
	for i := 0; i < 100; i++ {
		d.Filter = append(d.Filter, NodeFilter{Node: fmt.Sprintf("n%03d", i), Plugin: "P", Reason: strings.Repeat("x", 8000)})
	}
	b, err := Compact(d)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > MaxCompactBytes {
		t.Fatalf("compact form has %d bytes, limit %d", len(b), MaxCompactBytes)
	}
	var got Decision
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	// 5 entries of 8 KB are too many, 2 fit.
	if len(got.Filter) != 2 || got.FilterOmitted != 98 || got.Filter[0].Node != "n000" {
		t.Errorf("kept %d entries starting at %q, omitted %d; want 2 from n000, 98 omitted", len(got.Filter), got.Filter[0].Node, got.FilterOmitted)
	}
}

// TestSmallestIsAStableSortsHead compares smallest with sorting the whole
// list stably and keeping its head, on lists with many ties.
func TestSmallestIsAStableSortsHead(t *testing.T) {
	type item struct{ key, pos int }
	less := func(a, b *item) bool { return a.key < b.key }
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 500 {
		s := make([]item, rng.IntN(40))
		for i := range s {
			s[i] = item{rng.IntN(8), i}
		}
		n := rng.IntN(12)
		want := slices.Clone(s)
		sort.SliceStable(want, func(i, j int) bool { return less(&want[i], &want[j]) })
		want = want[:min(n, len(want))]
		if got := smallest(s, n, less); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("round %d: smallest(%v, %d) = %v, want %v", round, s, n, got, want)
		}
	}
}
