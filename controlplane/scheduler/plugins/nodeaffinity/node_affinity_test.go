package nodeaffinity

import (
	"context"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

func testNode(name string, lbls map[string]string) *framework.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}})
	return ni
}

func expr(key string, op v1.NodeSelectorOperator, values ...string) v1.NodeSelectorRequirement {
	return v1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

// requiredPod returns a pod whose required node affinity has the given terms.
func requiredPod(terms ...v1.NodeSelectorTerm) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: v1.PodSpec{Affinity: &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: terms},
		}}},
	}
}

func selectorPod(sel map[string]string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: v1.PodSpec{NodeSelector: sel}}
}

func labelTerm(reqs ...v1.NodeSelectorRequirement) v1.NodeSelectorTerm {
	return v1.NodeSelectorTerm{MatchExpressions: reqs}
}

func fieldTerm(reqs ...v1.NodeSelectorRequirement) v1.NodeSelectorTerm {
	return v1.NodeSelectorTerm{MatchFields: reqs}
}

func TestNodeAffinityFilter(t *testing.T) {
	withSelector := func(p *v1.Pod, sel map[string]string) *v1.Pod {
		p.Spec.NodeSelector = sel
		return p
	}
	tests := []struct {
		name       string
		pod        *v1.Pod
		nodeName   string
		labels     map[string]string
		wantCode   framework.Code
		wantReason string
	}{
		{name: "no selector", pod: selectorPod(nil), labels: nil, wantCode: framework.Success},
		{name: "nodeSelector on a node without labels", pod: selectorPod(map[string]string{"foo": "bar"}), wantCode: framework.UnschedulableAndUnresolvable, wantReason: ErrReasonPod},
		{name: "nodeSelector with the same labels", pod: selectorPod(map[string]string{"foo": "bar"}), labels: map[string]string{"foo": "bar"}, wantCode: framework.Success},
		{name: "node labels are a superset", pod: selectorPod(map[string]string{"foo": "bar"}), labels: map[string]string{"foo": "bar", "baz": "blah"}, wantCode: framework.Success},
		{name: "node labels are a subset", pod: selectorPod(map[string]string{"foo": "bar", "baz": "blah"}), labels: map[string]string{"foo": "bar"}, wantCode: framework.UnschedulableAndUnresolvable, wantReason: ErrReasonPod},
		{name: "nodeSelector value differs", pod: selectorPod(map[string]string{"foo": "bar"}), labels: map[string]string{"foo": "baz"}, wantCode: framework.UnschedulableAndUnresolvable, wantReason: ErrReasonPod},
		{name: "In matches", pod: requiredPod(labelTerm(expr("foo", v1.NodeSelectorOpIn, "bar", "value2"))), labels: map[string]string{"foo": "bar"}, wantCode: framework.Success},
		{name: "In does not match", pod: requiredPod(labelTerm(expr("foo", v1.NodeSelectorOpIn, "value1", "value2"))), labels: map[string]string{"foo": "bar"}, wantCode: framework.UnschedulableAndUnresolvable, wantReason: ErrReasonPod},
		{name: "In on a missing label", pod: requiredPod(labelTerm(expr("foo", v1.NodeSelectorOpIn, "bar"))), labels: map[string]string{"other": "bar"}, wantCode: framework.UnschedulableAndUnresolvable, wantReason: ErrReasonPod},
		{name: "NotIn matches", pod: requiredPod(labelTerm(expr("mem", v1.NodeSelectorOpNotIn, "DDR", "DDR2"))), labels: map[string]string{"mem": "DDR3"}, wantCode: framework.Success},
		{name: "NotIn matches a missing label", pod: requiredPod(labelTerm(expr("mem", v1.NodeSelectorOpNotIn, "DDR"))), labels: nil, wantCode: framework.Success},
		{name: "NotIn does not match", pod: requiredPod(labelTerm(expr("mem", v1.NodeSelectorOpNotIn, "DDR", "DDR2"))), labels: map[string]string{"mem": "DDR2"}, wantCode: framework.UnschedulableAndUnresolvable, wantReason: ErrReasonPod},
		{name: "Exists matches", pod: requiredPod(labelTerm(expr("GPU", v1.NodeSelectorOpExists))), labels: map[string]string{"GPU": "NVIDIA-GRID-K1"}, wantCode: framework.Success},
		{name: "Exists does not match", pod: requiredPod(labelTerm(expr("GPU", v1.NodeSelectorOpExists))), labels: map[string]string{"CPU": "x86"}, wantCode: framework.UnschedulableAndUnresolvable, wantReason: ErrReasonPod},
		{name: "DoesNotExist matches", pod: requiredPod(labelTerm(expr("GPU", v1.NodeSelectorOpDoesNotExist))), labels: map[string]string{"CPU": "x86"}, wantCode: framework.Success},
		{name: "DoesNotExist does not match", pod: requiredPod(labelTerm(expr("GPU", v1.NodeSelectorOpDoesNotExist))), labels: map[string]string{"GPU": "NVIDIA"}, wantCode: framework.UnschedulableAndUnresolvable, wantReason: ErrReasonPod},
		{name: "Gt matches", pod: requiredPod(labelTerm(expr("kernel-version", v1.NodeSelectorOpGt, "0204"))), labels: map[string]string{"kernel-version": "0206"}, wantCode: framework.Success},
		{name: "Gt does not match an equal value", pod: requiredPod(labelTerm(expr("kernel-version", v1.NodeSelectorOpGt, "0204"))), labels: map[string]string{"kernel-version": "0204"}, wantCode: framework.UnschedulableAndUnresolvable, wantReason: ErrReasonPod},
		{name: "Gt does not match a non-integer label", pod: requiredPod(labelTerm(expr("kernel-version", v1.NodeSelectorOpGt, "0204"))), labels: map[string]string{"kernel-version": "new"}, wantCode: framework.UnschedulableAndUnresolvable, wantReason: ErrReasonPod},
		{name: "Lt matches", pod: requiredPod(labelTerm(expr("kernel-version", v1.NodeSelectorOpLt, "0204"))), labels: map[string]string{"kernel-version": "0200"}, wantCode: framework.Success},
		{name: "Lt does not match", pod: requiredPod(labelTerm(expr("kernel-version", v1.NodeSelectorOpLt, "0204"))), labels: map[string]string{"kernel-version": "0206"}, wantCode: framework.UnschedulableAndUnresolvable, wantReason: ErrReasonPod},
		{name: "Lt on a missing label", pod: requiredPod(labelTerm(expr("kernel-version", v1.NodeSelectorOpLt, "0204"))), labels: nil, wantCode: framework.UnschedulableAndUnresolvable, wantReason: ErrReasonPod},
		{name: "empty nodeSelectorTerms match nothing", pod: requiredPod(), labels: map[string]string{"foo": "bar"}, wantCode: framework.UnschedulableAndUnresolvable, wantReason: ErrReasonPod},
		{name: "a term with no requirements matches nothing", pod: requiredPod(v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{}}), labels: map[string]string{"foo": "bar"}, wantCode: framework.UnschedulableAndUnresolvable, wantReason: ErrReasonPod},
		{
			name: "only preferred affinity does not filter",
			pod: &v1.Pod{Spec: v1.PodSpec{Affinity: &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 1, Preference: labelTerm(expr("foo", v1.NodeSelectorOpIn, "x"))}},
			}}}},
			labels:   map[string]string{"foo": "bar"},
			wantCode: framework.Success,
		},
		{
			name:     "expressions in one term are ANDed",
			pod:      requiredPod(labelTerm(expr("GPU", v1.NodeSelectorOpExists), expr("GPU", v1.NodeSelectorOpNotIn, "AMD", "INTER"))),
			labels:   map[string]string{"GPU": "AMD"},
			wantCode: framework.UnschedulableAndUnresolvable, wantReason: ErrReasonPod,
		},
		{
			name:     "expressions in one term all match",
			pod:      requiredPod(labelTerm(expr("GPU", v1.NodeSelectorOpExists), expr("GPU", v1.NodeSelectorOpNotIn, "AMD", "INTER"))),
			labels:   map[string]string{"GPU": "NVIDIA"},
			wantCode: framework.Success,
		},
		{
			name:     "terms are ORed",
			pod:      requiredPod(labelTerm(expr("foo", v1.NodeSelectorOpIn, "bar", "value2")), labelTerm(expr("diffkey", v1.NodeSelectorOpIn, "wrong", "value2"))),
			labels:   map[string]string{"foo": "bar"},
			wantCode: framework.Success,
		},
		{
			name:     "no ORed term matches",
			pod:      requiredPod(labelTerm(expr("foo", v1.NodeSelectorOpIn, "x")), labelTerm(expr("diffkey", v1.NodeSelectorOpExists))),
			labels:   map[string]string{"foo": "bar"},
			wantCode: framework.UnschedulableAndUnresolvable, wantReason: ErrReasonPod,
		},
		{
			name:     "nodeSelector and affinity both match",
			pod:      withSelector(requiredPod(labelTerm(expr("foo", v1.NodeSelectorOpExists))), map[string]string{"foo": "bar"}),
			labels:   map[string]string{"foo": "bar"},
			wantCode: framework.Success,
		},
		{
			name:     "nodeSelector matches but affinity does not",
			pod:      withSelector(requiredPod(labelTerm(expr("foo", v1.NodeSelectorOpDoesNotExist))), map[string]string{"foo": "bar"}),
			labels:   map[string]string{"foo": "bar"},
			wantCode: framework.UnschedulableAndUnresolvable, wantReason: ErrReasonPod,
		},
		{
			name:     "affinity matches but nodeSelector does not",
			pod:      withSelector(requiredPod(labelTerm(expr("foo", v1.NodeSelectorOpExists))), map[string]string{"foo": "baz"}),
			labels:   map[string]string{"foo": "bar"},
			wantCode: framework.UnschedulableAndUnresolvable, wantReason: ErrReasonPod,
		},
		{name: "matchFields metadata.name In matches", pod: requiredPod(fieldTerm(expr(metav1.ObjectNameField, v1.NodeSelectorOpIn, "node-1"))), nodeName: "node-1", wantCode: framework.Success},
		{name: "matchFields metadata.name In another node", pod: requiredPod(fieldTerm(expr(metav1.ObjectNameField, v1.NodeSelectorOpIn, "node-1"))), nodeName: "node-2", wantCode: framework.UnschedulableAndUnresolvable, wantReason: ErrReasonPod},
		{name: "matchFields metadata.name NotIn", pod: requiredPod(fieldTerm(expr(metav1.ObjectNameField, v1.NodeSelectorOpNotIn, "node-1"))), nodeName: "node-1", wantCode: framework.UnschedulableAndUnresolvable, wantReason: ErrReasonPod},
		{
			name:     "matchFields and matchExpressions in one term are ANDed",
			pod:      requiredPod(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{expr(metav1.ObjectNameField, v1.NodeSelectorOpIn, "node-1")}, MatchExpressions: []v1.NodeSelectorRequirement{expr("foo", v1.NodeSelectorOpIn, "bar")}}),
			nodeName: "node-1", labels: map[string]string{"foo": "baz"},
			wantCode: framework.UnschedulableAndUnresolvable, wantReason: ErrReasonPod,
		},
		{
			name:     "matchFields and matchExpressions in separate terms are ORed",
			pod:      requiredPod(fieldTerm(expr(metav1.ObjectNameField, v1.NodeSelectorOpIn, "node-1")), labelTerm(expr("foo", v1.NodeSelectorOpIn, "bar"))),
			nodeName: "node-2", labels: map[string]string{"foo": "bar"},
			wantCode: framework.Success,
		},
		{
			name:     "matchFields with two values does not parse and matches nothing",
			pod:      requiredPod(fieldTerm(expr(metav1.ObjectNameField, v1.NodeSelectorOpIn, "node-1", "node-2"))),
			nodeName: "node-1",
			wantCode: framework.UnschedulableAndUnresolvable, wantReason: ErrReasonPod,
		},
		{
			name:     "an invalid Gt term is skipped and another term matches",
			pod:      requiredPod(labelTerm(expr("kernel-version", v1.NodeSelectorOpGt, "1", "2")), labelTerm(expr("foo", v1.NodeSelectorOpExists))),
			labels:   map[string]string{"foo": "bar", "kernel-version": "3"},
			wantCode: framework.Success,
		},
		{
			name:     "conflicting node names in every term are rejected in PreFilter",
			pod:      requiredPod(fieldTerm(expr(metav1.ObjectNameField, v1.NodeSelectorOpIn, "node-1"), expr(metav1.ObjectNameField, v1.NodeSelectorOpIn, "node-2"))),
			nodeName: "node-1",
			wantCode: framework.UnschedulableAndUnresolvable, wantReason: ErrReasonConflict,
		},
	}
	pl := &NodeAffinity{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			name := tt.nodeName
			if name == "" {
				name = "node-1"
			}
			state := framework.NewCycleState()
			st := pl.PreFilter(ctx, state, tt.pod)
			if st.IsSuccess() {
				st = pl.Filter(ctx, state, tt.pod, testNode(name, tt.labels))
			}
			if st.Code() != tt.wantCode {
				t.Fatalf("code = %v (%q), want %v", st.Code(), st.Message(), tt.wantCode)
			}
			if st.Message() != tt.wantReason {
				t.Errorf("message = %q, want %q", st.Message(), tt.wantReason)
			}
			if tt.wantReason == ErrReasonConflict {
				return
			}
			direct := pl.Filter(ctx, framework.NewCycleState(), tt.pod, testNode(name, tt.labels))
			if direct.Code() != tt.wantCode {
				t.Errorf("without PreFilter: code = %v, want %v", direct.Code(), tt.wantCode)
			}
		})
	}
}

func TestNodeAffinityScore(t *testing.T) {
	preferredPod := func(terms ...v1.PreferredSchedulingTerm) *v1.Pod {
		return &v1.Pod{Spec: v1.PodSpec{Affinity: &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: terms}}}}
	}
	fooBar := v1.PreferredSchedulingTerm{Weight: 2, Preference: labelTerm(expr("foo", v1.NodeSelectorOpIn, "bar"))}
	keyValue := v1.PreferredSchedulingTerm{Weight: 4, Preference: labelTerm(expr("key", v1.NodeSelectorOpIn, "value"))}
	all := v1.PreferredSchedulingTerm{Weight: 5, Preference: labelTerm(
		expr("foo", v1.NodeSelectorOpIn, "bar"), expr("key", v1.NodeSelectorOpIn, "value"), expr("az", v1.NodeSelectorOpIn, "az1"))}
	label1 := map[string]string{"foo": "bar"}
	label2 := map[string]string{"key": "value"}
	label3 := map[string]string{"az": "az1"}
	label5 := map[string]string{"foo": "bar", "key": "value", "az": "az1"}
	tests := []struct {
		name  string
		pod   *v1.Pod
		nodes []*framework.NodeInfo
		want  []int64
	}{
		{
			name:  "no preferred affinity scores every node 0",
			pod:   &v1.Pod{},
			nodes: []*framework.NodeInfo{testNode("node-1", label1), testNode("node-2", label2)},
			want:  []int64{0, 0},
		},
		{
			name:  "no node matches",
			pod:   preferredPod(fooBar),
			nodes: []*framework.NodeInfo{testNode("node-1", label2), testNode("node-2", label3)},
			want:  []int64{0, 0},
		},
		{
			name:  "only one node matches",
			pod:   preferredPod(fooBar),
			nodes: []*framework.NodeInfo{testNode("node-1", label1), testNode("node-2", label2), testNode("node-3", label3)},
			want:  []int64{100, 0, 0},
		},
		{
			name:  "weights of matching terms add up and are normalized",
			pod:   preferredPod(fooBar, keyValue, all),
			nodes: []*framework.NodeInfo{testNode("node-1", label1), testNode("node-5", label5), testNode("node-2", label2)},
			want:  []int64{18, 100, 36},
		},
		{
			name: "terms with weight 0 or no requirements are ignored",
			pod: preferredPod(
				v1.PreferredSchedulingTerm{Weight: 0, Preference: labelTerm(expr("key", v1.NodeSelectorOpExists))},
				v1.PreferredSchedulingTerm{Weight: 7},
				fooBar),
			nodes: []*framework.NodeInfo{testNode("node-1", label1), testNode("node-2", label2)},
			want:  []int64{100, 0},
		},
		{
			name: "matchFields metadata.name in a preferred term",
			pod: preferredPod(v1.PreferredSchedulingTerm{Weight: 3, Preference: fieldTerm(expr(metav1.ObjectNameField, v1.NodeSelectorOpIn, "node-2"))},
				fooBar),
			nodes: []*framework.NodeInfo{testNode("node-1", label1), testNode("node-2", label2)},
			want:  []int64{66, 100},
		},
	}
	pl := &NodeAffinity{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			state := framework.NewCycleState()
			if st := pl.PreScore(ctx, state, tt.pod, tt.nodes); !st.IsSuccess() {
				t.Fatalf("PreScore: %v", st.Message())
			}
			var scores framework.NodeScoreList
			for _, ni := range tt.nodes {
				s, st := pl.Score(ctx, state, tt.pod, ni)
				if !st.IsSuccess() {
					t.Fatalf("Score: %v", st.Message())
				}
				scores = append(scores, framework.NodeScore{Name: ni.Node().Name, Score: s})
			}
			if st := pl.ScoreExtensions().NormalizeScore(ctx, state, tt.pod, scores); !st.IsSuccess() {
				t.Fatalf("NormalizeScore: %v", st.Message())
			}
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

func TestNodeAffinityPreScoreRejectsInvalidPreferredTerm(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: v1.PodSpec{Affinity: &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 1, Preference: labelTerm(expr("kernel-version", v1.NodeSelectorOpGt, "not-a-number"))}},
	}}}}
	st := (&NodeAffinity{}).PreScore(context.Background(), framework.NewCycleState(), pod, nil)
	if st.Code() != framework.Error {
		t.Fatalf("code = %v, want Error", st.Code())
	}
}
