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

// preScoreState is what Score needs, computed once per cycle: the pod's
// images and, for each, the share of all nodes holding it.
type preScoreState struct {
	// images are the pod's containers' images (init containers first),
	// normalized; numContainers counts them.
	images []string
	// spread[image] is how many nodes hold the image over all nodes.
	spread map[string]float64
}

// PreScore finds the share of nodes holding each of the pod's images. As
// kube-scheduler does, an image matches when one of the node's names for
// it equals the pod's image name with ":latest" added when it names no tag
// or digest; the node's names are taken as they are (kubelet reports them
// fully qualified, so a pod naming "nginx" does not match
// "docker.io/library/nginx:latest", kubernetes/kubernetes#112699). The
// snapshot counts the nodes holding each name as nodes change, as
// kube-scheduler's keeps each image's NumNodes, so a cycle need not look
// at every node's images.
func (pl *ImageLocality) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	s := &preScoreState{spread: map[string]float64{}}
	for _, c := range pod.Spec.InitContainers {
		s.images = append(s.images, NormalizedImageName(c.Image))
	}
	for _, c := range pod.Spec.Containers {
		s.images = append(s.images, NormalizedImageName(c.Image))
	}
	if pl.lister != nil {
		all := pl.lister.List()
		counter, ok := pl.lister.(framework.ImageCounter)
		for _, name := range s.images {
			n := 0
			if ok {
				n = counter.NodesWithImage(name)
			} else {
				for _, ni := range all {
					if imgs := ni.Images(); imgs != nil {
						if _, held := imgs.Sizes[name]; held {
							n++
						}
					}
				}
			}
			if n > 0 {
				s.spread[name] = float64(n) / float64(len(all))
			}
		}
	}
	state.Write(preScoreStateKey, s)
	return nil
}

// Score sums, over the pod's containers whose image the node holds, the
// image size times the share of nodes holding it, and maps the sum from
// [23 MiB, 1000 MiB * containers] onto 0..100.
func (*ImageLocality) Score(_ context.Context, state *framework.CycleState, _ *v1.Pod, nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	if nodeInfo.Node() == nil {
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
	var sum int64
	if imgs := nodeInfo.Images(); imgs != nil {
		for _, name := range s.images {
			if size, ok := imgs.Sizes[name]; ok {
				sum += int64(float64(size) * s.spread[name])
			}
		}
	}
	return calculatePriority(sum, len(s.images)), nil
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
