package nodelifecycle

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEvictionTime(t *testing.T) {
	added := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	taint := v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: added}}
	secs := func(n int64) *int64 { return &n }
	tests := []struct {
		name        string
		tolerations []v1.Toleration
		wantOK      bool
		want        time.Time
	}{
		{name: "no toleration: at once", wantOK: true},
		{name: "tolerated for ever", tolerations: []v1.Toleration{{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}},
		{name: "tolerated for 300s", tolerations: []v1.Toleration{{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: secs(300)}}, wantOK: true, want: added.Add(300 * time.Second)},
		{name: "the shortest toleration wins", tolerations: []v1.Toleration{
			{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: secs(300)},
			{Operator: v1.TolerationOpExists, TolerationSeconds: secs(5)},
		}, wantOK: true, want: added.Add(5 * time.Second)},
		{name: "a toleration of another taint does not count", tolerations: []v1.Toleration{{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}, wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{Tolerations: tt.tolerations}}
			got, ok := evictionTime(pod, []v1.Taint{taint})
			if ok != tt.wantOK || !got.Equal(tt.want) {
				t.Fatalf("got %v %v, want %v %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestWantedTaints(t *testing.T) {
	tests := []struct {
		name          string
		ready         v1.ConditionStatus
		unschedulable bool
		want          []string
	}{
		{name: "ready", ready: v1.ConditionTrue},
		{name: "not ready", ready: v1.ConditionFalse, want: []string{"node.kubernetes.io/not-ready:NoExecute", "node.kubernetes.io/not-ready:NoSchedule"}},
		{name: "unknown", ready: v1.ConditionUnknown, want: []string{"node.kubernetes.io/unreachable:NoExecute", "node.kubernetes.io/unreachable:NoSchedule"}},
		{name: "cordoned", ready: v1.ConditionTrue, unschedulable: true, want: []string{"node.kubernetes.io/unschedulable:NoSchedule"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := &v1.Node{Spec: v1.NodeSpec{Unschedulable: tt.unschedulable}, Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: tt.ready}}}}
			var got []string
			for _, taint := range wantedTaints(node) {
				got = append(got, taint.Key+":"+string(taint.Effect))
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("got %v, want %v", got, tt.want)
				}
			}
		})
	}
}
