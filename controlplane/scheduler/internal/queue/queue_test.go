package queue

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

func less(a, b *framework.QueuedPodInfo) bool {
	pa, pb := int32(0), int32(0)
	if a.Pod.Spec.Priority != nil {
		pa = *a.Pod.Spec.Priority
	}
	if b.Pod.Spec.Priority != nil {
		pb = *b.Pod.Spec.Priority
	}
	if pa != pb {
		return pa > pb
	}
	return a.Timestamp.Before(b.Timestamp)
}

func pod(name string, priority int32) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec:       v1.PodSpec{Priority: &priority},
	}
}

func newQueue() (*PriorityQueue, *testingclock.FakeClock) {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return New(less, Options{Clock: clk}), clk
}

func counts(q *PriorityQueue) [3]int {
	a, b, u := q.Len()
	return [3]int{a, b, u}
}

func TestBackoffDuration(t *testing.T) {
	q, _ := newQueue()
	want := []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for attempts, w := range want {
		if got := q.BackoffDuration(attempts); got != w {
			t.Errorf("BackoffDuration(%d) = %v, want %v", attempts, got, w)
		}
	}
}

func TestPopOrder(t *testing.T) {
	q, clk := newQueue()
	q.Add(pod("low", 0))
	clk.Step(time.Millisecond)
	q.Add(pod("high", 100))
	clk.Step(time.Millisecond)
	q.Add(pod("low2", 0))
	var got []string
	for i := 0; i < 3; i++ {
		pi := q.Pop()
		got = append(got, pi.Pod.Name)
		q.Done(pi.Pod)
	}
	if want := []string{"high", "low", "low2"}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("pop order %v, want %v", got, want)
	}
}

func TestUnschedulableLifecycle(t *testing.T) {
	tests := []struct {
		name string
		// between runs after the failed pod was popped and before it is
		// requeued, then after it was requeued.
		during, after func(q *PriorityQueue, clk *testingclock.FakeClock)
		want          [3]int // active, backoff, unschedulable
	}{
		{
			name: "waits in unschedulable without a cluster change",
			want: [3]int{0, 0, 1},
		},
		{
			name:  "a cluster change moves it to backoff while backing off",
			after: func(q *PriorityQueue, _ *testingclock.FakeClock) { q.MoveAllToActiveOrBackoffQueue() },
			want:  [3]int{0, 1, 0},
		},
		{
			name: "a cluster change after the backoff moves it to active",
			after: func(q *PriorityQueue, clk *testingclock.FakeClock) {
				clk.Step(2 * time.Second)
				q.MoveAllToActiveOrBackoffQueue()
			},
			want: [3]int{1, 0, 0},
		},
		{
			name: "backoff flush moves it to active once the backoff ended",
			after: func(q *PriorityQueue, clk *testingclock.FakeClock) {
				q.MoveAllToActiveOrBackoffQueue()
				q.FlushBackoffQCompleted()
				clk.Step(1100 * time.Millisecond)
				q.FlushBackoffQCompleted()
			},
			want: [3]int{1, 0, 0},
		},
		{
			name:   "a cluster change during the attempt sends it to backoff",
			during: func(q *PriorityQueue, _ *testingclock.FakeClock) { q.MoveAllToActiveOrBackoffQueue() },
			want:   [3]int{0, 1, 0},
		},
		{
			name: "a spec change during the attempt requeues it",
			during: func(q *PriorityQueue, _ *testingclock.FakeClock) {
				p := pod("p", 0)
				p.Labels = map[string]string{"changed": "yes"}
				q.Update(pod("p", 0), p)
			},
			want: [3]int{0, 1, 0},
		},
		{
			name: "a status-only update keeps it unschedulable",
			after: func(q *PriorityQueue, _ *testingclock.FakeClock) {
				p := pod("p", 0)
				p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse}}
				p.ResourceVersion = "42"
				q.Update(pod("p", 0), p)
			},
			want: [3]int{0, 0, 1},
		},
		{
			name: "a spec change while unschedulable retries it",
			after: func(q *PriorityQueue, clk *testingclock.FakeClock) {
				clk.Step(2 * time.Second)
				p := pod("p", 0)
				p.Spec.Tolerations = []v1.Toleration{{Operator: v1.TolerationOpExists}}
				q.Update(pod("p", 0), p)
			},
			want: [3]int{1, 0, 0},
		},
		{
			name:   "deleted during the attempt is not requeued",
			during: func(q *PriorityQueue, _ *testingclock.FakeClock) { q.Delete(pod("p", 0)) },
			want:   [3]int{0, 0, 0},
		},
		{
			name: "unschedulable too long is retried",
			after: func(q *PriorityQueue, clk *testingclock.FakeClock) {
				clk.Step(DefaultMaxInUnschedulable + time.Second)
				q.FlushUnschedulableLeftover()
			},
			want: [3]int{1, 0, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, clk := newQueue()
			q.Add(pod("p", 0))
			pi := q.Pop()
			cycle := q.SchedulingCycle()
			if tt.during != nil {
				tt.during(q, clk)
			}
			q.AddUnschedulableIfNotPresent(pi, cycle, true)
			if tt.after != nil {
				tt.after(q, clk)
			}
			if got := counts(q); got != tt.want {
				t.Errorf("active/backoff/unschedulable = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestErrorGoesToBackoff(t *testing.T) {
	q, _ := newQueue()
	q.Add(pod("p", 0))
	pi := q.Pop()
	q.AddUnschedulableIfNotPresent(pi, q.SchedulingCycle(), false)
	if got := counts(q); got != [3]int{0, 1, 0} {
		t.Errorf("active/backoff/unschedulable = %v, want [0 1 0]", got)
	}
}

func TestUpdateWhileInFlightDoesNotDuplicate(t *testing.T) {
	q, _ := newQueue()
	q.Add(pod("p", 0))
	pi := q.Pop()
	q.Update(pod("p", 0), pod("p", 0))
	q.Add(pod("p", 0))
	if got := counts(q); got != [3]int{0, 0, 0} {
		t.Fatalf("in-flight pod was queued again: %v", got)
	}
	q.Done(pi.Pod)
	if got := counts(q); got != [3]int{0, 0, 0} {
		t.Errorf("after Done: %v", got)
	}
}

func TestCloseWakesPop(t *testing.T) {
	q, _ := newQueue()
	got := make(chan *framework.QueuedPodInfo)
	go func() { got <- q.Pop() }()
	q.Close()
	select {
	case pi := <-got:
		if pi != nil {
			t.Errorf("Pop after Close = %v, want nil", pi.Pod.Name)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Pop did not return after Close")
	}
}
