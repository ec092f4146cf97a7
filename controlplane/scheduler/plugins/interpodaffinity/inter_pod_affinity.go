package interpodaffinity

import (
	"context"
	"fmt"
	"math"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

const (
	// Name is the plugin's name in profiles.
	Name = "InterPodAffinity"
	// ErrReasonExistingAntiAffinityRulesNotMatch is kube-scheduler's reason
	// for a node where a placed pod's required anti-affinity forbids the pod.
	ErrReasonExistingAntiAffinityRulesNotMatch = "node(s) didn't satisfy existing pods anti-affinity rules"
	// ErrReasonAffinityRulesNotMatch is kube-scheduler's reason for a node
	// outside every domain the pod's required affinity asks for.
	ErrReasonAffinityRulesNotMatch = "node(s) didn't match pod affinity rules"
	// ErrReasonAntiAffinityRulesNotMatch is kube-scheduler's reason for a
	// node in a domain the pod's required anti-affinity forbids.
	ErrReasonAntiAffinityRulesNotMatch = "node(s) didn't match pod anti-affinity rules"

	// DefaultHardPodAffinityWeight is kube-scheduler's hardPodAffinityWeight:
	// what a placed pod's required affinity term that matches the pod adds
	// to the score of its domain.
	DefaultHardPodAffinityWeight int32 = 1

	preFilterStateKey framework.StateKey = "PreFilter" + Name
	preScoreStateKey  framework.StateKey = "PreScore" + Name
)

// Args are the plugin's arguments (InterPodAffinityArgs).
type Args struct {
	Kind                  string `json:"kind,omitempty"`
	APIVersion            string `json:"apiVersion,omitempty"`
	HardPodAffinityWeight *int32 `json:"hardPodAffinityWeight,omitempty"`
}

// InterPodAffinity filters and scores nodes by inter-pod (anti-)affinity.
type InterPodAffinity struct {
	hardPodAffinityWeight int32
	lister                framework.NodeInfoLister
}

var (
	_ framework.PreFilterPlugin = &InterPodAffinity{}
	_ framework.FilterPlugin    = &InterPodAffinity{}
	_ framework.PreScorePlugin  = &InterPodAffinity{}
	_ framework.ScorePlugin     = &InterPodAffinity{}
)

// New builds the plugin from its InterPodAffinityArgs (nil means
// defaults).
func New(_ context.Context, args runtime.Object, h framework.Handle) (framework.Plugin, error) {
	var a Args
	if err := framework.DecodeArgs(args, &a); err != nil {
		return nil, err
	}
	pl := &InterPodAffinity{hardPodAffinityWeight: DefaultHardPodAffinityWeight}
	if h != nil {
		pl.lister = h.SnapshotSharedLister()
	}
	if w := a.HardPodAffinityWeight; w != nil {
		if *w < 0 || *w > 100 {
			return nil, fmt.Errorf("hardPodAffinityWeight: Invalid value: %d: not in valid range [0-100]", *w)
		}
		pl.hardPodAffinityWeight = *w
	}
	return pl, nil
}

// NewWithLister builds the plugin over lister, for tests and fixtures.
func NewWithLister(lister framework.NodeInfoLister, hardPodAffinityWeight int32) *InterPodAffinity {
	return &InterPodAffinity{hardPodAffinityWeight: hardPodAffinityWeight, lister: lister}
}

// Name returns Name.
func (*InterPodAffinity) Name() string { return Name }

// topologyPair is one topology domain: a node label key and value.
// parallelism is how many workers scan the nodes in PreFilter, as
// kube-scheduler's default parallelism.
const parallelism = 16

type topologyPair struct{ key, value string }

// topologyToMatchedTermCount counts matching terms per domain.
type topologyToMatchedTermCount map[topologyPair]int64

func (m topologyToMatchedTermCount) add(node *v1.Node, key string, n int64) {
	if v, ok := node.Labels[key]; ok {
		m[topologyPair{key, v}] += n
	}
}

// domains returns the hashes (framework.PairHash) of the domains with a
// count above zero, or nil if there are none.
func (m topologyToMatchedTermCount) domains() map[uint64]struct{} {
	var out map[uint64]struct{}
	for p, n := range m {
		if n > 0 {
			if out == nil {
				out = map[uint64]struct{}{}
			}
			out[framework.PairHash(p.key, p.value)] = struct{}{}
		}
	}
	return out
}

// inDomain reports whether a label of the node is a domain of m with a
// count above zero; hashes are the hashes of those domains. The node's
// labels are compared by their hashes, and only a hit is looked up.
func inDomain(ni *framework.NodeInfo, m topologyToMatchedTermCount, hashes map[uint64]struct{}) bool {
	if len(hashes) == 0 {
		return false
	}
	for _, l := range ni.Labels() {
		if _, ok := hashes[l.Hash]; ok && m[topologyPair{l.Key, l.Value}] > 0 {
			return true
		}
	}
	return false
}

// podsMayMatch reports whether one of the node's pods may match the pod's
// required terms: all of its affinity terms or one of its anti-affinity
// terms. False means the node's pods need not be looked at.
func podsMayMatch(ni *framework.NodeInfo, aff *framework.PodAffinity) bool {
	if len(aff.RequiredAffinityTerms) > 0 {
		all := true
		for i := range aff.RequiredAffinityTerms {
			all = all && ni.PodsMayMatch(&aff.RequiredAffinityTerms[i])
		}
		if all {
			return true
		}
	}
	for i := range aff.RequiredAntiAffinityTerms {
		if ni.PodsMayMatch(&aff.RequiredAntiAffinityTerms[i]) {
			return true
		}
	}
	return false
}

// preFilterState is what the Filter calls need, computed once per cycle.
type preFilterState struct {
	affinity *framework.PodAffinity
	// existingAntiAffinityCounts counts, per domain, placed pods whose
	// required anti-affinity terms match the pod.
	existingAntiAffinityCounts topologyToMatchedTermCount
	// affinityCounts counts, per domain of each of the pod's required
	// affinity terms, placed pods that match all of them.
	affinityCounts topologyToMatchedTermCount
	// antiAffinityCounts counts, per domain, placed pods matching one of
	// the pod's required anti-affinity terms.
	antiAffinityCounts topologyToMatchedTermCount
	// antiDomains and existingAntiDomains are the hashes of the domains
	// with a count in antiAffinityCounts and existingAntiAffinityCounts.
	antiDomains, existingAntiDomains map[uint64]struct{}
}

// matchesAll reports whether pod matches every term (and there is one);
// bloom is its LabelBloom, 0 when not known.
func matchesAll(terms []framework.AffinityTerm, pod *v1.Pod, bloom uint64) bool {
	if len(terms) == 0 {
		return false
	}
	for i := range terms {
		if !terms[i].MatchesBloom(pod, bloom) {
			return false
		}
	}
	return true
}

// PreFilter counts, over every placed pod, the domains the pod's required
// terms and the placed pods' required anti-affinity terms touch.
func (pl *InterPodAffinity) PreFilter(ctx context.Context, state *framework.CycleState, pod *v1.Pod) *framework.Status {
	aff := framework.NewPodAffinity(pod)
	if aff.ParseErr != nil {
		return framework.AsStatus(aff.ParseErr)
	}
	for _, terms := range [][]framework.AffinityTerm{aff.RequiredAffinityTerms, aff.RequiredAntiAffinityTerms} {
		for _, t := range terms {
			if t.TopologyKey == "" {
				return framework.NewStatus(framework.UnschedulableAndUnresolvable, "pod affinity term has an empty topologyKey")
			}
		}
	}
	s := &preFilterState{
		affinity:                   aff,
		existingAntiAffinityCounts: topologyToMatchedTermCount{},
		affinityCounts:             topologyToMatchedTermCount{},
		antiAffinityCounts:         topologyToMatchedTermCount{},
	}
	if pl.lister != nil {
		bloom := framework.LabelBloom(pod.Labels)
		nodes := pl.lister.List()
		// As kube-scheduler does, nodes are scanned on a parallel pool, each
		// worker counting into its own maps, merged at the end.
		var mu sync.Mutex // guards s's counts while merging
		scan := func(from, to int) {
			local := &preFilterState{
				existingAntiAffinityCounts: topologyToMatchedTermCount{},
				affinityCounts:             topologyToMatchedTermCount{},
				antiAffinityCounts:         topologyToMatchedTermCount{},
			}
			for _, ni := range nodes[from:to] {
				node := ni.Node()
				// The placed pods' required anti-affinity terms, from the
				// node's flat list: most are turned away on their bloom.
				for _, r := range ni.RequiredAntiAffinityTerms() {
					if r.MayMatch(bloom) && r.Term.Matches(pod) {
						local.existingAntiAffinityCounts.add(node, r.Term.TopologyKey, 1)
					}
				}
				if !podsMayMatch(ni, aff) {
					continue
				}
				// Terms are taken by pointer: a copy of each is as large as
				// the check itself, done for every pod in the cluster.
				for _, pi := range ni.Pods {
					if matchesAll(aff.RequiredAffinityTerms, pi.Pod, pi.LabelBloom()) {
						for i := range aff.RequiredAffinityTerms {
							local.affinityCounts.add(node, aff.RequiredAffinityTerms[i].TopologyKey, 1)
						}
					}
					for i := range aff.RequiredAntiAffinityTerms {
						if t := &aff.RequiredAntiAffinityTerms[i]; t.MatchesPodInfo(pi) {
							local.antiAffinityCounts.add(node, t.TopologyKey, 1)
						}
					}
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for k, v := range local.existingAntiAffinityCounts {
				s.existingAntiAffinityCounts[k] += v
			}
			for k, v := range local.affinityCounts {
				s.affinityCounts[k] += v
			}
			for k, v := range local.antiAffinityCounts {
				s.antiAffinityCounts[k] += v
			}
		}
		if len(aff.RequiredAffinityTerms) == 0 && len(aff.RequiredAntiAffinityTerms) == 0 {
			// Only the placed pods' terms to look at, and most nodes
			// have none: one pass is quicker than a pool.
			scan(0, len(nodes))
		} else {
			const chunk = 64
			framework.Parallelize(ctx, parallelism, (len(nodes)+chunk-1)/chunk, 1, func(i int) {
				scan(i*chunk, min((i+1)*chunk, len(nodes)))
			})
		}
	}
	s.antiDomains = s.antiAffinityCounts.domains()
	s.existingAntiDomains = s.existingAntiAffinityCounts.domains()
	state.Write(preFilterStateKey, s)
	return nil
}

// Filter checks, in kube-scheduler's order, the pod's required affinity,
// its required anti-affinity and the placed pods' required anti-affinity.
func (*InterPodAffinity) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	node := nodeInfo.Node()
	if node == nil {
		return framework.NewStatus(framework.Error, "node not found")
	}
	data, err := state.Read(preFilterStateKey)
	if err != nil {
		return framework.AsStatus(fmt.Errorf("failed to read %q from cycle state: %w", preFilterStateKey, err))
	}
	s, ok := data.(*preFilterState)
	if !ok {
		return framework.NewStatus(framework.Error, fmt.Sprintf("%T is not an interpodaffinity.preFilterState", data))
	}
	if !satisfyPodAffinity(s, pod, node) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonAffinityRulesNotMatch)
	}
	// The counts are keyed by the terms' topology keys only, so a node
	// label in a counted domain is a term's domain.
	if inDomain(nodeInfo, s.antiAffinityCounts, s.antiDomains) {
		return framework.NewStatus(framework.Unschedulable, ErrReasonAntiAffinityRulesNotMatch)
	}
	if inDomain(nodeInfo, s.existingAntiAffinityCounts, s.existingAntiDomains) {
		return framework.NewStatus(framework.Unschedulable, ErrReasonExistingAntiAffinityRulesNotMatch)
	}
	return nil
}

// satisfyPodAffinity reports whether every required affinity term finds a
// matching pod in the node's domain. The node must carry every term's
// topology key. If no placed pod matches at all and the pod matches its own
// terms, it may go first (the first replica of a group with affinity to
// itself).
func satisfyPodAffinity(s *preFilterState, pod *v1.Pod, node *v1.Node) bool {
	podsExist := true
	for _, t := range s.affinity.RequiredAffinityTerms {
		v, ok := node.Labels[t.TopologyKey]
		if !ok {
			return false
		}
		if s.affinityCounts[topologyPair{t.TopologyKey, v}] <= 0 {
			podsExist = false
		}
	}
	if podsExist {
		return true
	}
	return len(s.affinityCounts) == 0 && matchesAll(s.affinity.RequiredAffinityTerms, pod, 0)
}

// preferredMayMatch reports whether one of the node's pods may match one
// of the pod's preferred terms.
func preferredMayMatch(ni *framework.NodeInfo, aff *framework.PodAffinity) bool {
	for i := range aff.PreferredAffinityTerms {
		if ni.PodsMayMatch(&aff.PreferredAffinityTerms[i].AffinityTerm) {
			return true
		}
	}
	for i := range aff.PreferredAntiAffinityTerms {
		if ni.PodsMayMatch(&aff.PreferredAntiAffinityTerms[i].AffinityTerm) {
			return true
		}
	}
	return false
}

// preScoreState is the score of each domain, computed once per cycle.
type preScoreState struct {
	topologyScore map[string]map[string]int64
}

// PreScore adds up, per domain, the weights of every preferred term (the
// pod's and the placed pods') and the hard affinity weight of placed pods'
// required affinity terms that the pod matches; anti-affinity subtracts.
func (pl *InterPodAffinity) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	aff := framework.NewPodAffinity(pod)
	if aff.ParseErr != nil {
		return framework.AsStatus(aff.ParseErr)
	}
	s := &preScoreState{topologyScore: map[string]map[string]int64{}}
	add := func(node *v1.Node, key string, w int64) {
		v, ok := node.Labels[key]
		if !ok || w == 0 {
			return
		}
		m := s.topologyScore[key]
		if m == nil {
			m = map[string]int64{}
			s.topologyScore[key] = m
		}
		m[v] += w
	}
	if pl.lister != nil {
		// The placed pods' terms come from each node's flat list; the pod's
		// own preferred terms are checked against the pods of the nodes
		// whose pods' labels may match them.
		ownTerms := len(aff.PreferredAffinityTerms) > 0 || len(aff.PreferredAntiAffinityTerms) > 0
		bloom := framework.LabelBloom(pod.Labels)
		for _, ni := range pl.lister.List() {
			node := ni.Node()
			for _, r := range ni.ScoringAffinityTerms() {
				if r.Hard && pl.hardPodAffinityWeight <= 0 || !r.MayMatch(bloom) || !r.Term.Matches(pod) {
					continue
				}
				w := int64(r.Weight)
				if r.Hard {
					w = int64(pl.hardPodAffinityWeight)
				}
				add(node, r.Term.TopologyKey, w)
			}
			if !ownTerms || !preferredMayMatch(ni, aff) {
				continue
			}
			for _, pi := range ni.Pods {
				for i := range aff.PreferredAffinityTerms {
					t := &aff.PreferredAffinityTerms[i]
					if t.MatchesPodInfo(pi) {
						add(node, t.TopologyKey, int64(t.Weight))
					}
				}
				for i := range aff.PreferredAntiAffinityTerms {
					t := &aff.PreferredAntiAffinityTerms[i]
					if t.MatchesPodInfo(pi) {
						add(node, t.TopologyKey, -int64(t.Weight))
					}
				}
			}
		}
	}
	state.Write(preScoreStateKey, s)
	return nil
}

// Score sums the scores of the domains the node belongs to.
func (*InterPodAffinity) Score(_ context.Context, state *framework.CycleState, _ *v1.Pod, nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	node := nodeInfo.Node()
	if node == nil {
		return 0, framework.NewStatus(framework.Error, "node not found")
	}
	s, st := readPreScore(state)
	if st != nil {
		return 0, st
	}
	var score int64
	for key, values := range s.topologyScore {
		if v, ok := node.Labels[key]; ok {
			score += values[v]
		}
	}
	return score, nil
}

func readPreScore(state *framework.CycleState) (*preScoreState, *framework.Status) {
	data, err := state.Read(preScoreStateKey)
	if err != nil {
		return nil, framework.AsStatus(fmt.Errorf("failed to read %q from cycle state: %w", preScoreStateKey, err))
	}
	s, ok := data.(*preScoreState)
	if !ok {
		return nil, framework.NewStatus(framework.Error, fmt.Sprintf("%T is not an interpodaffinity.preScoreState", data))
	}
	return s, nil
}

// ScoreExtensions returns the plugin itself.
func (pl *InterPodAffinity) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore maps the sums linearly onto 0..100, lowest to highest;
// when every node has the same sum they all get 0.
func (*InterPodAffinity) NormalizeScore(_ context.Context, state *framework.CycleState, _ *v1.Pod, scores framework.NodeScoreList) *framework.Status {
	s, st := readPreScore(state)
	if st != nil {
		return st
	}
	if len(s.topologyScore) == 0 {
		return nil
	}
	minCount, maxCount := int64(math.MaxInt64), int64(math.MinInt64)
	for i := range scores {
		minCount = min(minCount, scores[i].Score)
		maxCount = max(maxCount, scores[i].Score)
	}
	diff := maxCount - minCount
	for i := range scores {
		var f float64
		if diff > 0 {
			f = float64(framework.MaxNodeScore) * float64(scores[i].Score-minCount) / float64(diff)
		}
		scores[i].Score = int64(f)
	}
	return nil
}
