package imagelocality

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

// Name is the plugin's name in profiles.
const Name = "ImageLocality"

// kube-scheduler's thresholds: images smaller than minThreshold in total
// score 0; maxContainerThreshold per container scores 100.
const (
	mb                    int64 = 1024 * 1024
	minThreshold          int64 = 23 * mb
	maxContainerThreshold int64 = 1000 * mb
)

const preScoreStateKey framework.StateKey = "PreScore" + Name

// ImageLocality scores nodes by the images they already have.
type ImageLocality struct {
	lister framework.NodeInfoLister
}

var (
	_ framework.PreScorePlugin = &ImageLocality{}
	_ framework.ScorePlugin    = &ImageLocality{}
)

// New builds the plugin; it takes no arguments.
func New(_ context.Context, _ runtime.Object, h framework.Handle) (framework.Plugin, error) {
	pl := &ImageLocality{}
	if h != nil {
		pl.lister = h.SnapshotSharedLister()
	}
	return pl, nil
}

// NewWithLister builds the plugin over lister, for tests and fixtures.
func NewWithLister(lister framework.NodeInfoLister) *ImageLocality {
	return &ImageLocality{lister: lister}
}

// Name returns Name.
func (*ImageLocality) Name() string { return Name }

type preScoreState struct {
	// numNodes[image] is how many nodes hold the image; totalNodes all.
	numNodes   map[string]int
	totalNodes int
}

// PreScore counts, for each of the pod's images, the nodes holding it.
func (pl *ImageLocality) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	s := &preScoreState{numNodes: map[string]int{}}
	wanted := map[string]bool{}
	for _, c := range append(append([]v1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		wanted[NormalizedImageName(c.Image)] = true
	}
	if pl.lister != nil {
		all := pl.lister.List()
		s.totalNodes = len(all)
		for _, ni := range all {
			seen := map[string]bool{}
			for _, img := range ni.Node().Status.Images {
				for _, name := range img.Names {
					name = NormalizedImageName(name)
					if wanted[name] && !seen[name] {
						seen[name] = true
						s.numNodes[name]++
					}
				}
			}
		}
	}
	state.Write(preScoreStateKey, s)
	return nil
}

// Score sums, over the pod's containers whose image the node holds, the
// image size times the share of nodes holding it, and maps the sum from
// [23 MiB, 1000 MiB * containers] onto 0..100.
func (*ImageLocality) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	node := nodeInfo.Node()
	if node == nil {
		return 0, framework.NewStatus(framework.Error, "node not found")
	}
	data, err := state.Read(preScoreStateKey)
	if err != nil {
		return 0, framework.AsStatus(fmt.Errorf("failed to read %q from cycle state: %w", preScoreStateKey, err))
	}
	s, ok := data.(*preScoreState)
	if !ok {
		return 0, framework.NewStatus(framework.Error, fmt.Sprintf("%T is not an imagelocality.preScoreState", data))
	}
	sizes := map[string]int64{}
	for _, img := range node.Status.Images {
		for _, name := range img.Names {
			sizes[NormalizedImageName(name)] = img.SizeBytes
		}
	}
	var sum int64
	containers := append(append([]v1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, c := range containers {
		name := NormalizedImageName(c.Image)
		size, ok := sizes[name]
		if !ok || s.totalNodes == 0 {
			continue
		}
		sum += int64(float64(size) * float64(s.numNodes[name]) / float64(s.totalNodes))
	}
	return calculatePriority(sum, len(containers)), nil
}

func calculatePriority(sum int64, numContainers int) int64 {
	maxThreshold := maxContainerThreshold * int64(numContainers)
	if sum < minThreshold {
		sum = minThreshold
	} else if sum > maxThreshold {
		sum = maxThreshold
	}
	if maxThreshold <= minThreshold {
		return 0
	}
	return framework.MaxNodeScore * (sum - minThreshold) / (maxThreshold - minThreshold)
}

// ScoreExtensions returns nil: scores are already 0..100.
func (*ImageLocality) ScoreExtensions() framework.ScoreExtensions { return nil }

// NormalizedImageName appends ":latest" to an image named without a tag or
// digest, as kube-scheduler does.
func NormalizedImageName(name string) string {
	if strings.LastIndex(name, ":") <= strings.LastIndex(name, "/") {
		name += ":latest"
	}
	return name
}
