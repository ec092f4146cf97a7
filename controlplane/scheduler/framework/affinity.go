package framework

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
)

// AffinityTerm is a parsed v1.PodAffinityTerm: the namespaces it looks in,
// its label selector and its topology key.
type AffinityTerm struct {
	Namespaces        sets.Set[string]
	Selector          labels.Selector
	TopologyKey       string
	NamespaceSelector labels.Selector

	// matchLabels holds the selector's pairs when it has nothing but
	// matchLabels (the usual case), checked without going through Selector;
	// nil otherwise.
	matchLabels []labelPair
	// anyNamespace records whether NamespaceSelector selects every
	// namespace.
	anyNamespace bool
	// oneNamespace is Namespaces' only member when it has one (a term
	// naming no namespace means its pod's), compared without the set.
	oneNamespace string
	// bloom is LabelBloom of matchLabels (0 without matchLabels): a pod
	// whose labels' bloom lacks one of its bits cannot match.
	bloom uint64
}

type labelPair struct{ key, value string }

// LabelBloom is a 64-bit Bloom filter of a label set, two bits per
// key=value pair; 0 for no labels. A selector's pairs can only all be in a
// set whose bloom has every bit of theirs: inter-pod affinity checks every
// placed pod against a pod's terms, and the blooms reject most of them
// without reading the pods' labels (a cache miss or more each).
func LabelBloom(set map[string]string) uint64 {
	var b uint64
	for k, v := range set {
		b |= pairBloom(k, v)
	}
	return b
}

// pairBloom is the two bits of one key=value pair.
func pairBloom(key, value string) uint64 {
	h := PairHash(key, value)
	return 1<<(h&63) | 1<<((h>>6)&63)
}

// PairHash is the 64-bit FNV-1a hash of a key=value pair.
func PairHash(key, value string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(key); i++ {
		h = (h ^ uint64(key[i])) * 1099511628211
	}
	h = (h ^ 0xff) * 1099511628211 // a byte no key holds: "a"+"bc" is not "ab"+"c"
	for i := 0; i < len(value); i++ {
		h = (h ^ uint64(value[i])) * 1099511628211
	}
	return h
}

// bloomMayHold reports whether a label set whose bloom is set (0: not
// known) may hold every pair of a selector whose bloom is sel (0: nothing
// to go by); false means it does not.
func bloomMayHold(sel, set uint64) bool {
	return sel == 0 || set == 0 || set&sel == sel
}

// MatchesBloom is Matches for a pod whose LabelBloom is bloom (0: not
// known), rejecting at once a pod that cannot carry the term's labels.
func (t *AffinityTerm) MatchesBloom(pod *v1.Pod, bloom uint64) bool {
	if !bloomMayHold(t.bloom, bloom) {
		return false
	}
	return t.Matches(pod)
}

// MatchesPodInfo is Matches for a placed pod, using its label bloom.
func (t *AffinityTerm) MatchesPodInfo(pi *PodInfo) bool {
	return t.MatchesBloom(pi.Pod, pi.labelBloom)
}

// LabelBloom is LabelBloom of the pod's labels, 0 when not known.
func (pi *PodInfo) LabelBloom() uint64 { return pi.labelBloom }

// Matches reports whether pod lies in one of the term's namespaces and
// carries labels its selector selects. Namespace labels are not known to
// the scheduler, so a namespaceSelector matches when it selects an empty
// label set: {} (every namespace) does, one with requirements does not.
//
// Inter-pod affinity matches every placed pod against the terms of every
// pod it schedules, so the common selector (matchLabels alone) is checked
// directly, and MatchesBloom and MatchesPodInfo turn most pods away on
// their labels' Bloom filter before that.
func (t *AffinityTerm) Matches(pod *v1.Pod) bool {
	switch {
	case t.anyNamespace:
	case t.oneNamespace != "":
		if pod.Namespace != t.oneNamespace {
			return false
		}
	case !t.Namespaces.Has(pod.Namespace):
		return false
	}
	if t.matchLabels == nil {
		return t.Selector.Matches(labels.Set(pod.Labels))
	}
	for _, p := range t.matchLabels {
		if v, ok := pod.Labels[p.key]; !ok || v != p.value {
			return false
		}
	}
	return true
}

// WeightedAffinityTerm is a preferred term with its weight.
type WeightedAffinityTerm struct {
	AffinityTerm
	Weight int32
}

// newAffinityTerm parses term as kube-scheduler does: no namespaces and no
// namespaceSelector mean the pod's own namespace; a nil selector selects
// nothing.
func newAffinityTerm(pod *v1.Pod, term *v1.PodAffinityTerm) (AffinityTerm, error) {
	selector, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil {
		return AffinityTerm{}, err
	}
	namespaces := sets.New(term.Namespaces...)
	if len(term.Namespaces) == 0 && term.NamespaceSelector == nil {
		namespaces.Insert(pod.Namespace)
	}
	nsSelector, err := metav1.LabelSelectorAsSelector(term.NamespaceSelector)
	if err != nil {
		return AffinityTerm{}, err
	}
	t := AffinityTerm{Namespaces: namespaces, Selector: selector, TopologyKey: term.TopologyKey, NamespaceSelector: nsSelector,
		anyNamespace: nsSelector.Matches(labels.Set(nil))}
	if namespaces.Len() == 1 {
		t.oneNamespace = namespaces.UnsortedList()[0]
	}
	if ls := term.LabelSelector; ls != nil && len(ls.MatchLabels) > 0 && len(ls.MatchExpressions) == 0 {
		t.matchLabels = make([]labelPair, 0, len(ls.MatchLabels))
		for k, v := range ls.MatchLabels {
			t.matchLabels = append(t.matchLabels, labelPair{k, v})
			t.bloom |= pairBloom(k, v)
		}
	}
	return t, nil
}

func newAffinityTerms(pod *v1.Pod, terms []v1.PodAffinityTerm) ([]AffinityTerm, error) {
	out := make([]AffinityTerm, 0, len(terms))
	for i := range terms {
		t, err := newAffinityTerm(pod, &terms[i])
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func newWeightedAffinityTerms(pod *v1.Pod, terms []v1.WeightedPodAffinityTerm) ([]WeightedAffinityTerm, error) {
	out := make([]WeightedAffinityTerm, 0, len(terms))
	for i := range terms {
		t, err := newAffinityTerm(pod, &terms[i].PodAffinityTerm)
		if err != nil {
			return nil, err
		}
		out = append(out, WeightedAffinityTerm{AffinityTerm: t, Weight: terms[i].Weight})
	}
	return out, nil
}

// PodAffinity is a pod's inter-pod affinity, parsed once.
type PodAffinity struct {
	RequiredAffinityTerms      []AffinityTerm
	RequiredAntiAffinityTerms  []AffinityTerm
	PreferredAffinityTerms     []WeightedAffinityTerm
	PreferredAntiAffinityTerms []WeightedAffinityTerm
	// ParseErr is set when a term's selector does not parse.
	ParseErr error
}

// IsEmpty reports whether the pod has no inter-pod affinity term at all.
func (a *PodAffinity) IsEmpty() bool {
	return len(a.RequiredAffinityTerms) == 0 && len(a.RequiredAntiAffinityTerms) == 0 &&
		len(a.PreferredAffinityTerms) == 0 && len(a.PreferredAntiAffinityTerms) == 0
}

// NewPodAffinity parses the pod's spec.affinity podAffinity and
// podAntiAffinity terms.
func NewPodAffinity(pod *v1.Pod) *PodAffinity {
	out := &PodAffinity{}
	a := pod.Spec.Affinity
	if a == nil {
		return out
	}
	var err error
	if pa := a.PodAffinity; pa != nil {
		if out.RequiredAffinityTerms, err = newAffinityTerms(pod, pa.RequiredDuringSchedulingIgnoredDuringExecution); err != nil {
			out.ParseErr = fmt.Errorf("failed to parse pod affinity of %q: %w", pod.Namespace+"/"+pod.Name, err)
		}
		if out.PreferredAffinityTerms, err = newWeightedAffinityTerms(pod, pa.PreferredDuringSchedulingIgnoredDuringExecution); err != nil {
			out.ParseErr = fmt.Errorf("failed to parse pod affinity of %q: %w", pod.Namespace+"/"+pod.Name, err)
		}
	}
	if paa := a.PodAntiAffinity; paa != nil {
		if out.RequiredAntiAffinityTerms, err = newAffinityTerms(pod, paa.RequiredDuringSchedulingIgnoredDuringExecution); err != nil {
			out.ParseErr = fmt.Errorf("failed to parse pod anti-affinity of %q: %w", pod.Namespace+"/"+pod.Name, err)
		}
		if out.PreferredAntiAffinityTerms, err = newWeightedAffinityTerms(pod, paa.PreferredDuringSchedulingIgnoredDuringExecution); err != nil {
			out.ParseErr = fmt.Errorf("failed to parse pod anti-affinity of %q: %w", pod.Namespace+"/"+pod.Name, err)
		}
	}
	return out
}
