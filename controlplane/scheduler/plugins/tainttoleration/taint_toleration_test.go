package tainttoleration

import (
	"context"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

func nodeWithTaints(name string, taints ...v1.Taint) *framework.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{Taints: taints}})
	return ni
}

func podWithTolerations(ts ...v1.Toleration) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: v1.PodSpec{Tolerations: ts}}
}

func TestTaintTolerationFilter(t *testing.T) {
	dedicated := v1.Taint{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}
	tests := []struct {
		name     string
		pod      *v1.Pod
		node     *framework.NodeInfo
		wantCode framework.Code
	}{
		{"no taints", podWithTolerations(), nodeWithTaints("n"), framework.Success},
		{"untolerated NoSchedule", podWithTolerations(), nodeWithTaints("n", dedicated), framework.UnschedulableAndUnresolvable},
		{"Equal toleration matches key and value",
			podWithTolerations(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "gpu", Effect: v1.TaintEffectNoSchedule}),
			nodeWithTaints("n", dedicated), framework.Success},
		{"Equal toleration with another value",
			podWithTolerations(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "cpu"}),
			nodeWithTaints("n", dedicated), framework.UnschedulableAndUnresolvable},
		{"Exists toleration for the key",
			podWithTolerations(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpExists}),
			nodeWithTaints("n", dedicated), framework.Success},
		{"Exists toleration with empty key tolerates everything",
			podWithTolerations(v1.Toleration{Operator: v1.TolerationOpExists}),
			nodeWithTaints("n", dedicated, v1.Taint{Key: "x", Effect: v1.TaintEffectNoExecute}), framework.Success},
		{"toleration for another effect",
			podWithTolerations(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}),
			nodeWithTaints("n", dedicated), framework.UnschedulableAndUnresolvable},
		{"untolerated NoExecute",
			podWithTolerations(),
			nodeWithTaints("n", v1.Taint{Key: "node.kubernetes.io/not-ready", Effect: v1.TaintEffectNoExecute}), framework.UnschedulableAndUnresolvable},
		{"tolerated NoExecute",
			podWithTolerations(v1.Toleration{Key: "node.kubernetes.io/not-ready", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}),
			nodeWithTaints("n", v1.Taint{Key: "node.kubernetes.io/not-ready", Effect: v1.TaintEffectNoExecute}), framework.Success},
		{"PreferNoSchedule never filters",
			podWithTolerations(),
			nodeWithTaints("n", v1.Taint{Key: "soft", Effect: v1.TaintEffectPreferNoSchedule}), framework.Success},
	}
	pl := &TaintToleration{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := pl.Filter(context.Background(), framework.NewCycleState(), tt.pod, tt.node)
			if st.Code() != tt.wantCode {
				t.Fatalf("code = %v, want %v", st.Code(), tt.wantCode)
			}
			if !st.IsSuccess() && st.Message() != ErrReasonNotMatch {
				t.Errorf("message = %q, want %q", st.Message(), ErrReasonNotMatch)
			}
		})
	}
}

func TestTaintTolerationScore(t *testing.T) {
	soft := func(key string) v1.Taint { return v1.Taint{Key: key, Effect: v1.TaintEffectPreferNoSchedule} }
	tests := []struct {
		name  string
		pod   *v1.Pod
		nodes []*framework.NodeInfo
		want  []int64
	}{
		{
			name:  "fewer untolerated PreferNoSchedule taints score higher",
			pod:   podWithTolerations(),
			nodes: []*framework.NodeInfo{nodeWithTaints("a"), nodeWithTaints("b", soft("x")), nodeWithTaints("c", soft("x"), soft("y"))},
			want:  []int64{100, 50, 0},
		},
		{
			name:  "tolerated taints don't count",
			pod:   podWithTolerations(v1.Toleration{Key: "x", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectPreferNoSchedule}),
			nodes: []*framework.NodeInfo{nodeWithTaints("a", soft("x")), nodeWithTaints("b", soft("y"))},
			want:  []int64{100, 0},
		},
		{
			name:  "no taints anywhere is all 100",
			pod:   podWithTolerations(),
			nodes: []*framework.NodeInfo{nodeWithTaints("a"), nodeWithTaints("b")},
			want:  []int64{100, 100},
		},
	}
	pl := &TaintToleration{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			state := framework.NewCycleState()
			pl.PreScore(ctx, state, tt.pod, tt.nodes)
			var scores framework.NodeScoreList
			for _, ni := range tt.nodes {
				s, st := pl.Score(ctx, state, tt.pod, ni)
				if !st.IsSuccess() {
					t.Fatalf("Score: %v", st.Message())
				}
				scores = append(scores, framework.NodeScore{Name: ni.Node().Name, Score: s})
			}
			pl.ScoreExtensions().NormalizeScore(ctx, state, tt.pod, scores)
			var got []int64
			for _, s := range scores {
				got = append(got, s.Score)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("scores = %v, want %v", got, tt.want)
			}
		})
	}
}
