package nodeunschedulable

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

func TestNodeUnschedulableFilter(t *testing.T) {
	tests := []struct {
		name          string
		unschedulable bool
		tolerations   []v1.Toleration
		wantCode      framework.Code
	}{
		{"schedulable node", false, nil, framework.Success},
		{"cordoned node", true, nil, framework.UnschedulableAndUnresolvable},
		{"cordoned node tolerated", true, []v1.Toleration{{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}, framework.Success},
		{"cordoned node tolerated by wildcard", true, []v1.Toleration{{Operator: v1.TolerationOpExists}}, framework.Success},
		{"toleration for NoExecute only", true, []v1.Toleration{{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}, framework.UnschedulableAndUnresolvable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ni := framework.NewNodeInfo()
			ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: v1.NodeSpec{Unschedulable: tt.unschedulable}})
			pod := &v1.Pod{Spec: v1.PodSpec{Tolerations: tt.tolerations}}
			st := (&NodeUnschedulable{}).Filter(context.Background(), framework.NewCycleState(), pod, ni)
			if st.Code() != tt.wantCode {
				t.Fatalf("code = %v, want %v", st.Code(), tt.wantCode)
			}
			if !st.IsSuccess() && st.Message() != ErrReasonUnschedulable {
				t.Errorf("message = %q, want %q", st.Message(), ErrReasonUnschedulable)
			}
		})
	}
}
