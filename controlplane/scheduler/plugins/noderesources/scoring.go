package noderesources

import (
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

// ScoringStrategyType names how NodeResourcesFit scores a node.
type ScoringStrategyType string

// The scoring strategies of NodeResourcesFitArgs.
const (
	LeastAllocated           ScoringStrategyType = "LeastAllocated"
	MostAllocated            ScoringStrategyType = "MostAllocated"
	RequestedToCapacityRatio ScoringStrategyType = "RequestedToCapacityRatio"
)

// maxCustomPriorityScore is the top of a RequestedToCapacityRatio shape's
// score scale (0..10), stretched to 0..MaxNodeScore.
const maxCustomPriorityScore = 10

// UtilizationShapePoint is one point of a RequestedToCapacityRatio shape:
// at utilization (0..100 %) the score is score (0..10).
type UtilizationShapePoint struct {
	Utilization int32 `json:"utilization"`
	Score       int32 `json:"score"`
}

// RequestedToCapacityRatioParam is the shape of the RequestedToCapacityRatio
// strategy.
type RequestedToCapacityRatioParam struct {
	Shape []UtilizationShapePoint `json:"shape"`
}

// ScoringStrategy is NodeResourcesFitArgs.scoringStrategy.
type ScoringStrategy struct {
	Type                     ScoringStrategyType            `json:"type,omitempty"`
	Resources                []ResourceSpec                 `json:"resources,omitempty"`
	RequestedToCapacityRatio *RequestedToCapacityRatioParam `json:"requestedToCapacityRatio,omitempty"`
}

// scorer turns the per-resource requested and allocatable amounts into a
// node score.
type scorer func(requested, allocatable []int64) int64

func newScorer(s ScoringStrategy) (scorer, error) {
	weights := make([]int64, len(s.Resources))
	for i, r := range s.Resources {
		if r.Weight <= 0 || r.Weight > 100 {
			return nil, fmt.Errorf("scoringStrategy.resources[%d].weight: Invalid value: %d: resource weight of %s not in valid range [1, 100]", i, r.Weight, r.Name)
		}
		weights[i] = r.Weight
	}
	weighted := func(score func(requested, capacity int64) int64) scorer {
		return func(requested, allocatable []int64) int64 {
			var nodeScore, weightSum int64
			for i := range requested {
				if allocatable[i] == 0 {
					continue
				}
				nodeScore += score(requested[i], allocatable[i]) * weights[i]
				weightSum += weights[i]
			}
			if weightSum == 0 {
				return 0
			}
			return nodeScore / weightSum
		}
	}
	switch s.Type {
	case LeastAllocated, "":
		return weighted(leastRequestedScore), nil
	case MostAllocated:
		return weighted(mostRequestedScore), nil
	case RequestedToCapacityRatio:
		if s.RequestedToCapacityRatio == nil || len(s.RequestedToCapacityRatio.Shape) == 0 {
			return nil, fmt.Errorf("scoringStrategy.requestedToCapacityRatio.shape: Required value: at least one point must be specified")
		}
		shape := s.RequestedToCapacityRatio.Shape
		for i, p := range shape {
			if p.Utilization < 0 || p.Utilization > 100 || p.Score < 0 || p.Score > maxCustomPriorityScore {
				return nil, fmt.Errorf("scoringStrategy.requestedToCapacityRatio.shape[%d]: Invalid value: utilization must be in [0, 100] and score in [0, 10]", i)
			}
			if i > 0 && p.Utilization <= shape[i-1].Utilization {
				return nil, fmt.Errorf("scoringStrategy.requestedToCapacityRatio.shape[%d].utilization: Invalid value: %d: utilization values must be sorted in increasing order", i, p.Utilization)
			}
		}
		raw := brokenLinear(shape)
		return func(requested, allocatable []int64) int64 {
			var nodeScore, weightSum int64
			for i := range requested {
				if allocatable[i] == 0 {
					continue
				}
				var rs int64
				if requested[i] > allocatable[i] {
					rs = raw(100)
				} else {
					rs = raw(requested[i] * 100 / allocatable[i])
				}
				if rs > 0 {
					nodeScore += rs * weights[i]
					weightSum += weights[i]
				}
			}
			if weightSum == 0 {
				return 0
			}
			return int64(math.Round(float64(nodeScore) / float64(weightSum)))
		}, nil
	default:
		return nil, fmt.Errorf("scoringStrategy.type: Unsupported value: %q: supported values: \"LeastAllocated\", \"MostAllocated\", \"RequestedToCapacityRatio\"", s.Type)
	}
}

// brokenLinear is the piecewise linear function through the shape's
// points, with scores stretched from 0..10 to 0..MaxNodeScore.
func brokenLinear(shape []UtilizationShapePoint) func(int64) int64 {
	scale := framework.MaxNodeScore / maxCustomPriorityScore
	return func(p int64) int64 {
		for i := range shape {
			u := int64(shape[i].Utilization)
			if p <= u {
				if i == 0 {
					return int64(shape[0].Score) * scale
				}
				pu, ps, cs := int64(shape[i-1].Utilization), int64(shape[i-1].Score)*scale, int64(shape[i].Score)*scale
				return ps + (cs-ps)*(p-pu)/(u-pu)
			}
		}
		return int64(shape[len(shape)-1].Score) * scale
	}
}

// leastRequestedScore is the share of capacity left free, 0..100.
func leastRequestedScore(requested, capacity int64) int64 {
	if capacity == 0 || requested > capacity {
		return 0
	}
	return (capacity - requested) * framework.MaxNodeScore / capacity
}

// mostRequestedScore is the share of capacity in use, 0..100.
func mostRequestedScore(requested, capacity int64) int64 {
	if capacity == 0 {
		return 0
	}
	requested = min(requested, capacity)
	return requested * framework.MaxNodeScore / capacity
}

// allocatableAndRequested returns the node's allocatable of a resource and
// what its pods request plus the pod; nonZero uses the scoring defaults for
// cpu and memory. A scalar resource the pod doesn't ask for is (0, 0), so
// it is skipped.
func allocatableAndRequested(name v1.ResourceName, podReq *framework.Resource, ni *framework.NodeInfo, nonZero bool) (int64, int64) {
	requested := ni.Requested
	if nonZero {
		requested = ni.NonZeroRequested
	}
	switch name {
	case v1.ResourceCPU:
		return ni.Allocatable.MilliCPU, requested.MilliCPU + podReq.MilliCPU
	case v1.ResourceMemory:
		return ni.Allocatable.Memory, requested.Memory + podReq.Memory
	case v1.ResourceEphemeralStorage:
		return ni.Allocatable.EphemeralStorage, ni.Requested.EphemeralStorage + podReq.EphemeralStorage
	default:
		if podReq.ScalarResources[name] == 0 {
			return 0, 0
		}
		return ni.Allocatable.ScalarResources[name], ni.Requested.ScalarResources[name] + podReq.ScalarResources[name]
	}
}
