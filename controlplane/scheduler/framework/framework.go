package framework

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	v1 "k8s.io/api/core/v1"

	"github.com/glassplane/glassplane/controlplane/scheduler/explain"
)

// DefaultParallelism is how many nodes are filtered or scored at once.
const DefaultParallelism = 16

// Framework runs the plugins of one profile.
type Framework struct {
	profileName string
	parallelism int
	queueSort   QueueSortPlugin
	preFilter   []PreFilterPlugin
	filter      []FilterPlugin
	preScore    []PreScorePlugin
	score       []ScorePlugin
	preBind     []PreBindPlugin
	weights     map[string]int64
}

// NewFramework builds every plugin the profile enables from registry and
// sorts them into extension points. parallelism bounds the per-node pool
// (<= 0 means DefaultParallelism).
func NewFramework(ctx context.Context, registry Registry, profile Profile, h Handle, parallelism int) (*Framework, error) {
	if parallelism <= 0 {
		parallelism = DefaultParallelism
	}
	f := &Framework{profileName: profile.SchedulerName, parallelism: parallelism, weights: map[string]int64{}}
	seen := map[string]bool{}
	for _, ref := range profile.Plugins {
		if seen[ref.Name] {
			return nil, fmt.Errorf("failed to build profile %q: plugin %q is listed twice", profile.SchedulerName, ref.Name)
		}
		seen[ref.Name] = true
		factory, ok := registry[ref.Name]
		if !ok {
			return nil, fmt.Errorf("failed to build profile %q: plugin %q is not registered", profile.SchedulerName, ref.Name)
		}
		p, err := factory(ctx, ref.Args, h)
		if err != nil {
			return nil, fmt.Errorf("failed to build plugin %q: %w", ref.Name, err)
		}
		if qs, ok := p.(QueueSortPlugin); ok {
			if f.queueSort != nil {
				return nil, fmt.Errorf("failed to build profile %q: only one queue sort plugin may be enabled, got %q and %q", profile.SchedulerName, f.queueSort.Name(), p.Name())
			}
			f.queueSort = qs
		}
		if pf, ok := p.(PreFilterPlugin); ok {
			f.preFilter = append(f.preFilter, pf)
		}
		if fp, ok := p.(FilterPlugin); ok {
			f.filter = append(f.filter, fp)
		}
		if ps, ok := p.(PreScorePlugin); ok {
			f.preScore = append(f.preScore, ps)
		}
		if pb, ok := p.(PreBindPlugin); ok {
			f.preBind = append(f.preBind, pb)
		}
		if sp, ok := p.(ScorePlugin); ok && !ref.DisableScore {
			weight := ref.Weight
			if weight == 0 {
				weight = 1
			}
			if weight < 0 {
				return nil, fmt.Errorf("failed to build profile %q: plugin %q has negative weight %d", profile.SchedulerName, ref.Name, weight)
			}
			f.score = append(f.score, sp)
			f.weights[p.Name()] = weight
		}
	}
	if f.queueSort == nil {
		return nil, fmt.Errorf("failed to build profile %q: no queue sort plugin enabled", profile.SchedulerName)
	}
	return f, nil
}

// ProfileName is the scheduler name of the profile.
func (f *Framework) ProfileName() string { return f.profileName }

// QueueSortLess is the queue sort plugin's Less.
func (f *Framework) QueueSortLess() func(a, b *QueuedPodInfo) bool { return f.queueSort.Less }

// FilterPluginNames lists the enabled filter plugins in the order they run.
func (f *Framework) FilterPluginNames() []string {
	names := make([]string, 0, len(f.filter))
	for _, p := range f.filter {
		names = append(names, p.Name())
	}
	return names
}

// RunPreFilterPlugins runs every PreFilter plugin and returns the first
// status that is not Success, tagged with the plugin's name.
func (f *Framework) RunPreFilterPlugins(ctx context.Context, state *CycleState, pod *v1.Pod) *Status {
	for _, p := range f.preFilter {
		if s := p.PreFilter(ctx, state, pod); !s.IsSuccess() {
			return s.WithPlugin(p.Name())
		}
	}
	return nil
}

// RunFilterPlugins runs the Filter plugins on one node in order and stops
// at the first that does not answer Success; that status is returned,
// tagged with the plugin's name.
func (f *Framework) RunFilterPlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) *Status {
	for _, p := range f.filter {
		if s := p.Filter(ctx, state, pod, nodeInfo); !s.IsSuccess() {
			return s.WithPlugin(p.Name())
		}
	}
	return nil
}

// NodeFilterResult is the outcome of filtering one node; a nil Status
// means the node passed.
type NodeFilterResult struct {
	NodeInfo *NodeInfo
	Status   *Status
}

// FilterNodes filters nodes on the parallel pool, starting at index start
// and wrapping around, and stops handing out work once want nodes passed.
// It returns the results of the nodes it evaluated in evaluation order; at
// most want of them passed. An Error status from any plugin aborts the
// cycle and is returned as an error.
func (f *Framework) FilterNodes(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo, start, want int) ([]NodeFilterResult, error) {
	n := len(nodes)
	if n == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	statuses := make([]*Status, n)
	evaluated := make([]bool, n)
	var feasible atomic.Int64
	var errOnce sync.Once
	var firstErr error
	check := func(i int) {
		ni := nodes[(start+i)%n]
		s := f.RunFilterPlugins(ctx, state, pod, ni)
		switch {
		case s.Code() == Error:
			errOnce.Do(func() {
				firstErr = fmt.Errorf("failed to run filter plugin %q on node %q: %w", s.Plugin(), ni.nodeName(), s.AsError())
			})
			cancel()
			return
		case s.IsSuccess():
			found := feasible.Add(1)
			if found > int64(want) {
				return
			}
			if found == int64(want) {
				cancel()
			}
		}
		statuses[i] = s
		evaluated[i] = true
	}
	Parallelize(ctx, f.parallelism, n, chunkSizeFor(n, f.parallelism), check)
	if firstErr != nil {
		return nil, firstErr
	}
	results := make([]NodeFilterResult, 0, n)
	for i := 0; i < n; i++ {
		if evaluated[i] {
			results = append(results, NodeFilterResult{NodeInfo: nodes[(start+i)%n], Status: statuses[i]})
		}
	}
	return results, nil
}

// RunPreScorePlugins runs every PreScore plugin with the feasible nodes.
func (f *Framework) RunPreScorePlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo) *Status {
	for _, p := range f.preScore {
		if s := p.PreScore(ctx, state, pod, nodes); !s.IsSuccess() {
			return s.WithPlugin(p.Name())
		}
	}
	return nil
}

// PluginScore is one plugin's contribution to one node's total: Raw is
// what Score returned, Normalized the score after NormalizeScore (equal to
// Raw without), Weighted is Normalized times Weight. It is the
// explanation's type, so a cycle's scores are recorded without a copy.
type PluginScore = explain.PluginScore

// NodePluginScores is every plugin's score for one node (Plugins) and their
// sum (Total), the explanation's type too.
type NodePluginScores = explain.NodeScore

// RunScorePlugins scores every node with every Score plugin on the parallel
// pool, normalizes, checks the range, applies the weights and sums.
//
// The result is the cycle's explanation too, so it is built in place: a
// few arrays (the nodes, blocks of their plugin scores) hold it, raw scores are
// written into it as the plugins return them, and each plugin's list is
// then normalized in place (the only per-plugin buffers, pooled). The
// arrays belong to state until state.ReleaseScores.
func (f *Framework) RunScorePlugins(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo) ([]NodePluginScores, *Status) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	np := len(f.score)
	weights := make([]int64, np)
	for p, pl := range f.score {
		weights[p] = f.weights[pl.Name()]
	}
	// The result's arrays come from the cycle state's arena, reused from
	// an earlier cycle when that one released its scores.
	a := &scoreArena{}
	if state.scores == nil {
		a = scoreArenas.Get().(*scoreArena)
		state.scores = a
	}
	a.nodes = slices.Grow(a.nodes[:0], len(nodes))[:len(nodes)]
	out := a.nodes
	// The cells are in blocks of at most 32 KiB: small objects, taken
	// from the spans the runtime keeps, where one larger array would be
	// a fresh span, zeroed and its pages faulted in, whenever the pool
	// lost the arena to a garbage collection.
	perBlock := max(1, (32<<10)/int(unsafe.Sizeof(PluginScore{}))/max(np, 1)) * max(np, 1)
	block, cells := 0, []PluginScore(nil)
	for i, ni := range nodes {
		if len(cells) < np {
			if block == len(a.blocks) {
				a.blocks = append(a.blocks, make([]PluginScore, perBlock))
			}
			cells = a.blocks[block]
			block++
		}
		out[i] = NodePluginScores{Node: ni.nodeName(), Plugins: cells[:np:np]}
		cells = cells[np:]
	}
	lists := scoreListPool.Get().(*[]NodeScoreList)
	defer scoreListPool.Put(lists)
	for len(*lists) < np {
		*lists = append(*lists, nil)
	}
	scores := (*lists)[:np]
	for p := range scores {
		scores[p] = slices.Grow(scores[p][:0], len(nodes))[:len(nodes)]
	}

	var errOnce sync.Once
	var firstErr *Status
	fail := func(s *Status) {
		errOnce.Do(func() { firstErr = s })
		cancel()
	}

	Parallelize(ctx, f.parallelism, len(nodes), chunkSizeFor(len(nodes), f.parallelism), func(i int) {
		name := out[i].Node
		for p, pl := range f.score {
			s, st := pl.Score(ctx, state, pod, nodes[i])
			if !st.IsSuccess() {
				fail(NewStatus(Error, fmt.Sprintf("plugin %q failed to score node %q: %s", pl.Name(), name, st.Message())).WithPlugin(pl.Name()))
				return
			}
			scores[p][i] = NodeScore{Name: name, Score: s}
			out[i].Plugins[p] = PluginScore{Plugin: pl.Name(), Raw: s, Weight: weights[p]}
		}
	})
	if firstErr != nil {
		return nil, firstErr
	}

	Parallelize(ctx, f.parallelism, np, 1, func(p int) {
		pl := f.score[p]
		if ext := pl.ScoreExtensions(); ext != nil {
			if st := ext.NormalizeScore(ctx, state, pod, scores[p]); !st.IsSuccess() {
				fail(NewStatus(Error, fmt.Sprintf("plugin %q failed to normalize scores: %s", pl.Name(), st.Message())).WithPlugin(pl.Name()))
				return
			}
		}
		for _, ns := range scores[p] {
			if ns.Score < MinNodeScore || ns.Score > MaxNodeScore {
				fail(NewStatus(Error, fmt.Sprintf("plugin %q returns an invalid score %d for node %q, it should be in the range [%d, %d] after normalizing", pl.Name(), ns.Score, ns.Name, MinNodeScore, MaxNodeScore)).WithPlugin(pl.Name()))
				return
			}
		}
	})
	if firstErr != nil {
		return nil, firstErr
	}

	for i := range out {
		nps := &out[i]
		for p := range nps.Plugins {
			ps := &nps.Plugins[p]
			ps.Normalized = scores[p][i].Score
			ps.Weighted = ps.Normalized * ps.Weight
			nps.Total += ps.Weighted
		}
	}
	return out, nil
}

// scoreArena holds the arrays of one cycle's RunScorePlugins result.
type scoreArena struct {
	nodes  []NodePluginScores
	blocks [][]PluginScore
}

// scoreArenas holds released arenas between cycles.
var scoreArenas = sync.Pool{New: func() any { return new(scoreArena) }}

// scoreListPool holds the per-plugin score lists of RunScorePlugins
// between cycles.
var scoreListPool = sync.Pool{New: func() any { return new([]NodeScoreList) }}

// ErrNoScores is returned by SelectHost for an empty list.
var ErrNoScores = errors.New("empty list of node scores")

// SelectHost picks the node with the highest total score; among nodes that
// tie for the highest it picks one uniformly at random (reservoir sampling,
// as kube-scheduler does).
func SelectHost(scores []NodePluginScores, rng *rand.Rand) (string, error) {
	if len(scores) == 0 {
		return "", ErrNoScores
	}
	best := scores[0].Node
	bestScore := scores[0].Total
	ties := 1
	for _, s := range scores[1:] {
		switch {
		case s.Total > bestScore:
			best, bestScore, ties = s.Node, s.Total, 1
		case s.Total == bestScore:
			ties++
			if rng.IntN(ties) == 0 {
				best = s.Node
			}
		}
	}
	return best, nil
}

// chunkSizeFor returns how many nodes one worker takes at a time: about
// the square root of n, but small enough to keep every worker busy.
func chunkSizeFor(n, parallelism int) int {
	s := int(math.Sqrt(float64(n)))
	if r := n/parallelism + 1; s > r {
		s = r
	} else if s < 1 {
		s = 1
	}
	return s
}
