package nodeports

import (
	"context"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

// portsPod returns a pod with one container asking for host ports given as
// "PROTOCOL/hostIP/port" (protocol and hostIP may be empty).
func portsPod(name string, ports ...string) *v1.Pod {
	var cps []v1.ContainerPort
	for _, s := range ports {
		parts := strings.Split(s, "/")
		port, err := strconv.Atoi(parts[2])
		if err != nil {
			panic(err)
		}
		cps = append(cps, v1.ContainerPort{Protocol: v1.Protocol(parts[0]), HostIP: parts[1], HostPort: int32(port), ContainerPort: int32(port)})
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Ports: cps}}},
	}
}

func TestNodePortsFilter(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	sidecar := func(p *v1.Pod) *v1.Pod {
		p.Spec.InitContainers = []v1.Container{{Name: "init", RestartPolicy: &always, Ports: p.Spec.Containers[0].Ports}}
		p.Spec.Containers[0].Ports = nil
		return p
	}
	plainInit := func(p *v1.Pod) *v1.Pod {
		p.Spec.InitContainers = []v1.Container{{Name: "init", Ports: p.Spec.Containers[0].Ports}}
		p.Spec.Containers[0].Ports = nil
		return p
	}
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing []*v1.Pod
		fits     bool
	}{
		{"nothing running", portsPod("p", "UDP/127.0.0.1/8080"), nil, true},
		{"pod without host ports", &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Ports: []v1.ContainerPort{{ContainerPort: 8080}}}}}}, []*v1.Pod{portsPod("e", "TCP/0.0.0.0/8080")}, true},
		{"other port", portsPod("p", "UDP/127.0.0.1/8080"), []*v1.Pod{portsPod("e", "UDP/127.0.0.1/9090")}, true},
		{"same udp port", portsPod("p", "UDP/127.0.0.1/8080"), []*v1.Pod{portsPod("e", "UDP/127.0.0.1/8080")}, false},
		{"same tcp port", portsPod("p", "TCP/127.0.0.1/8080"), []*v1.Pod{portsPod("e", "TCP/127.0.0.1/8080")}, false},
		{"different host ip", portsPod("p", "TCP/127.0.0.1/8080"), []*v1.Pod{portsPod("e", "TCP/127.0.0.2/8080")}, true},
		{"different protocol", portsPod("p", "UDP/127.0.0.1/8080"), []*v1.Pod{portsPod("e", "TCP/127.0.0.1/8080")}, true},
		{"second udp port conflict", portsPod("p", "UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"), []*v1.Pod{portsPod("e", "UDP/127.0.0.1/8080")}, false},
		{"first tcp port conflict", portsPod("p", "TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"), []*v1.Pod{portsPod("e", "TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081")}, false},
		{"tcp conflict with wildcard in the pod", portsPod("p", "TCP/0.0.0.0/8001"), []*v1.Pod{portsPod("e", "TCP/127.0.0.1/8001")}, false},
		{"tcp conflict with wildcard among the pod's ports", portsPod("p", "TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"), []*v1.Pod{portsPod("e", "TCP/127.0.0.1/8001")}, false},
		{"tcp conflict with wildcard on the node", portsPod("p", "TCP/127.0.0.1/8001"), []*v1.Pod{portsPod("e", "TCP/0.0.0.0/8001")}, false},
		{"wildcard on the node with another protocol", portsPod("p", "UDP/127.0.0.1/8001"), []*v1.Pod{portsPod("e", "TCP/0.0.0.0/8001")}, true},
		{"udp conflict with wildcard on the node", portsPod("p", "UDP/127.0.0.1/8001"), []*v1.Pod{portsPod("e", "TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001")}, false},
		{"empty hostIP means every address", portsPod("p", "TCP//8001"), []*v1.Pod{portsPod("e", "TCP/10.0.0.1/8001")}, false},
		{"empty protocol means TCP", portsPod("p", "//8001"), []*v1.Pod{portsPod("e", "TCP/0.0.0.0/8001")}, false},
		{"empty protocol does not clash with UDP", portsPod("p", "//8001"), []*v1.Pod{portsPod("e", "UDP/0.0.0.0/8001")}, true},
		{"conflict with the second pod on the node", portsPod("p", "TCP/0.0.0.0/80"), []*v1.Pod{portsPod("a", "TCP/0.0.0.0/81"), portsPod("b", "TCP/0.0.0.0/80")}, false},
		{"sidecar init container ports count on the node", portsPod("p", "TCP/0.0.0.0/80"), []*v1.Pod{sidecar(portsPod("e", "TCP/0.0.0.0/80"))}, false},
		{"sidecar init container ports count in the pod", sidecar(portsPod("p", "TCP/0.0.0.0/80")), []*v1.Pod{portsPod("e", "TCP/0.0.0.0/80")}, false},
		{"plain init container ports don't count", plainInit(portsPod("p", "TCP/0.0.0.0/80")), []*v1.Pod{portsPod("e", "TCP/0.0.0.0/80")}, true},
	}
	pl := &NodePorts{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			ni := framework.NewNodeInfo(tt.existing...)
			ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}})
			withPreFilter := framework.NewCycleState()
			if st := pl.PreFilter(ctx, withPreFilter, tt.pod); !st.IsSuccess() {
				t.Fatalf("PreFilter: %v", st.Message())
			}
			for _, state := range []*framework.CycleState{withPreFilter, framework.NewCycleState()} {
				st := pl.Filter(ctx, state, tt.pod, ni)
				if tt.fits {
					if !st.IsSuccess() {
						t.Fatalf("Filter = %v %q, want Success", st.Code(), st.Message())
					}
					continue
				}
				if st.Code() != framework.Unschedulable || st.Message() != ErrReason {
					t.Fatalf("Filter = %v %q, want Unschedulable %q", st.Code(), st.Message(), ErrReason)
				}
			}
		})
	}
}
