package framework

import (
	"fmt"
	"math/rand/v2"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// TestAffinityTermMatchesLikeItsSelector checks the direct matchLabels
// check against the parsed label selector, and the namespace rules, on
// random terms and pods.
func TestAffinityTermMatchesLikeItsSelector(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	keys, values := []string{"app", "tier", "group"}, []string{"", "web", "db"}
	randomLabels := func() map[string]string {
		m := map[string]string{}
		for _, k := range keys {
			if rng.IntN(2) == 0 {
				m[k] = values[rng.IntN(len(values))]
			}
		}
		return m
	}
	owner := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a"}}
	fast := 0
	for round := range 2000 {
		term := v1.PodAffinityTerm{TopologyKey: "zone", LabelSelector: &metav1.LabelSelector{MatchLabels: randomLabels()}}
		switch rng.IntN(7) {
		case 0:
			term.LabelSelector = nil
		case 1:
			term.LabelSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}
		case 2:
			term.NamespaceSelector = &metav1.LabelSelector{}
		case 3:
			term.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}}
		case 4:
			term.Namespaces = []string{"b"}
		case 5:
			term.Namespaces = []string{"b", "c"}
		}
		at, err := newAffinityTerm(owner, &term)
		if err != nil {
			t.Fatal(err)
		}
		if at.matchLabels != nil {
			fast++
		}
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: []string{"a", "b", "c"}[rng.IntN(3)], Labels: randomLabels()}}
		inNamespace := at.Namespaces.Has(pod.Namespace) || at.NamespaceSelector.Matches(labels.Set(nil))
		want := inNamespace && at.Selector.Matches(labels.Set(pod.Labels))
		if got := at.Matches(pod); got != want {
			t.Fatalf("round %d: term %+v on pod %s %v: Matches = %v, want %v", round, term, pod.Namespace, pod.Labels, got, want)
		}
		// The bloom never turns a match away.
		if got := at.MatchesPodInfo(NewPodInfo(pod)); got != want {
			t.Fatalf("round %d: term %+v on pod %s %v: MatchesPodInfo = %v, want %v", round, term, pod.Namespace, pod.Labels, got, want)
		}
		if got := at.MatchesBloom(pod, 0); got != want {
			t.Fatalf("round %d: MatchesBloom with an unknown bloom = %v, want %v", round, got, want)
		}
	}
	if fast < 500 {
		t.Errorf("only %d of 2000 terms took the matchLabels path", fast)
	}
}

// TestLabelBloomRejectsWithoutReadingLabels: a placed pod whose bloom lacks
// the term's bits is turned away on the bloom alone (here the pod's labels
// were changed behind its PodInfo, which the cache never does, to tell the
// two paths apart), and most pods of other groups are.
func TestLabelBloomRejectsWithoutReadingLabels(t *testing.T) {
	owner := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a"}}
	term, err := newAffinityTerm(owner, &v1.PodAffinityTerm{TopologyKey: "zone", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"group": "g1"}}})
	if err != nil {
		t.Fatal(err)
	}
	pi := NewPodInfo(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Labels: map[string]string{"group": "g2"}}})
	pi.Pod.Labels["group"] = "g1"
	if !term.Matches(pi.Pod) || term.MatchesPodInfo(pi) {
		t.Errorf("Matches %v, MatchesPodInfo %v: want the bloom alone to reject", term.Matches(pi.Pod), term.MatchesPodInfo(pi))
	}
	rejected := 0
	for i := range 1000 {
		labels := map[string]string{"group": fmt.Sprintf("g%d", i+2), "app": "bench"}
		if LabelBloom(labels)&term.bloom != term.bloom {
			rejected++
		}
	}
	if rejected < 900 {
		t.Errorf("the bloom rejected %d of 1,000 pods of other groups", rejected)
	}
	if LabelBloom(map[string]string{"ab": "c"}) == LabelBloom(map[string]string{"a": "bc"}) {
		t.Error("ab=c and a=bc have the same bloom")
	}
}
