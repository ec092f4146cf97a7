package framework

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// fakePlugin filters nodes listed in reject and scores from a table.
type fakePlugin struct {
	name      string
	reject    map[string]*Status
	scores    map[string]int64
	normalize func(NodeScoreList)
}

func (p *fakePlugin) Name() string { return p.name }
func (p *fakePlugin) Filter(_ context.Context, _ *CycleState, _ *v1.Pod, ni *NodeInfo) *Status {
	return p.reject[ni.Node().Name]
}
func (p *fakePlugin) Score(_ context.Context, _ *CycleState, _ *v1.Pod, ni *NodeInfo) (int64, *Status) {
	return p.scores[ni.Node().Name], nil
}
func (p *fakePlugin) ScoreExtensions() ScoreExtensions {
	if p.normalize == nil {
		return nil
	}
	return p
}
func (p *fakePlugin) NormalizeScore(_ context.Context, _ *CycleState, _ *v1.Pod, s NodeScoreList) *Status {
	p.normalize(s)
	return nil
}

type fakeSort struct{}

func (fakeSort) Name() string                  { return "Sort" }
func (fakeSort) Less(a, b *QueuedPodInfo) bool { return a.Timestamp.Before(b.Timestamp) }

func newTestFramework(t *testing.T, plugins []Plugin, weights map[string]int64) *Framework {
	t.Helper()
	reg := Registry{}
	refs := []PluginRef{{Name: "Sort"}}
	if err := reg.Register("Sort", func(context.Context, runtime.Object, Handle) (Plugin, error) { return fakeSort{}, nil }); err != nil {
		t.Fatal(err)
	}
	for _, p := range plugins {
		if err := reg.Register(p.Name(), func(context.Context, runtime.Object, Handle) (Plugin, error) { return p, nil }); err != nil {
			t.Fatal(err)
		}
		refs = append(refs, PluginRef{Name: p.Name(), Weight: weights[p.Name()]})
	}
	f, err := NewFramework(context.Background(), reg, Profile{SchedulerName: "test", Plugins: refs}, nil, 4)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func testNodes(names ...string) []*NodeInfo {
	var out []*NodeInfo
	for _, n := range names {
		ni := NewNodeInfo()
		ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
		out = append(out, ni)
	}
	return out
}

func TestRunScorePluginsWeightedSum(t *testing.T) {
	a := &fakePlugin{name: "A", scores: map[string]int64{"n1": 10, "n2": 80}}
	b := &fakePlugin{name: "B", scores: map[string]int64{"n1": 2, "n2": 1}, normalize: func(s NodeScoreList) {
		for i := range s {
			s[i].Score *= 50
		}
	}}
	f := newTestFramework(t, []Plugin{a, b}, map[string]int64{"B": 3})
	scores, st := f.RunScorePlugins(context.Background(), NewCycleState(), &v1.Pod{}, testNodes("n1", "n2"))
	if !st.IsSuccess() {
		t.Fatal(st.Message())
	}
	tests := []struct {
		node      string
		wantTotal int64
		wantB     PluginScore
	}{
		// n1: A 10*1 + B (2*50)*3 = 310; n2: A 80*1 + B (1*50)*3 = 230.
		{"n1", 310, PluginScore{Plugin: "B", Raw: 2, Normalized: 100, Weight: 3, Weighted: 300}},
		{"n2", 230, PluginScore{Plugin: "B", Raw: 1, Normalized: 50, Weight: 3, Weighted: 150}},
	}
	for i, tt := range tests {
		t.Run(tt.node, func(t *testing.T) {
			got := scores[i]
			if got.Node != tt.node || got.Total != tt.wantTotal {
				t.Errorf("got %s total %d, want %s total %d", got.Node, got.Total, tt.node, tt.wantTotal)
			}
			if got.Plugins[1] != tt.wantB {
				t.Errorf("plugin B = %+v, want %+v", got.Plugins[1], tt.wantB)
			}
			if got.Plugins[0].Weight != 1 {
				t.Errorf("default weight = %d, want 1", got.Plugins[0].Weight)
			}
		})
	}
}

// TestScoresStayTheirCyclesUntilReleased: the arrays of a cycle's scores
// are reused only once that cycle released them; a second scoring in the
// same cycle, or another cycle's, leaves them as they were.
func TestScoresStayTheirCyclesUntilReleased(t *testing.T) {
	a := &fakePlugin{name: "A", scores: map[string]int64{"n1": 10, "n2": 80, "n3": 30}}
	f := newTestFramework(t, []Plugin{a}, nil)
	ctx := context.Background()
	run := func(state *CycleState, nodes ...string) []NodePluginScores {
		t.Helper()
		scores, st := f.RunScorePlugins(ctx, state, &v1.Pod{}, testNodes(nodes...))
		if !st.IsSuccess() {
			t.Fatal(st.Message())
		}
		return scores
	}
	snapshot := func(s []NodePluginScores) string { return fmt.Sprintf("%+v", s) }

	first := NewCycleState()
	kept := run(first, "n1", "n2")
	want := snapshot(kept)
	again := run(first, "n3", "n1")
	other := NewCycleState()
	run(other, "n2", "n3", "n1")
	if got := snapshot(kept); got != want {
		t.Fatalf("scores changed by later scoring: %s, want %s", got, want)
	}
	if snapshot(again) == want || again[0].Node != "n3" || again[0].Total != 30 {
		t.Errorf("second scoring of the cycle: %s", snapshot(again))
	}

	// Released scores may be reused: a later cycle's are right whatever
	// the arrays held before.
	first.ReleaseScores()
	other.ReleaseScores()
	first.ReleaseScores() // twice is harmless
	for range 3 {
		state := NewCycleState()
		got := run(state, "n3", "n2")
		if len(got) != 2 || got[0].Node != "n3" || got[0].Total != 30 || got[1].Node != "n2" || got[1].Total != 80 || len(got[1].Plugins) != 1 || got[1].Plugins[0].Weighted != 80 {
			t.Fatalf("scores after reuse: %s", snapshot(got))
		}
		state.ReleaseScores()
	}
}

func TestRunScorePluginsRejectsOutOfRange(t *testing.T) {
	f := newTestFramework(t, []Plugin{&fakePlugin{name: "A", scores: map[string]int64{"n1": 101}}}, nil)
	_, st := f.RunScorePlugins(context.Background(), NewCycleState(), &v1.Pod{}, testNodes("n1"))
	if st.Code() != Error || !strings.Contains(st.Message(), "invalid score 101") {
		t.Fatalf("status = %v %q, want Error about invalid score", st.Code(), st.Message())
	}
}

func TestSelectHost(t *testing.T) {
	scores := func(totals ...int64) []NodePluginScores {
		var out []NodePluginScores
		for i, s := range totals {
			out = append(out, NodePluginScores{Node: fmt.Sprintf("n%d", i), Total: s})
		}
		return out
	}
	tests := []struct {
		name    string
		scores  []NodePluginScores
		allowed map[string]bool
	}{
		{"single best", scores(10, 90, 30), map[string]bool{"n1": true}},
		{"tie among the best", scores(90, 10, 90, 90, 5), map[string]bool{"n0": true, "n2": true, "n3": true}},
		{"all equal", scores(7, 7), map[string]bool{"n0": true, "n1": true}},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := map[string]int{}
			for i := 0; i < 600; i++ {
				host, err := SelectHost(tt.scores, rng)
				if err != nil {
					t.Fatal(err)
				}
				if !tt.allowed[host] {
					t.Fatalf("picked %s, not among the best %v", host, tt.allowed)
				}
				seen[host]++
			}
			for n := range tt.allowed {
				if seen[n] < 600/len(tt.allowed)/3 {
					t.Errorf("node %s picked %d times of 600, want a fair share; picks: %v", n, seen[n], seen)
				}
			}
		})
	}
	if _, err := SelectHost(nil, rng); err == nil {
		t.Error("SelectHost(nil) did not fail")
	}
}

func TestFilterNodes(t *testing.T) {
	p := &fakePlugin{name: "F", reject: map[string]*Status{
		"n1": NewStatus(Unschedulable, "Insufficient cpu"),
		"n3": NewStatus(UnschedulableAndUnresolvable, "node(s) had untolerated taint(s)"),
	}}
	f := newTestFramework(t, []Plugin{p}, nil)
	nodes := testNodes("n0", "n1", "n2", "n3", "n4")

	t.Run("all nodes", func(t *testing.T) {
		res, err := f.FilterNodes(context.Background(), NewCycleState(), &v1.Pod{}, nodes, 0, len(nodes))
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 5 {
			t.Fatalf("evaluated %d nodes, want 5", len(res))
		}
		for _, r := range res {
			name := r.NodeInfo.Node().Name
			if want := p.reject[name]; r.Status != want {
				t.Errorf("node %s status %v, want %v", name, r.Status.Message(), want.Message())
			}
			if !r.Status.IsSuccess() && r.Status.Plugin() != "F" {
				t.Errorf("node %s status plugin %q, want F", name, r.Status.Plugin())
			}
		}
	})
	t.Run("stops at the wanted number of feasible nodes", func(t *testing.T) {
		res, err := f.FilterNodes(context.Background(), NewCycleState(), &v1.Pod{}, nodes, 2, 1)
		if err != nil {
			t.Fatal(err)
		}
		passed := 0
		for _, r := range res {
			if r.Status.IsSuccess() {
				passed++
			}
		}
		if passed != 1 {
			t.Errorf("%d feasible nodes returned, want 1", passed)
		}
	})
	t.Run("error aborts", func(t *testing.T) {
		p.reject["n4"] = NewStatus(Error, "boom")
		defer delete(p.reject, "n4")
		if _, err := f.FilterNodes(context.Background(), NewCycleState(), &v1.Pod{}, nodes, 0, 5); err == nil || !strings.Contains(err.Error(), "boom") {
			t.Errorf("err = %v, want boom", err)
		}
	})
}

func TestFitErrorMessage(t *testing.T) {
	cpu := NewStatus(Unschedulable, "Insufficient cpu")
	tests := []struct {
		name string
		err  FitError
		want string
	}{
		{
			name: "reasons counted and sorted",
			err: FitError{NumAllNodes: 4, Diagnosis: Diagnosis{NodeToStatus: map[string]*Status{
				"a": cpu, "b": NewStatus(Unschedulable, "Insufficient cpu", "Insufficient memory"),
				"c": NewStatus(UnschedulableAndUnresolvable, "node(s) had untolerated taint(s)"),
				"d": NewStatus(UnschedulableAndUnresolvable, "node(s) had untolerated taint(s)"),
			}, PostFilterMsg: "preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."}},
			want: "0/4 nodes are available: 1 Insufficient memory, 2 Insufficient cpu, 2 node(s) had untolerated taint(s). preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.",
		},
		{
			name: "prefilter message replaces the histogram",
			err:  FitError{NumAllNodes: 2, Diagnosis: Diagnosis{NodeToStatus: map[string]*Status{"a": cpu}, PreFilterMsg: "something is missing"}},
			want: "0/2 nodes are available: something is missing.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestNewFrameworkErrors(t *testing.T) {
	reg := Registry{"Sort": func(context.Context, runtime.Object, Handle) (Plugin, error) { return fakeSort{}, nil }}
	tests := []struct {
		name    string
		plugins []PluginRef
		want    string
	}{
		{"unknown plugin", []PluginRef{{Name: "Sort"}, {Name: "Nope"}}, "not registered"},
		{"no queue sort", nil, "no queue sort plugin"},
		{"duplicate", []PluginRef{{Name: "Sort"}, {Name: "Sort"}}, "listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewFramework(context.Background(), reg, Profile{SchedulerName: "x", Plugins: tt.plugins}, nil, 0)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestNodeInfoAccounting(t *testing.T) {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}, Spec: v1.PodSpec{Containers: []v1.Container{{}}}}
	ni := NewNodeInfo(p)
	if ni.NonZeroRequested.MilliCPU != DefaultMilliCPURequest || ni.Requested.MilliCPU != 0 {
		t.Fatalf("requested %d / non-zero %d, want 0 / %d", ni.Requested.MilliCPU, ni.NonZeroRequested.MilliCPU, DefaultMilliCPURequest)
	}
	if err := ni.RemovePod(p); err != nil {
		t.Fatal(err)
	}
	if len(ni.Pods) != 0 || ni.NonZeroRequested.MilliCPU != 0 {
		t.Errorf("after removal: %d pods, %dm", len(ni.Pods), ni.NonZeroRequested.MilliCPU)
	}
	if err := ni.RemovePod(p); err == nil {
		t.Error("removing an absent pod did not fail")
	}
}
