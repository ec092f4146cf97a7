package web

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestEventsAndNodesPages(t *testing.T) {
	e := newEnv(t)
	p := pod("default", "web", "node1", corev1.PodRunning)
	e.put(t, "/registry/minions/node1", node("node1", corev1.ConditionTrue))
	down := node("node2", corev1.ConditionFalse)
	down.Spec.Taints = []corev1.Taint{{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}}
	e.put(t, "/registry/minions/node2", down)
	e.put(t, "/registry/pods/default/web", p)
	e.put(t, "/registry/events/default/web.1", coreEvent("web.1", p, "Scheduled", "default-scheduler", "Successfully assigned default/web to node1", time.Now()))
	warn := coreEvent("web.2", p, "BackOff", "kubelet", "Back-off restarting failed container c", time.Now())
	warn.Type = corev1.EventTypeWarning
	e.put(t, "/registry/events/default/web.2", warn)

	tests := []struct {
		name, path, testID string
		want               int
	}{
		{"all events", "/events", "event-row", 2},
		{"warnings", "/events?type=Warning", "event-row", 1},
		{"by reason", "/events?reason=Scheduled", "event-row", 1},
		{"by text", "/events?q=back-off", "event-row", 1},
		{"other namespace", "/events?namespace=kube-system", "event-row", 0},
		{"all nodes", "/nodes", "node-row", 2},
		{"ready nodes", "/nodes?ready=True", "node-row", 1},
		{"by taint", "/nodes?q=not-ready", "node-row", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, _ := e.get(t, tt.path)
			if n := len(byTestID(doc, tt.testID)); n != tt.want {
				t.Errorf("%s rows = %d, want %d", tt.path, n, tt.want)
			}
		})
	}
}
