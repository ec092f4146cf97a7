package node

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestTerminationOrder: when a pod stops, its app containers go first,
// then its sidecars, the last declared first; a plain init container and
// a container that is not running hold nobody up; a sidecar whose grace
// runs out stops anyway.
func TestTerminationOrder(t *testing.T) {
	always := ptr.To(corev1.ContainerRestartPolicyAlways)
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "s1", RestartPolicy: always}, {Name: "init"}, {Name: "s2", RestartPolicy: always}},
		Containers:     []corev1.Container{{Name: "a"}, {Name: "b"}},
	}}
	running := map[string]string{"s1": "1", "s2": "2", "a": "3", "b": "4"}
	o := newTerminationOrder(pod, running)
	ctx := context.Background()

	var mu sync.Mutex
	var stopped []string
	var wg sync.WaitGroup
	stop := func(name string) {
		defer wg.Done()
		o.waitForTurn(ctx, name, time.Minute)
		mu.Lock()
		stopped = append(stopped, name)
		mu.Unlock()
		o.stopped(name)
	}
	wg.Add(2)
	go stop("s1")
	go stop("s2")
	// The sidecars wait while an app container runs.
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	if len(stopped) != 0 {
		t.Errorf("%v stopped before the app containers", stopped)
	}
	mu.Unlock()
	wg.Add(2)
	go stop("a")
	go stop("b")
	wg.Wait()
	if i, j, k := slices.Index(stopped, "s2"), slices.Index(stopped, "s1"), max(slices.Index(stopped, "a"), slices.Index(stopped, "b")); !(k < i && i < j) {
		t.Errorf("stopped in the order %v, want a and b, then s2, then s1", stopped)
	}
	// The plain init container waits for nobody.
	if waited := o.waitForTurn(ctx, "init", time.Minute); waited != 0 {
		t.Errorf("the init container waited %v", waited)
	}

	// b is not running: s1 waits only for a, and stops when its grace
	// runs out.
	o = newTerminationOrder(pod, map[string]string{"s1": "1", "a": "3"})
	start := time.Now()
	o.waitForTurn(ctx, "s1", 100*time.Millisecond)
	if took := time.Since(start); took < 100*time.Millisecond || took > 30*time.Second {
		t.Errorf("s1 waited %v with a running and a 100ms grace, want the grace", took)
	}
	o.stopped("a")
	if waited := o.waitForTurn(ctx, "s1", time.Minute); waited > 30*time.Second {
		t.Errorf("s1 waited %v once a had stopped", waited)
	}
	o.stopped("a") // stopping twice is harmless
}
