package scheduler

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/scheduler/explain"
)

func withPriority(p *v1.Pod, priority int32) *v1.Pod {
	p.Spec.Priority = &priority
	return p
}

func boundTo(p *v1.Pod, node string) *v1.Pod {
	p.Spec.NodeName = node
	p.Status.Phase = v1.PodRunning
	return p
}

func TestPreemptionEvictsTheLowestPriorityVictims(t *testing.T) {
	// node-a holds a priority-10 pod of 600m; node-b two priority-5 pods of
	// 300m each. A priority-100 pod of 800m fits nowhere; on node-a one
	// victim of priority 10 would do, on node-b two of priority 5: the
	// lower highest-victim priority wins, so node-b's two pods go.
	a1 := boundTo(withPriority(testPod("a1", "600m"), 10), "node-a")
	b1 := boundTo(withPriority(testPod("b1", "300m"), 5), "node-b")
	b2 := boundTo(withPriority(testPod("b2", "300m"), 5), "node-b")
	high := withPriority(testPod("high", "800m"), 100)
	client, _ := newFakeClient(t, testNode("node-a", "1"), testNode("node-b", "1"), a1, b1, b2, high)
	s := startScheduler(t, client)

	eventually(t, "the pod nominated to node-b", func() bool {
		p, err := client.CoreV1().Pods("default").Get(context.Background(), "high", metav1.GetOptions{})
		return err == nil && p.Status.NominatedNodeName == "node-b"
	})
	for _, name := range []string{"b1", "b2"} {
		eventually(t, name+" deleted", func() bool {
			_, err := client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
			return err != nil
		})
	}
	if _, err := client.CoreV1().Pods("default").Get(context.Background(), "a1", metav1.GetOptions{}); err != nil {
		t.Errorf("a1 was evicted: %v", err)
	}
	eventually(t, "Preempted events", func() bool {
		evs, _ := client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		n := 0
		for _, e := range evs.Items {
			if e.Reason == ReasonPreempted && e.Message == "Preempted by pod uid-high on node node-b" {
				n++
			}
		}
		return n == 2
	})
	eventually(t, "high bound to node-b", func() bool {
		p, err := client.CoreV1().Pods("default").Get(context.Background(), "high", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName == "node-b"
	})
	// The binding goroutine queues the attempt's record after the bind
	// returned, so the pod may be seen bound a moment before.
	var ds []explain.Decision
	eventually(t, "both attempts recorded", func() bool {
		ds = s.Decisions("default", "high")
		return len(ds) >= 2
	})
	if len(ds) < 2 || ds[0].NominatedNode != "node-b" || len(ds[0].Victims) != 2 {
		t.Errorf("decisions = %+v, want the first to nominate node-b with 2 victims", ds)
	}
	if want := "0/2 nodes are available: 2 Insufficient cpu."; ds[0].Message != want {
		t.Errorf("message = %q, want %q", ds[0].Message, want)
	}
}

func TestPreemptionMessages(t *testing.T) {
	never := v1.PreemptNever
	tests := []struct {
		name string
		pod  *v1.Pod
		want string
	}{
		{
			name: "no lower-priority pods",
			pod:  withPriority(testPod("p", "700m"), 0),
			want: "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
		},
		{
			name: "preemptionPolicy Never",
			pod: func() *v1.Pod {
				p := withPriority(testPod("p", "700m"), 100)
				p.Spec.PreemptionPolicy = &never
				return p
			}(),
			want: "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never.",
		},
		{
			name: "evicting every lower pod is not enough",
			pod:  withPriority(testPod("p", "1500m"), 100),
			want: "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			existing := boundTo(withPriority(testPod("existing", "600m"), 0), "node-a")
			client, _ := newFakeClient(t, testNode("node-a", "1"), existing, tt.pod)
			s := startScheduler(t, client)
			eventually(t, "a failed decision", func() bool { return len(s.Decisions("default", "p")) > 0 })
			if got := s.Decisions("default", "p")[0].Message; got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
			if _, err := client.CoreV1().Pods("default").Get(context.Background(), "existing", metav1.GetOptions{}); err != nil {
				t.Errorf("existing pod was evicted: %v", err)
			}
			if strings.Contains(tt.want, "No preemption") && s.Decisions("default", "p")[0].NominatedNode != "" {
				t.Error("nominated a node")
			}
		})
	}
}
