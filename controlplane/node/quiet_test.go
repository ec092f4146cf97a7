package node

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/glassplane/glassplane/controlplane/node/runtime"
)

// countingRuntime counts full syncs: each one asks the runtime for the
// pod's sandbox.
type countingRuntime struct {
	*runtime.Simulated
	starts atomic.Int64
}

func (c *countingRuntime) StartPod(ctx context.Context, pod runtime.PodSpec) (string, error) {
	c.starts.Add(1)
	return c.Simulated.StartPod(ctx, pod)
}

// A running pod whose containers and object do not change costs its worker
// a container list per tick, not a full sync with status work.
func TestSteadyPodIsNotResyncedEveryTick(t *testing.T) {
	rt := &countingRuntime{Simulated: runtime.NewSimulated(runtime.SimulatedConfig{StartDelay: 10 * time.Millisecond})}
	h := startAgent(t, rt, nil) // ticks every 20ms
	startSteadyPod(t, h, "steady")
	before := rt.starts.Load()
	time.Sleep(time.Second) // about 50 ticks
	if n := rt.starts.Load() - before; n > 3 {
		t.Errorf("%d full syncs of an unchanged running pod in a second of 20ms ticks; want at most 3", n)
	}

	// A container that exits by itself is still noticed by the next tick.
	list, err := rt.ListContainers(context.Background(), string(h.getPod(t, "steady").UID))
	if err != nil || len(list) != 1 {
		t.Fatalf("containers = %v, %v", list, err)
	}
	if err := rt.StopContainer(context.Background(), list[0].ID, 0); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the exited container restarted", func() (bool, string) {
		pod := h.getPod(t, "steady")
		if len(pod.Status.ContainerStatuses) == 0 {
			return false, "no container status"
		}
		cs := pod.Status.ContainerStatuses[0]
		return cs.RestartCount >= 1, cs.String()
	})
}

// exitReportingRuntime is a simulated runtime that reports exits the way
// Containerd.WatchExits does, when the test says so, and counts container
// lists. Once failWatch is closed, watching fails.
type exitReportingRuntime struct {
	*runtime.Simulated
	lists     atomic.Int64
	exited    atomic.Pointer[func(string)]
	failWatch chan struct{}
}

func (e *exitReportingRuntime) ListContainers(ctx context.Context, podUID string) ([]runtime.ContainerStatus, error) {
	e.lists.Add(1)
	return e.Simulated.ListContainers(ctx, podUID)
}

func (e *exitReportingRuntime) WatchExits(ctx context.Context, exited func(string)) error {
	select {
	case <-e.failWatch:
		return errors.New("event stream closed")
	default:
	}
	e.exited.Store(&exited)
	select {
	case <-ctx.Done():
		return nil
	case <-e.failWatch:
		return errors.New("event stream closed")
	}
}

// While the runtime reports exits, a steady pod's worker does not list
// its containers every tick, and a reported exit restarts the container;
// once the runtime can no longer report them, workers poll again.
func TestExitEventsReplacePolling(t *testing.T) {
	rt := &exitReportingRuntime{Simulated: runtime.NewSimulated(runtime.SimulatedConfig{StartDelay: 10 * time.Millisecond}), failWatch: make(chan struct{})}
	h := startAgent(t, rt, nil) // ticks every 20ms
	startSteadyPod(t, h, "evented")
	before := rt.lists.Load()
	time.Sleep(time.Second) // about 50 ticks
	if n := rt.lists.Load() - before; n > 3 {
		t.Errorf("%d container lists of an unchanged running pod in a second of 20ms ticks while exits are reported; want at most 3", n)
	}

	// Nor does it wake at all between its full resyncs: an exit, a change
	// of the pod or a probe result would wake it.
	w := h.worker(t, h.getPod(t, "evented").UID)
	checks := w.checks.Load()
	time.Sleep(time.Second)
	if n := w.checks.Load() - checks; n > 2 {
		t.Errorf("a settled pod's worker checked %d times in a second of 20ms ticks while exits are reported; want at most 2", n)
	}

	uid := string(h.getPod(t, "evented").UID)
	list, err := rt.ListContainers(context.Background(), uid)
	if err != nil || len(list) != 1 {
		t.Fatalf("containers = %v, %v", list, err)
	}
	if err := rt.StopContainer(context.Background(), list[0].ID, 0); err != nil {
		t.Fatal(err)
	}
	(*rt.exited.Load())(uid)
	restarted := func(n int32) func() (bool, string) {
		return func() (bool, string) {
			pod := h.getPod(t, "evented")
			if len(pod.Status.ContainerStatuses) == 0 {
				return false, "no container status"
			}
			cs := pod.Status.ContainerStatuses[0]
			return cs.RestartCount >= n && cs.State.Running != nil, cs.String()
		}
	}
	eventually(t, "the reported exit restarted the container", restarted(1))

	close(rt.failWatch)
	eventually(t, "workers polling again", func() (bool, string) {
		before := rt.lists.Load()
		time.Sleep(200 * time.Millisecond)
		n := rt.lists.Load() - before
		return n >= 5, fmt.Sprintf("%d lists in 200ms", n)
	})
	list, err = rt.ListContainers(context.Background(), uid)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list {
		if c.State == runtime.StateRunning {
			if err := rt.StopContainer(context.Background(), c.ID, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A second restart waits out the crash-loop back-off; the status
	// shows the exit at once.
	eventually(t, "an unreported exit noticed by polling", func() (bool, string) {
		pod := h.getPod(t, "evented")
		cs := pod.Status.ContainerStatuses[0]
		return cs.RestartCount >= 2 || cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff", cs.String()
	})
}

// worker returns the agent's worker of the pod with uid.
func (h *harness) worker(t *testing.T, uid types.UID) *podWorker {
	t.Helper()
	h.agent.mu.Lock()
	defer h.agent.mu.Unlock()
	w := h.agent.workers[uid]
	if w == nil {
		t.Fatalf("no worker for pod %s", uid)
	}
	return w
}

// startSteadyPod creates a pod of one container, waits until it runs and
// lets its status write come back through the informer.
func startSteadyPod(t *testing.T, h *harness, name string) {
	t.Helper()
	h.createPod(t, newPod(name, corev1.RestartPolicyAlways, "nginx"))
	eventually(t, "pod Running", func() (bool, string) {
		pod := h.getPod(t, name)
		return pod.Status.Phase == corev1.PodRunning, string(pod.Status.Phase)
	})
	time.Sleep(200 * time.Millisecond)
}
