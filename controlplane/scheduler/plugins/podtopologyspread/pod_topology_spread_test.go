package podtopologyspread

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

func node(name, zone string) *v1.Node {
	lbls := map[string]string{v1.LabelHostname: name}
	if zone != "" {
		lbls[v1.LabelTopologyZone] = zone
	}
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}
}

func pod(name, nodeName string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name), Labels: map[string]string{"app": "web"}}, Spec: v1.PodSpec{NodeName: nodeName}}
}

func spread(p *v1.Pod, key string, maxSkew int32, when v1.UnsatisfiableConstraintAction) *v1.Pod {
	p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, v1.TopologySpreadConstraint{
		MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: when,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
	})
	return p
}

func TestPodTopologySpreadFilter(t *testing.T) {
	nodes := []*v1.Node{node("a", "z1"), node("b", "z1"), node("c", "z2"), node("d", "")}
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing []*v1.Pod
		want     map[string]string
	}{
		{
			name:     "zone with more pods is refused at maxSkew 1",
			pod:      spread(pod("p", ""), v1.LabelTopologyZone, 1, v1.DoNotSchedule),
			existing: []*v1.Pod{pod("w1", "a")},
			want:     map[string]string{"a": ErrReasonConstraintsNotMatch, "b": ErrReasonConstraintsNotMatch, "c": "", "d": ErrReasonNodeLabelNotMatch},
		},
		{
			name:     "balanced zones accept either",
			pod:      spread(pod("p", ""), v1.LabelTopologyZone, 1, v1.DoNotSchedule),
			existing: []*v1.Pod{pod("w1", "a"), pod("w2", "c")},
			want:     map[string]string{"a": "", "b": "", "c": "", "d": ErrReasonNodeLabelNotMatch},
		},
		{
			name:     "maxSkew 2 tolerates a difference of one",
			pod:      spread(pod("p", ""), v1.LabelTopologyZone, 2, v1.DoNotSchedule),
			existing: []*v1.Pod{pod("w1", "a")},
			want:     map[string]string{"a": "", "b": "", "c": "", "d": ErrReasonNodeLabelNotMatch},
		},
		{
			name:     "ScheduleAnyway never filters",
			pod:      spread(pod("p", ""), v1.LabelTopologyZone, 1, v1.ScheduleAnyway),
			existing: []*v1.Pod{pod("w1", "a"), pod("w2", "a")},
			want:     map[string]string{"a": "", "b": "", "c": "", "d": ""},
		},
		{
			name: "terminating pods don't count",
			pod:  spread(pod("p", ""), v1.LabelTopologyZone, 1, v1.DoNotSchedule),
			existing: []*v1.Pod{func() *v1.Pod {
				p := pod("w1", "a")
				p.DeletionTimestamp = &metav1.Time{}
				return p
			}()},
			want: map[string]string{"a": "", "b": "", "c": "", "d": ErrReasonNodeLabelNotMatch},
		},
		{
			name: "minDomains above the domain count makes the minimum 0",
			pod: func() *v1.Pod {
				p := spread(pod("p", ""), v1.LabelTopologyZone, 1, v1.DoNotSchedule)
				three := int32(3)
				p.Spec.TopologySpreadConstraints[0].MinDomains = &three
				return p
			}(),
			existing: []*v1.Pod{pod("w1", "a"), pod("w2", "c")},
			want:     map[string]string{"a": ErrReasonConstraintsNotMatch, "b": ErrReasonConstraintsNotMatch, "c": ErrReasonConstraintsNotMatch, "d": ErrReasonNodeLabelNotMatch},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list := framework.NewNodeInfoList(nodes, tt.existing)
			pl := NewWithLister(list)
			state := framework.NewCycleState()
			if st := pl.PreFilter(context.Background(), state, tt.pod); !st.IsSuccess() {
				t.Fatal(st.Message())
			}
			for _, ni := range list {
				name := ni.Node().Name
				if got := pl.Filter(context.Background(), state, tt.pod, ni).Message(); got != tt.want[name] {
					t.Errorf("node %s: %q, want %q", name, got, tt.want[name])
				}
			}
		})
	}
}

func TestPodTopologySpreadScore(t *testing.T) {
	nodes := []*v1.Node{node("a", "z1"), node("b", "z1"), node("c", "z2"), node("d", "")}
	// Zones z1 (2 pods) and z2 (0): weight log(2+2); raw z1 = round(2*1.386) = 3, z2 = 0.
	// Normalized: 100*(3+0-3)/3 = 0 for z1, 100*(3+0-0)/3 = 100 for z2; d lacks the key: 0.
	p := spread(pod("p", ""), v1.LabelTopologyZone, 1, v1.ScheduleAnyway)
	list := framework.NewNodeInfoList(nodes, []*v1.Pod{pod("w1", "a"), pod("w2", "b")})
	pl := NewWithLister(list)
	state := framework.NewCycleState()
	if st := pl.PreScore(context.Background(), state, p, list); !st.IsSuccess() {
		t.Fatal(st.Message())
	}
	var scores framework.NodeScoreList
	for _, ni := range list {
		s, st := pl.Score(context.Background(), state, p, ni)
		if !st.IsSuccess() {
			t.Fatal(st.Message())
		}
		scores = append(scores, framework.NodeScore{Name: ni.Node().Name, Score: s})
	}
	wantRaw := map[string]int64{"a": 3, "b": 3, "c": 0, "d": 0}
	for _, s := range scores {
		if s.Score != wantRaw[s.Name] {
			t.Errorf("raw %s = %d, want %d", s.Name, s.Score, wantRaw[s.Name])
		}
	}
	pl.NormalizeScore(context.Background(), state, p, scores)
	want := map[string]int64{"a": 0, "b": 0, "c": 100, "d": 0}
	for _, s := range scores {
		if s.Score != want[s.Name] {
			t.Errorf("normalized %s = %d, want %d", s.Name, s.Score, want[s.Name])
		}
	}
}
