package helper

import (
	"context"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

// DefaultNormalizeScore scales scores so the highest becomes maxPriority
// (the others proportionally); with reverse the scale is flipped so the
// lowest raw score gets maxPriority. All zero scores stay 0, or become
// maxPriority with reverse. This is kube-scheduler's helper.
func DefaultNormalizeScore(maxPriority int64, reverse bool, scores framework.NodeScoreList) *framework.Status {
	var maxCount int64
	for i := range scores {
		maxCount = max(maxCount, scores[i].Score)
	}
	if maxCount == 0 {
		if reverse {
			for i := range scores {
				scores[i].Score = maxPriority
			}
		}
		return nil
	}
	for i := range scores {
		s := maxPriority * scores[i].Score / maxCount
		if reverse {
			s = maxPriority - s
		}
		scores[i].Score = s
	}
	return nil
}

// TolerationsTolerateTaint reports whether any toleration tolerates taint.
// Numeric Gt/Lt operators are treated as an alpha feature that is off.
func TolerationsTolerateTaint(ctx context.Context, tolerations []v1.Toleration, taint *v1.Taint) bool {
	logger := logr.FromContextOrDiscard(ctx)
	for i := range tolerations {
		if tolerations[i].ToleratesTaint(logger, taint, false) {
			return true
		}
	}
	return false
}

// FindMatchingUntoleratedTaint returns the first taint for which include
// returns true and that no toleration tolerates.
func FindMatchingUntoleratedTaint(ctx context.Context, taints []v1.Taint, tolerations []v1.Toleration, include func(*v1.Taint) bool) (v1.Taint, bool) {
	for i := range taints {
		if include != nil && !include(&taints[i]) {
			continue
		}
		if !TolerationsTolerateTaint(ctx, tolerations, &taints[i]) {
			return taints[i], true
		}
	}
	return v1.Taint{}, false
}
