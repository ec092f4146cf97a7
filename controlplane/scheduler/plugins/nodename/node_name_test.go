package nodename

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

func TestNodeNameFilter(t *testing.T) {
	tests := []struct {
		name     string
		nodeName string
		wantCode framework.Code
	}{
		{"no node name", "", framework.Success},
		{"matching node name", "n1", framework.Success},
		{"other node name", "n2", framework.UnschedulableAndUnresolvable},
	}
	ni := framework.NewNodeInfo()
	ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{NodeName: tt.nodeName}}
			st := (&NodeName{}).Filter(context.Background(), framework.NewCycleState(), pod, ni)
			if st.Code() != tt.wantCode {
				t.Fatalf("code = %v, want %v", st.Code(), tt.wantCode)
			}
			if !st.IsSuccess() && st.Message() != ErrReason {
				t.Errorf("message = %q, want %q", st.Message(), ErrReason)
			}
		})
	}
}
