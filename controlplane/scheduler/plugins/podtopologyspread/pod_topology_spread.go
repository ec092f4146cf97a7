package podtopologyspread

import (
	"context"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/helper"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/nodeaffinity"
)

const (
	// Name is the plugin's name in profiles.
	Name = "PodTopologySpread"
	// ErrReasonConstraintsNotMatch is kube-scheduler's reason for a node
	// whose domain would exceed maxSkew.
	ErrReasonConstraintsNotMatch = "node(s) didn't match pod topology spread constraints"
	// ErrReasonNodeLabelNotMatch is kube-scheduler's reason for a node
	// without a constraint's topology key.
	ErrReasonNodeLabelNotMatch = ErrReasonConstraintsNotMatch + " (missing required label)"

	preFilterStateKey framework.StateKey = "PreFilter" + Name
	preScoreStateKey  framework.StateKey = "PreScore" + Name
	invalidScore                         = -1
)

// PodTopologySpread filters and scores nodes by topology spread.
type PodTopologySpread struct {
	lister framework.NodeInfoLister
}

var (
	_ framework.PreFilterPlugin = &PodTopologySpread{}
	_ framework.FilterPlugin    = &PodTopologySpread{}
	_ framework.PreScorePlugin  = &PodTopologySpread{}
	_ framework.ScorePlugin     = &PodTopologySpread{}
)

// Args are the plugin's arguments (PodTopologySpreadArgs). Only
// defaultingType List with no defaultConstraints is supported, which is
// also what System amounts to for pods no Service or controller selects.
type Args struct {
	Kind               string                        `json:"kind,omitempty"`
	APIVersion         string                        `json:"apiVersion,omitempty"`
	DefaultingType     string                        `json:"defaultingType,omitempty"`
	DefaultConstraints []v1.TopologySpreadConstraint `json:"defaultConstraints,omitempty"`
}

// New builds the plugin from its PodTopologySpreadArgs.
func New(_ context.Context, args runtime.Object, h framework.Handle) (framework.Plugin, error) {
	var a Args
	if err := framework.DecodeArgs(args, &a); err != nil {
		return nil, err
	}
	if len(a.DefaultConstraints) > 0 {
		return nil, fmt.Errorf("defaultConstraints: Unsupported value: Glassplane does not apply default topology spread constraints")
	}
	pl := &PodTopologySpread{}
	if h != nil {
		pl.lister = h.SnapshotSharedLister()
	}
	return pl, nil
}

// NewWithLister builds the plugin over lister, for tests and fixtures.
func NewWithLister(lister framework.NodeInfoLister) *PodTopologySpread {
	return &PodTopologySpread{lister: lister}
}

// Name returns Name.
func (*PodTopologySpread) Name() string { return Name }

// constraint is a parsed TopologySpreadConstraint.
type constraint struct {
	maxSkew           int32
	topologyKey       string
	selector          labels.Selector
	minDomains        int32
	honorNodeAffinity bool
	honorNodeTaints   bool
}

// constraintsOf parses the pod's constraints with the given
// whenUnsatisfiable, merging matchLabelKeys into the selector.
func constraintsOf(pod *v1.Pod, action v1.UnsatisfiableConstraintAction) ([]constraint, error) {
	var out []constraint
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != action {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("failed to parse the label selector of a topology spread constraint: %w", err)
		}
		for _, key := range c.MatchLabelKeys {
			if v, ok := pod.Labels[key]; ok {
				r, err := labels.NewRequirement(key, selection.In, []string{v})
				if err != nil {
					return nil, err
				}
				sel = sel.Add(*r)
			}
		}
		pc := constraint{
			maxSkew: c.MaxSkew, topologyKey: c.TopologyKey, selector: sel, minDomains: 1,
			honorNodeAffinity: c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == v1.NodeInclusionPolicyHonor,
			honorNodeTaints:   c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == v1.NodeInclusionPolicyHonor,
		}
		if c.MinDomains != nil {
			pc.minDomains = *c.MinDomains
		}
		out = append(out, pc)
	}
	return out, nil
}

// nodeLabelsMatch reports whether node has every constraint's topology key.
func nodeLabelsMatch(node *v1.Node, cs []constraint) bool {
	for _, c := range cs {
		if _, ok := node.Labels[c.topologyKey]; !ok {
			return false
		}
	}
	return true
}

// nodeCounts reports whether pods on node count for c, as the node
// inclusion policies say.
func nodeCounts(ctx context.Context, c constraint, pod *v1.Pod, node *v1.Node, affinity nodeaffinity.RequiredNodeAffinity) bool {
	if c.honorNodeAffinity && !affinity.Match(node) {
		return false
	}
	if c.honorNodeTaints {
		if _, untolerated := helper.FindMatchingUntoleratedTaint(ctx, node.Spec.Taints, pod.Spec.Tolerations, func(t *v1.Taint) bool {
			return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
		}); untolerated {
			return false
		}
	}
	return true
}

// countMatching counts the pods on ni in namespace that sel selects and
// that are not being deleted.
func countMatching(ni *framework.NodeInfo, sel labels.Selector, namespace string) int {
	n := 0
	for _, pi := range ni.Pods {
		p := pi.Pod
		if p.DeletionTimestamp != nil || p.Namespace != namespace {
			continue
		}
		if sel.Matches(labels.Set(p.Labels)) {
			n++
		}
	}
	return n
}

// preFilterState holds, per hard constraint, the matching pods per domain
// and the smallest count.
type preFilterState struct {
	constraints []constraint
	// counts[i][value] is the number of matching pods in domain value of
	// constraints[i].
	counts []map[string]int
	// minCounts[i] is the smallest count over constraints[i]'s domains,
	// 0 when there are fewer domains than minDomains.
	minCounts []int
}

// PreFilter counts the matching pods per domain for every DoNotSchedule
// constraint over the nodes that count (eligible by the node inclusion
// policies and carrying every constraint's topology key).
func (pl *PodTopologySpread) PreFilter(ctx context.Context, state *framework.CycleState, pod *v1.Pod) *framework.Status {
	cs, err := constraintsOf(pod, v1.DoNotSchedule)
	if err != nil {
		return framework.AsStatus(err)
	}
	s := &preFilterState{constraints: cs, counts: make([]map[string]int, len(cs)), minCounts: make([]int, len(cs))}
	for i := range cs {
		s.counts[i] = map[string]int{}
	}
	if len(cs) > 0 && pl.lister != nil {
		affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
		for _, ni := range pl.lister.List() {
			node := ni.Node()
			if !nodeLabelsMatch(node, cs) {
				continue
			}
			for i, c := range cs {
				if !nodeCounts(ctx, c, pod, node, affinity) {
					continue
				}
				s.counts[i][node.Labels[c.topologyKey]] += countMatching(ni, c.selector, pod.Namespace)
			}
		}
		for i, c := range cs {
			m := math.MaxInt
			for _, n := range s.counts[i] {
				m = min(m, n)
			}
			if m == math.MaxInt || int32(len(s.counts[i])) < c.minDomains {
				m = 0
			}
			s.minCounts[i] = m
		}
	}
	state.Write(preFilterStateKey, s)
	return nil
}

// Filter rejects a node without a constraint's topology key, and a node
// where placing the pod would make its domain's count exceed the smallest
// domain's count by more than maxSkew.
func (*PodTopologySpread) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
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
		return framework.NewStatus(framework.Error, fmt.Sprintf("%T is not a podtopologyspread.preFilterState", data))
	}
	podLabels := labels.Set(pod.Labels)
	for i, c := range s.constraints {
		value, ok := node.Labels[c.topologyKey]
		if !ok {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNodeLabelNotMatch)
		}
		self := 0
		if c.selector.Matches(podLabels) {
			self = 1
		}
		if skew := s.counts[i][value] + self - s.minCounts[i]; skew > int(c.maxSkew) {
			return framework.NewStatus(framework.Unschedulable, ErrReasonConstraintsNotMatch)
		}
	}
	return nil
}

// preScoreState holds, per soft constraint, the matching pods per domain
// among the feasible nodes' domains and each constraint's weight.
type preScoreState struct {
	constraints []constraint
	counts      []map[string]int
	weights     []float64
	ignored     sets.Set[string]
}

// PreScore counts the matching pods per domain for every ScheduleAnyway
// constraint, in the domains of the feasible nodes; feasible nodes missing
// a topology key are ignored (they score 0).
func (pl *PodTopologySpread) PreScore(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) *framework.Status {
	cs, err := constraintsOf(pod, v1.ScheduleAnyway)
	if err != nil {
		return framework.AsStatus(err)
	}
	s := &preScoreState{constraints: cs, counts: make([]map[string]int, len(cs)), weights: make([]float64, len(cs)), ignored: sets.New[string]()}
	state.Write(preScoreStateKey, s)
	if len(cs) == 0 {
		return nil
	}
	for i := range cs {
		s.counts[i] = map[string]int{}
	}
	hostnames := 0
	for _, ni := range nodes {
		node := ni.Node()
		if !nodeLabelsMatch(node, cs) {
			s.ignored.Insert(node.Name)
			continue
		}
		hostnames++
		for i, c := range cs {
			if c.topologyKey != v1.LabelHostname {
				s.counts[i][node.Labels[c.topologyKey]] = 0
			}
		}
	}
	for i, c := range cs {
		size := len(s.counts[i])
		if c.topologyKey == v1.LabelHostname {
			size = hostnames
		}
		s.weights[i] = math.Log(float64(size + 2))
	}
	if pl.lister == nil {
		return nil
	}
	affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	for _, ni := range pl.lister.List() {
		node := ni.Node()
		if !nodeLabelsMatch(node, cs) {
			continue
		}
		for i, c := range cs {
			if c.topologyKey == v1.LabelHostname || !nodeCounts(ctx, c, pod, node, affinity) {
				continue
			}
			value := node.Labels[c.topologyKey]
			if _, ok := s.counts[i][value]; ok {
				s.counts[i][value] += countMatching(ni, c.selector, pod.Namespace)
			}
		}
	}
	return nil
}

func readPreScore(state *framework.CycleState) (*preScoreState, *framework.Status) {
	data, err := state.Read(preScoreStateKey)
	if err != nil {
		return nil, framework.AsStatus(fmt.Errorf("failed to read %q from cycle state: %w", preScoreStateKey, err))
	}
	s, ok := data.(*preScoreState)
	if !ok {
		return nil, framework.NewStatus(framework.Error, fmt.Sprintf("%T is not a podtopologyspread.preScoreState", data))
	}
	return s, nil
}

// Score is, over the soft constraints, the matching pods in the node's
// domain times log(number of domains + 2), plus maxSkew - 1, rounded;
// fewer is better (NormalizeScore reverses it).
func (*PodTopologySpread) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	node := nodeInfo.Node()
	if node == nil {
		return 0, framework.NewStatus(framework.Error, "node not found")
	}
	s, st := readPreScore(state)
	if st != nil {
		return 0, st
	}
	if len(s.constraints) == 0 || s.ignored.Has(node.Name) {
		return 0, nil
	}
	var score float64
	for i, c := range s.constraints {
		value, ok := node.Labels[c.topologyKey]
		if !ok {
			continue
		}
		var cnt int
		if c.topologyKey == v1.LabelHostname {
			cnt = countMatching(nodeInfo, c.selector, pod.Namespace)
		} else {
			cnt = s.counts[i][value]
		}
		score += float64(cnt)*s.weights[i] + float64(c.maxSkew-1)
	}
	return int64(math.Round(score)), nil
}

// ScoreExtensions returns the plugin itself.
func (pl *PodTopologySpread) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore maps scores onto 0..100 reversed, as kube-scheduler does:
// 100 * (max + min - score) / max; ignored nodes get 0, and every node
// gets 100 when the highest score is 0.
func (*PodTopologySpread) NormalizeScore(_ context.Context, state *framework.CycleState, _ *v1.Pod, scores framework.NodeScoreList) *framework.Status {
	s, st := readPreScore(state)
	if st != nil {
		return st
	}
	if len(s.constraints) == 0 {
		return nil
	}
	minScore, maxScore := int64(math.MaxInt64), int64(0)
	for i := range scores {
		if s.ignored.Has(scores[i].Name) {
			scores[i].Score = invalidScore
			continue
		}
		minScore = min(minScore, scores[i].Score)
		maxScore = max(maxScore, scores[i].Score)
	}
	for i := range scores {
		switch {
		case scores[i].Score == invalidScore:
			scores[i].Score = 0
		case maxScore == 0:
			scores[i].Score = framework.MaxNodeScore
		default:
			scores[i].Score = framework.MaxNodeScore * (maxScore + minScore - scores[i].Score) / maxScore
		}
	}
	return nil
}
