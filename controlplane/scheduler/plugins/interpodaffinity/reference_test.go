package interpodaffinity

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

// randomTerm is a term on hostname or zone selecting by matchLabels, by
// matchExpressions, or (rarely) selecting nothing.
func randomTerm(r *rand.Rand) v1.PodAffinityTerm {
	key := []string{v1.LabelHostname, v1.LabelTopologyZone}[r.IntN(2)]
	app := []string{"a", "b", "c"}[r.IntN(3)]
	t := v1.PodAffinityTerm{TopologyKey: key}
	switch r.IntN(6) {
	case 0:
		t.LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{app, "c"}}}}
	case 1:
		t.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": app, "tier": "x"}}
	case 2:
		t.LabelSelector = nil // selects nothing
	default:
		t.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	}
	if r.IntN(5) == 0 {
		t.Namespaces = []string{"default", "other"}
	}
	return t
}

// randomPod is a pod in default or other with random labels and, half the
// time, random required and preferred terms of every kind.
func randomPod(r *rand.Rand, name, nodeName string) *v1.Pod {
	ns := "default"
	if r.IntN(4) == 0 {
		ns = "other"
	}
	labels := map[string]string{}
	if r.IntN(6) > 0 {
		labels["app"] = []string{"a", "b", "c"}[r.IntN(3)]
	}
	if r.IntN(2) == 0 {
		labels["tier"] = []string{"x", "y"}[r.IntN(2)]
	}
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(name), Labels: labels}, Spec: v1.PodSpec{NodeName: nodeName}}
	if r.IntN(2) == 0 {
		return p
	}
	terms := func() []v1.PodAffinityTerm {
		var out []v1.PodAffinityTerm
		for range r.IntN(3) / 2 * (1 + r.IntN(2)) {
			out = append(out, randomTerm(r))
		}
		return out
	}
	weighted := func() []v1.WeightedPodAffinityTerm {
		var out []v1.WeightedPodAffinityTerm
		for range r.IntN(3) / 2 {
			out = append(out, v1.WeightedPodAffinityTerm{Weight: 1 + r.Int32N(100), PodAffinityTerm: randomTerm(r)})
		}
		return out
	}
	p.Spec.Affinity = &v1.Affinity{
		PodAffinity:     &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms(), PreferredDuringSchedulingIgnoredDuringExecution: weighted()},
		PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms(), PreferredDuringSchedulingIgnoredDuringExecution: weighted()},
	}
	return p
}

// sameDomain reports whether nodes a and b are in one domain of key (both
// carry it, with one value).
func sameDomain(a, b *v1.Node, key string) bool {
	va, ok := a.Labels[key]
	vb, okb := b.Labels[key]
	return ok && okb && va == vb
}

type placed struct {
	pod  *v1.Pod
	node *v1.Node
	aff  *framework.PodAffinity
}

// referenceFilter is the plugin's Filter written out from its definition,
// pod by pod, without the counts, blooms and flat term lists.
func referenceFilter(pod *v1.Pod, node *v1.Node, all []placed) string {
	aff := framework.NewPodAffinity(pod)
	if len(aff.RequiredAffinityTerms) > 0 {
		matchesAllTerms := func(p *v1.Pod) bool {
			for i := range aff.RequiredAffinityTerms {
				if !aff.RequiredAffinityTerms[i].Matches(p) {
					return false
				}
			}
			return true
		}
		satisfied, anyMatch := true, false
		for _, t := range aff.RequiredAffinityTerms {
			found := false
			for _, e := range all {
				if _, ok := e.node.Labels[t.TopologyKey]; ok && matchesAllTerms(e.pod) {
					anyMatch = true
					if sameDomain(node, e.node, t.TopologyKey) {
						found = true
					}
				}
			}
			if _, ok := node.Labels[t.TopologyKey]; !ok {
				return ErrReasonAffinityRulesNotMatch
			}
			satisfied = satisfied && found
		}
		if !satisfied && (anyMatch || !matchesAllTerms(pod)) {
			return ErrReasonAffinityRulesNotMatch
		}
	}
	for i := range aff.RequiredAntiAffinityTerms {
		t := &aff.RequiredAntiAffinityTerms[i]
		for _, e := range all {
			if t.Matches(e.pod) && sameDomain(node, e.node, t.TopologyKey) {
				return ErrReasonAntiAffinityRulesNotMatch
			}
		}
	}
	for _, e := range all {
		for i := range e.aff.RequiredAntiAffinityTerms {
			t := &e.aff.RequiredAntiAffinityTerms[i]
			if t.Matches(pod) && sameDomain(node, e.node, t.TopologyKey) {
				return ErrReasonExistingAntiAffinityRulesNotMatch
			}
		}
	}
	return ""
}

// referenceScore is the plugin's raw Score written out from its definition.
func referenceScore(pod *v1.Pod, node *v1.Node, all []placed, hardWeight int32) int64 {
	aff := framework.NewPodAffinity(pod)
	var score int64
	for _, e := range all {
		add := func(t *framework.AffinityTerm, w int64) {
			if sameDomain(node, e.node, t.TopologyKey) {
				score += w
			}
		}
		for i := range aff.PreferredAffinityTerms {
			if t := &aff.PreferredAffinityTerms[i]; t.Matches(e.pod) {
				add(&t.AffinityTerm, int64(t.Weight))
			}
		}
		for i := range aff.PreferredAntiAffinityTerms {
			if t := &aff.PreferredAntiAffinityTerms[i]; t.Matches(e.pod) {
				add(&t.AffinityTerm, -int64(t.Weight))
			}
		}
		for i := range e.aff.RequiredAffinityTerms {
			if t := &e.aff.RequiredAffinityTerms[i]; t.Matches(pod) {
				add(t, int64(hardWeight))
			}
		}
		for i := range e.aff.PreferredAffinityTerms {
			if t := &e.aff.PreferredAffinityTerms[i]; t.Matches(pod) {
				add(&t.AffinityTerm, int64(t.Weight))
			}
		}
		for i := range e.aff.PreferredAntiAffinityTerms {
			if t := &e.aff.PreferredAntiAffinityTerms[i]; t.Matches(pod) {
				add(&t.AffinityTerm, -int64(t.Weight))
			}
		}
	}
	return score
}

// TestInterPodAffinityMatchesReference places random pods with random terms
// on nodes in three zones (one node without a zone), removes some of them
// again (from clones, as the scheduler cache's snapshots do), and checks
// Filter's verdict and Score's raw score for random incoming pods on every
// node against the definitions written out pod by pod.
func TestInterPodAffinityMatchesReference(t *testing.T) {
	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 7))
		var nodes []*v1.Node
		for i := range 9 {
			n := node(fmt.Sprintf("n%d", i), fmt.Sprintf("z%d", i%3))
			if i == 8 {
				delete(n.Labels, v1.LabelTopologyZone)
			}
			nodes = append(nodes, n)
		}
		var pods []*v1.Pod
		for i := range 30 {
			pods = append(pods, randomPod(r, fmt.Sprintf("e%d", i), nodes[r.IntN(len(nodes))].Name))
		}
		list := framework.NewNodeInfoList(nodes, pods)
		var all []placed
		for _, p := range pods {
			for i, n := range nodes {
				if p.Spec.NodeName != n.Name {
					continue
				}
				if r.IntN(5) == 0 { // removed again, from a clone
					clone := list[i].Clone()
					if err := clone.RemovePod(p); err != nil {
						t.Fatal(err)
					}
					list[i] = clone
					continue
				}
				all = append(all, placed{p, n, framework.NewPodAffinity(p)})
			}
		}
		pl := NewWithLister(list, DefaultHardPodAffinityWeight)
		for k := range 25 {
			incoming := randomPod(r, fmt.Sprintf("p%d", k), "")
			ctx := context.Background()
			state := framework.NewCycleState()
			if st := pl.PreFilter(ctx, state, incoming); !st.IsSuccess() {
				t.Fatalf("seed %d: PreFilter: %v", seed, st.Message())
			}
			if st := pl.PreScore(ctx, state, incoming, list); !st.IsSuccess() {
				t.Fatalf("seed %d: PreScore: %v", seed, st.Message())
			}
			for _, ni := range list {
				n := ni.Node()
				if got, want := pl.Filter(ctx, state, incoming, ni).Message(), referenceFilter(incoming, n, all); got != want {
					t.Errorf("seed %d, pod %d, node %s: Filter %q, want %q", seed, k, n.Name, got, want)
				}
				got, st := pl.Score(ctx, state, incoming, ni)
				if !st.IsSuccess() {
					t.Fatal(st.Message())
				}
				if want := referenceScore(incoming, n, all, DefaultHardPodAffinityWeight); got != want {
					t.Errorf("seed %d, pod %d, node %s: Score %d, want %d", seed, k, n.Name, got, want)
				}
			}
		}
	}
}
