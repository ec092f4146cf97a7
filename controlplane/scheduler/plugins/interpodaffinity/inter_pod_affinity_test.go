package interpodaffinity

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

func node(name, zone string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: name, v1.LabelTopologyZone: zone}}}
}

func pod(name, nodeName string, lbls map[string]string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name), Labels: lbls}, Spec: v1.PodSpec{NodeName: nodeName}}
}

func term(key string, lbls map[string]string) v1.PodAffinityTerm {
	return v1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: lbls}}
}

func withAffinity(p *v1.Pod, affinity, anti []v1.PodAffinityTerm) *v1.Pod {
	p.Spec.Affinity = &v1.Affinity{}
	if affinity != nil {
		p.Spec.Affinity.PodAffinity = &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: affinity}
	}
	if anti != nil {
		p.Spec.Affinity.PodAntiAffinity = &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: anti}
	}
	return p
}

func TestInterPodAffinityFilter(t *testing.T) {
	web := map[string]string{"app": "web"}
	db := map[string]string{"app": "db"}
	nodes := []*v1.Node{node("a", "z1"), node("b", "z1"), node("c", "z2")}
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing []*v1.Pod
		want     map[string]string // node -> reason ("" passes)
	}{
		{
			name:     "anti-affinity per hostname keeps off the node with a match",
			pod:      withAffinity(pod("p", "", web), nil, []v1.PodAffinityTerm{term(v1.LabelHostname, web)}),
			existing: []*v1.Pod{pod("w1", "a", web)},
			want:     map[string]string{"a": ErrReasonAntiAffinityRulesNotMatch, "b": "", "c": ""},
		},
		{
			name:     "anti-affinity per zone keeps off the whole zone",
			pod:      withAffinity(pod("p", "", web), nil, []v1.PodAffinityTerm{term(v1.LabelTopologyZone, web)}),
			existing: []*v1.Pod{pod("w1", "a", web)},
			want:     map[string]string{"a": ErrReasonAntiAffinityRulesNotMatch, "b": ErrReasonAntiAffinityRulesNotMatch, "c": ""},
		},
		{
			name:     "affinity per zone requires a matching pod in the zone",
			pod:      withAffinity(pod("p", "", web), []v1.PodAffinityTerm{term(v1.LabelTopologyZone, db)}, nil),
			existing: []*v1.Pod{pod("d1", "c", db)},
			want:     map[string]string{"a": ErrReasonAffinityRulesNotMatch, "b": ErrReasonAffinityRulesNotMatch, "c": ""},
		},
		{
			name: "affinity with no match anywhere fails when the pod does not match itself",
			pod:  withAffinity(pod("p", "", web), []v1.PodAffinityTerm{term(v1.LabelTopologyZone, db)}, nil),
			want: map[string]string{"a": ErrReasonAffinityRulesNotMatch, "b": ErrReasonAffinityRulesNotMatch, "c": ErrReasonAffinityRulesNotMatch},
		},
		{
			name: "first pod of a self-affine group may go anywhere",
			pod:  withAffinity(pod("p", "", web), []v1.PodAffinityTerm{term(v1.LabelTopologyZone, web)}, nil),
			want: map[string]string{"a": "", "b": "", "c": ""},
		},
		{
			name:     "existing pod's anti-affinity keeps the pod out of its domain",
			pod:      pod("p", "", web),
			existing: []*v1.Pod{withAffinity(pod("x", "c", db), nil, []v1.PodAffinityTerm{term(v1.LabelTopologyZone, web)})},
			want:     map[string]string{"a": "", "b": "", "c": ErrReasonExistingAntiAffinityRulesNotMatch},
		},
		{
			name:     "pods in other namespaces don't count",
			pod:      withAffinity(pod("p", "", web), nil, []v1.PodAffinityTerm{term(v1.LabelHostname, web)}),
			existing: []*v1.Pod{func() *v1.Pod { p := pod("w1", "a", web); p.Namespace = "other"; return p }()},
			want:     map[string]string{"a": "", "b": "", "c": ""},
		},
		{
			name:     "a node without the topology key fails required affinity",
			pod:      withAffinity(pod("p", "", web), []v1.PodAffinityTerm{term("rack", web)}, nil),
			existing: []*v1.Pod{pod("w1", "a", web)},
			want:     map[string]string{"a": ErrReasonAffinityRulesNotMatch, "b": ErrReasonAffinityRulesNotMatch, "c": ErrReasonAffinityRulesNotMatch},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list := framework.NewNodeInfoList(nodes, tt.existing)
			pl := NewWithLister(list, DefaultHardPodAffinityWeight)
			state := framework.NewCycleState()
			if st := pl.PreFilter(context.Background(), state, tt.pod); !st.IsSuccess() {
				t.Fatalf("PreFilter: %v", st.Message())
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

func TestInterPodAffinityEmptyTopologyKeyRefused(t *testing.T) {
	pl := NewWithLister(framework.NodeInfoList{}, 1)
	p := withAffinity(pod("p", "", nil), nil, []v1.PodAffinityTerm{term("", map[string]string{"a": "b"})})
	if st := pl.PreFilter(context.Background(), framework.NewCycleState(), p); st.Code() != framework.UnschedulableAndUnresolvable {
		t.Errorf("code = %v, want UnschedulableAndUnresolvable", st.Code())
	}
}

func TestInterPodAffinityScore(t *testing.T) {
	web := map[string]string{"app": "web"}
	nodes := []*v1.Node{node("a", "z1"), node("b", "z1"), node("c", "z2")}
	preferred := func(weight int32, anti bool) *v1.Pod {
		p := pod("p", "", web)
		wt := []v1.WeightedPodAffinityTerm{{Weight: weight, PodAffinityTerm: term(v1.LabelTopologyZone, web)}}
		p.Spec.Affinity = &v1.Affinity{}
		if anti {
			p.Spec.Affinity.PodAntiAffinity = &v1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: wt}
		} else {
			p.Spec.Affinity.PodAffinity = &v1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: wt}
		}
		return p
	}
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing []*v1.Pod
		want     map[string]int64
	}{
		{"preferred affinity favours the zone with matches", preferred(5, false), []*v1.Pod{pod("w", "a", web)}, map[string]int64{"a": 100, "b": 100, "c": 0}},
		{"preferred anti-affinity avoids it", preferred(5, true), []*v1.Pod{pod("w", "a", web)}, map[string]int64{"a": 0, "b": 0, "c": 100}},
		{"existing pod's required affinity attracts with the hard weight", pod("p", "", web),
			[]*v1.Pod{withAffinity(pod("x", "c", nil), []v1.PodAffinityTerm{term(v1.LabelTopologyZone, web)}, nil)}, map[string]int64{"a": 0, "b": 0, "c": 100}},
		{"no terms: all zero", pod("p", "", web), []*v1.Pod{pod("w", "a", web)}, map[string]int64{"a": 0, "b": 0, "c": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list := framework.NewNodeInfoList(nodes, tt.existing)
			pl := NewWithLister(list, DefaultHardPodAffinityWeight)
			state := framework.NewCycleState()
			pl.PreScore(context.Background(), state, tt.pod, list)
			var scores framework.NodeScoreList
			for _, ni := range list {
				s, st := pl.Score(context.Background(), state, tt.pod, ni)
				if !st.IsSuccess() {
					t.Fatal(st.Message())
				}
				scores = append(scores, framework.NodeScore{Name: ni.Node().Name, Score: s})
			}
			pl.NormalizeScore(context.Background(), state, tt.pod, scores)
			for _, s := range scores {
				if s.Score != tt.want[s.Name] {
					t.Errorf("node %s: %d, want %d", s.Name, s.Score, tt.want[s.Name])
				}
			}
		})
	}
}
