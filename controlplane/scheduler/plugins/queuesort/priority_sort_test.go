package queuesort

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

func TestPrioritySortLess(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	info := func(priority *int32, created, queued time.Time) *framework.QueuedPodInfo {
		return &framework.QueuedPodInfo{
			Pod:       &v1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}, Spec: v1.PodSpec{Priority: priority}},
			Timestamp: queued,
		}
	}
	high, low := int32(1000), int32(-5)
	tests := []struct {
		name string
		a, b *framework.QueuedPodInfo
		want bool
	}{
		{"higher priority first", info(&high, t0.Add(time.Hour), t0), info(nil, t0, t0), true},
		{"negative priority after unset", info(&low, t0, t0), info(nil, t0.Add(time.Hour), t0), false},
		{"older pod first at equal priority", info(nil, t0, t0.Add(time.Minute)), info(nil, t0.Add(time.Second), t0), true},
		{"earlier queued first at equal creation", info(nil, t0, t0.Add(time.Minute)), info(nil, t0, t0), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (&PrioritySort{}).Less(tt.a, tt.b); got != tt.want {
				t.Errorf("Less = %v, want %v", got, tt.want)
			}
		})
	}
}
