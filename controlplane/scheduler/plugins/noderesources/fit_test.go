package noderesources

import (
	"context"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

func requests(cpu, mem string) v1.ResourceRequirements {
	rl := v1.ResourceList{}
	if cpu != "" {
		rl[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		rl[v1.ResourceMemory] = resource.MustParse(mem)
	}
	return v1.ResourceRequirements{Requests: rl}
}

func container(cpu, mem string) v1.Container {
	return v1.Container{Name: "c", Image: "busybox", Resources: requests(cpu, mem)}
}

func pod(name string, containers ...v1.Container) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec:       v1.PodSpec{Containers: containers},
	}
}

func withInit(p *v1.Pod, inits ...v1.Container) *v1.Pod {
	p.Spec.InitContainers = inits
	return p
}

func node(name, cpu, mem string, pods int64) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU:    resource.MustParse(cpu),
			v1.ResourceMemory: resource.MustParse(mem),
			v1.ResourcePods:   *resource.NewQuantity(pods, resource.DecimalSI),
		}},
	}
}

func nodeInfo(n *v1.Node, pods ...*v1.Pod) *framework.NodeInfo {
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(n)
	return ni
}

func TestFitFilter(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	sidecar := container("600m", "")
	sidecar.RestartPolicy = &always

	tests := []struct {
		name        string
		pod         *v1.Pod
		nodeInfo    *framework.NodeInfo
		wantCode    framework.Code
		wantReasons []string
	}{
		{
			name:     "fits on an empty node",
			pod:      pod("p", container("500m", "1Gi")),
			nodeInfo: nodeInfo(node("n", "1", "2Gi", 110)),
			wantCode: framework.Success,
		},
		{
			name:        "insufficient cpu because of existing pods",
			pod:         pod("p", container("600m", "")),
			nodeInfo:    nodeInfo(node("n", "1", "2Gi", 110), pod("other", container("500m", ""))),
			wantCode:    framework.Unschedulable,
			wantReasons: []string{"Insufficient cpu"},
		},
		{
			name:        "cpu and memory both reported",
			pod:         pod("p", container("600m", "1Gi")),
			nodeInfo:    nodeInfo(node("n", "1", "2Gi", 110), pod("other", container("500m", "1500Mi"))),
			wantCode:    framework.Unschedulable,
			wantReasons: []string{"Insufficient cpu", "Insufficient memory"},
		},
		{
			name:        "more than the whole node is unresolvable",
			pod:         pod("p", container("2", "")),
			nodeInfo:    nodeInfo(node("n", "1", "2Gi", 110)),
			wantCode:    framework.UnschedulableAndUnresolvable,
			wantReasons: []string{"Insufficient cpu"},
		},
		{
			name:        "init container larger than app containers counts",
			pod:         withInit(pod("p", container("200m", ""), container("200m", "")), container("900m", "")),
			nodeInfo:    nodeInfo(node("n", "1", "2Gi", 110), pod("other", container("500m", ""))),
			wantCode:    framework.Unschedulable,
			wantReasons: []string{"Insufficient cpu"},
		},
		{
			name:     "init container smaller than the app sum fits",
			pod:      withInit(pod("p", container("200m", ""), container("200m", "")), container("300m", "")),
			nodeInfo: nodeInfo(node("n", "1", "2Gi", 110), pod("other", container("500m", ""))),
			wantCode: framework.Success,
		},
		{
			name:        "sidecar init container adds to the app containers",
			pod:         withInit(pod("p", container("200m", "")), sidecar),
			nodeInfo:    nodeInfo(node("n", "1", "2Gi", 110), pod("other", container("300m", ""))),
			wantCode:    framework.Unschedulable,
			wantReasons: []string{"Insufficient cpu"},
		},
		{
			name:        "pod count limit",
			pod:         pod("p", container("", "")),
			nodeInfo:    nodeInfo(node("n", "4", "8Gi", 2), pod("a"), pod("b")),
			wantCode:    framework.Unschedulable,
			wantReasons: []string{"Too many pods"},
		},
		{
			name:        "pod count and cpu together",
			pod:         pod("p", container("5", "")),
			nodeInfo:    nodeInfo(node("n", "4", "8Gi", 1), pod("a")),
			wantCode:    framework.UnschedulableAndUnresolvable,
			wantReasons: []string{"Too many pods", "Insufficient cpu"},
		},
	}
	pl, err := NewFit(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	fit := pl.(*Fit)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := framework.NewCycleState()
			if st := fit.PreFilter(context.Background(), state, tt.pod); !st.IsSuccess() {
				t.Fatalf("PreFilter: %v", st.Message())
			}
			st := fit.Filter(context.Background(), state, tt.pod, tt.nodeInfo)
			if st.Code() != tt.wantCode {
				t.Errorf("code = %v, want %v (%q)", st.Code(), tt.wantCode, st.Message())
			}
			if !reflect.DeepEqual(st.Reasons(), tt.wantReasons) {
				t.Errorf("reasons = %q, want %q", st.Reasons(), tt.wantReasons)
			}
		})
	}
}

func TestLeastAllocatedScore(t *testing.T) {
	tests := []struct {
		name     string
		pod      *v1.Pod
		nodeInfo *framework.NodeInfo
		want     int64
	}{
		{
			// cpu (4000-1000)*100/4000 = 75, memory (10000-2000)*100/10000 = 80 → (75+80)/2 = 77
			name:     "weighted average of free cpu and memory",
			pod:      pod("p", container("1", "2000")),
			nodeInfo: nodeInfo(node("n", "4", "10000", 110)),
			want:     77,
		},
		{
			// existing 3000m/5000 plus pod 1000m/2000: cpu 0, memory (10000-7000)*100/10000 = 30 → 15
			name:     "counts what the node's pods request",
			pod:      pod("p", container("1", "2000")),
			nodeInfo: nodeInfo(node("n", "4", "10000", 110), pod("o", container("3", "5000"))),
			want:     15,
		},
		{
			// no requests: 100m and 200Mi defaults. cpu (1000-100)*100/1000 = 90,
			// memory (1Gi-200Mi)*100/1Gi = 80 → 85
			name:     "best-effort pods count default requests",
			pod:      pod("p", container("", "")),
			nodeInfo: nodeInfo(node("n", "1", "1Gi", 110)),
			want:     85,
		},
		{
			name:     "over-committed resource scores zero",
			pod:      pod("p", container("8", "1000")),
			nodeInfo: nodeInfo(node("n", "4", "10000", 110)),
			want:     45,
		},
	}
	pl, _ := NewFit(context.Background(), nil, nil)
	fit := pl.(*Fit)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := framework.NewCycleState()
			fit.PreScore(context.Background(), state, tt.pod, nil)
			got, st := fit.Score(context.Background(), state, tt.pod, tt.nodeInfo)
			if !st.IsSuccess() {
				t.Fatalf("Score: %v", st.Message())
			}
			if got != tt.want {
				t.Errorf("score = %d, want %d", got, tt.want)
			}
		})
	}
}
