package endpoint

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func pod(name, ip string, ready bool, ports ...v1.ContainerPort) *v1.Pod {
	status := v1.ConditionFalse
	if ready {
		status = v1.ConditionTrue
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec:       v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{Name: "c", Ports: ports}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: ip,
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: status}}},
	}
}

func TestSubsets(t *testing.T) {
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: v1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []v1.ServicePort{
			{Name: "http", Port: 80, Protocol: v1.ProtocolTCP, TargetPort: intstr.FromString("http")},
		}},
	}
	http := v1.ContainerPort{Name: "http", ContainerPort: 8080, Protocol: v1.ProtocolTCP}
	other := v1.ContainerPort{Name: "http", ContainerPort: 9090, Protocol: v1.ProtocolTCP}
	finished := pod("done", "10.0.0.9", true, http)
	finished.Status.Phase = v1.PodSucceeded
	got := Subsets(svc, []*v1.Pod{
		pod("b", "10.0.0.2", true, http),
		pod("a", "10.0.0.1", true, http),
		pod("c", "10.0.0.3", false, http),
		pod("d", "10.0.0.4", true, other),
		pod("noip", "", true, http),
		pod("noport", "10.0.0.5", true),
		finished,
	})
	if len(got) != 2 {
		t.Fatalf("%d subsets, want one per port mapping: %+v", len(got), got)
	}
	s := got[0]
	if s.Ports[0].Port != 8080 || len(s.Addresses) != 2 || s.Addresses[0].IP != "10.0.0.1" || s.Addresses[1].IP != "10.0.0.2" || len(s.NotReadyAddresses) != 1 || s.NotReadyAddresses[0].IP != "10.0.0.3" {
		t.Fatalf("first subset %+v", s)
	}
	if got[1].Ports[0].Port != 9090 || len(got[1].Addresses) != 1 || got[1].Addresses[0].TargetRef.Name != "d" {
		t.Fatalf("second subset %+v", got[1])
	}
}
