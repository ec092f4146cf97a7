package noderesources

import (
	"context"
	"testing"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

func TestScoringStrategies(t *testing.T) {
	tests := []struct {
		name string
		args string
		want int64
	}{
		// node 4 cpu / 10000 bytes, existing 1 cpu / 3000, pod 1 cpu / 2000:
		// requested cpu 2000/4000 = 50 %, memory 5000/10000 = 50 %.
		{"least allocated", `{"scoringStrategy":{"type":"LeastAllocated"}}`, 50},
		{"most allocated", `{"scoringStrategy":{"type":"MostAllocated"}}`, 50},
		{"most allocated weighted", `{"scoringStrategy":{"type":"MostAllocated","resources":[{"name":"cpu","weight":3},{"name":"memory","weight":1}]}}`, 50},
		// shape 0→0, 100→10: 50 % → 50.
		{"requested to capacity ratio", `{"scoringStrategy":{"type":"RequestedToCapacityRatio","requestedToCapacityRatio":{"shape":[{"utilization":0,"score":0},{"utilization":100,"score":10}]}}}`, 50},
		// shape 0→10, 100→0 (bin packing reversed): 50 % → 50.
		{"requested to capacity ratio reversed", `{"scoringStrategy":{"type":"RequestedToCapacityRatio","requestedToCapacityRatio":{"shape":[{"utilization":0,"score":10},{"utilization":100,"score":0}]}}}`, 50},
		// shape 0→0, 40→10: 50 % is past the last point → 100.
		{"requested to capacity ratio past the last point", `{"scoringStrategy":{"type":"RequestedToCapacityRatio","requestedToCapacityRatio":{"shape":[{"utilization":0,"score":0},{"utilization":40,"score":10}]}}}`, 100},
	}
	ni := nodeInfo(node("n", "4", "10000", 110), pod("o", container("1", "3000")))
	p := pod("p", container("1", "2000"))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl, err := NewFit(context.Background(), &framework.RawArgs{Raw: []byte(tt.args)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			state := framework.NewCycleState()
			pl.(*Fit).PreScore(context.Background(), state, p, nil)
			got, st := pl.(*Fit).Score(context.Background(), state, p, ni)
			if !st.IsSuccess() || got != tt.want {
				t.Errorf("score = %d (%v), want %d", got, st.Message(), tt.want)
			}
		})
	}
	t.Run("most allocated prefers the fuller node", func(t *testing.T) {
		pl, _ := NewFit(context.Background(), &framework.RawArgs{Raw: []byte(`{"scoringStrategy":{"type":"MostAllocated"}}`)}, nil)
		state := framework.NewCycleState()
		pl.(*Fit).PreScore(context.Background(), state, p, nil)
		empty, _ := pl.(*Fit).Score(context.Background(), state, p, nodeInfo(node("e", "4", "10000", 110)))
		full, _ := pl.(*Fit).Score(context.Background(), state, p, ni)
		if full <= empty {
			t.Errorf("full %d <= empty %d", full, empty)
		}
	})
	for _, bad := range []string{`{"scoringStrategy":{"type":"Nope"}}`, `{"scoringStrategy":{"type":"RequestedToCapacityRatio"}}`, `{"unknown":1}`} {
		if _, err := NewFit(context.Background(), &framework.RawArgs{Raw: []byte(bad)}, nil); err == nil {
			t.Errorf("args %s accepted", bad)
		}
	}
}

func TestBalancedAllocationScore(t *testing.T) {
	cases := []struct {
		name     string
		nodeInfo *framework.NodeInfo
		podCPU   string
		podMem   string
		want     int64
	}{
		// cpu 2000/4000 = 0.5, memory 5000/10000 = 0.5 → 100.
		{"balanced", nodeInfo(node("n", "4", "10000", 110), pod("o", container("1", "3000"))), "1", "2000", 100},
		// cpu 1000/4000 = 0.25, memory 8000/10000 = 0.8 → std 0.275 → 72.
		{"unbalanced", nodeInfo(node("n", "4", "10000", 110), pod("o", container("", "6000"))), "1", "2000", 72},
		// over-committed memory is capped at 1: cpu 0.25, memory 1 → 62.
		{"capped", nodeInfo(node("n", "4", "10000", 110), pod("o", container("", "9000"))), "1", "2000", 62},
		{"best-effort pod is not scored", nodeInfo(node("n", "4", "10000", 110)), "", "", 0},
	}
	pl, err := NewBalancedAllocation(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ba := pl.(*BalancedAllocation)
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			p := pod("p", container(tt.podCPU, tt.podMem))
			state := framework.NewCycleState()
			ba.PreScore(context.Background(), state, p, nil)
			got, st := ba.Score(context.Background(), state, p, tt.nodeInfo)
			if !st.IsSuccess() || got != tt.want {
				t.Errorf("score = %d (%v), want %d", got, st.Message(), tt.want)
			}
		})
	}
}
