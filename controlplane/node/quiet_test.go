package node

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

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
	h.createPod(t, newPod("steady", corev1.RestartPolicyAlways, "nginx"))
	eventually(t, "pod Running", func() (bool, string) {
		pod := h.getPod(t, "steady")
		return pod.Status.Phase == corev1.PodRunning, string(pod.Status.Phase)
	})
	time.Sleep(200 * time.Millisecond) // the status write comes back through the informer
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
