package queuesort

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

// Name is the plugin's name in profiles.
const Name = "PrioritySort"

// PrioritySort schedules higher spec.priority first, and among equal
// priorities the pod created first (then the one queued first).
type PrioritySort struct{}

var _ framework.QueueSortPlugin = &PrioritySort{}

// New builds the plugin; it takes no arguments.
func New(_ context.Context, _ runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	return &PrioritySort{}, nil
}

// Name returns Name.
func (*PrioritySort) Name() string { return Name }

// Less reports whether a goes before b.
func (*PrioritySort) Less(a, b *framework.QueuedPodInfo) bool {
	pa, pb := PodPriority(a.Pod), PodPriority(b.Pod)
	if pa != pb {
		return pa > pb
	}
	ca, cb := a.Pod.CreationTimestamp.Time, b.Pod.CreationTimestamp.Time
	if !ca.Equal(cb) {
		return ca.Before(cb)
	}
	return a.Timestamp.Before(b.Timestamp)
}

// PodPriority returns spec.priority, or 0 when the admission plugin did not
// set it.
func PodPriority(pod *v1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}
