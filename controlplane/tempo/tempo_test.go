package tempo

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestFromConfigMap(t *testing.T) {
	tests := []struct {
		name string
		cm   *corev1.ConfigMap
		want State
	}{
		{"absent is realtime", nil, Default()},
		{"step with counters", &corev1.ConfigMap{Data: map[string]string{
			KeyMode: "step", KeyDelay: "500ms", KeyReleased: "4", KeyTaken: "3", KeyLastStep: "scheduler: x", "waiting.scheduler.1": "scheduler: y",
		}}, State{Mode: Step, Delay: 500 * time.Millisecond, Released: 4, Taken: 3, LastStep: "scheduler: x", Waiting: map[string]string{"waiting.scheduler.1": "scheduler: y"}}},
		{"garbage reads as defaults", &corev1.ConfigMap{Data: map[string]string{KeyMode: "fast", KeyDelay: "-1s", KeyReleased: "x"}}, Default()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := FromConfigMap(tc.cm)
			if got.Mode != tc.want.Mode || got.Delay != tc.want.Delay || got.Released != tc.want.Released || got.Taken != tc.want.Taken ||
				got.LastStep != tc.want.LastStep || len(got.Waiting) != len(tc.want.Waiting) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	s := State{Mode: Slow, Delay: 3 * time.Second, Released: 2, Taken: 1}
	if got := FromConfigMap(NewConfigMap(s)); got.Mode != Slow || got.Delay != 3*time.Second || got.Released != 2 || got.Taken != 1 {
		t.Fatalf("round trip: got %+v", got)
	}
}

func TestParseMode(t *testing.T) {
	if _, _, errs := ParseMode("step", "1s"); len(errs) != 0 {
		t.Fatalf("step 1s: %v", errs)
	}
	_, _, errs := ParseMode("fast", "soon")
	if len(errs) != 2 || errs[0].Field != "data.mode" || errs[1].Field != "data.delay" {
		t.Fatalf("got %v", errs)
	}
}

func TestWriteAction(t *testing.T) {
	tests := []struct {
		method, path, want string
		ok                 bool
	}{
		{"POST", "/api/v1/namespaces/default/pods", "create pods in default", true},
		{"PUT", "/apis/apps/v1/namespaces/default/replicasets/web/status", "update replicasets default/web status", true},
		{"DELETE", "/api/v1/nodes/sim-1", "delete nodes sim-1", true},
		{"PATCH", "/api/v1/namespaces/kube-system/configmaps/glassplane-tempo", "", false},
		{"POST", "/api/v1/namespaces/default/events", "", false},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager", "", false},
		{"GET", "/api/v1/pods", "", false},
	}
	for _, tc := range tests {
		got, ok := WriteAction(tc.method, tc.path)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s %s: got %q %v, want %q %v", tc.method, tc.path, got, ok, tc.want, tc.ok)
		}
	}
}

func TestWaitingKeyIsAConfigMapKey(t *testing.T) {
	k := waitingKey("node/sim-1 <x>", 7, "start container a of pod default/p")
	if !strings.HasPrefix(k, WaitingKeyPrefix+"node-sim-1--x-.") {
		t.Fatalf("key %q", k)
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_') {
			t.Fatalf("key %q has %q", k, r)
		}
	}
}

// optimisticClient is a fake clientset whose ConfigMap updates compare and
// bump resourceVersion, as the API server's do.
func optimisticClient(t *testing.T, cm *corev1.ConfigMap) *fake.Clientset {
	t.Helper()
	cm.ResourceVersion = "1"
	client := fake.NewClientset(cm)
	var mu sync.Mutex
	client.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		next := a.(k8stesting.UpdateAction).GetObject().(*corev1.ConfigMap).DeepCopy()
		cur, err := client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("configmaps"), next.Namespace, next.Name)
		if err != nil {
			return true, nil, err
		}
		curRV := cur.(*corev1.ConfigMap).ResourceVersion
		if next.ResourceVersion != curRV {
			return true, nil, apierrors.NewConflict(corev1.Resource("configmaps"), next.Name, nil)
		}
		n, _ := strconv.Atoi(curRV)
		next.ResourceVersion = strconv.Itoa(n + 1)
		return true, next, client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("configmaps"), next, next.Namespace)
	})
	return client
}

// seed gives the gates the stored object, as their first read does.
func seed(t *testing.T, ctx context.Context, client *fake.Clientset, gates ...*Gate) {
	t.Helper()
	cm, err := client.CoreV1().ConfigMaps(Namespace).Get(ctx, Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gates {
		g.set(cm)
	}
}

// follow feeds the stored object to the gates, standing in for their watch.
func follow(ctx context.Context, client *fake.Clientset, gates ...*Gate) {
	for ctx.Err() == nil {
		if cm, err := client.CoreV1().ConfigMaps(Namespace).Get(ctx, Name, metav1.GetOptions{}); err == nil {
			for _, g := range gates {
				g.set(cm)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestOneStepReleasesOneAction(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := optimisticClient(t, NewConfigMap(State{Mode: Step, Delay: time.Second}))
	// Two components, as if in two processes, each with its own gate.
	sched, node := NewGate(client, "scheduler", nil), NewGate(client, "node/sim-1", nil)
	seed(t, ctx, client, sched, node)
	go follow(ctx, client, sched, node)

	done := make(chan string, 2)
	go func() { _ = sched.Wait(ctx, "schedule pod default/a"); done <- "scheduler" }()
	go func() { _ = node.Wait(ctx, "start container c of pod default/b"); done <- "node" }()

	waitFor(t, ctx, func(s State) bool { return len(s.Waiting) == 2 }, client)
	select {
	case who := <-done:
		t.Fatalf("%s acted before any step was released", who)
	case <-time.After(200 * time.Millisecond):
	}
	release(t, ctx, client)
	first := <-done
	waitFor(t, ctx, func(s State) bool { return s.Taken == 1 && len(s.Waiting) == 1 }, client)
	select {
	case who := <-done:
		t.Fatalf("one step let both %s and %s through", first, who)
	case <-time.After(200 * time.Millisecond):
	}
	release(t, ctx, client)
	second := <-done
	if first == second {
		t.Fatalf("the same component took both steps")
	}
	s := state(t, ctx, client)
	if s.Taken != 2 || len(s.Waiting) != 0 || !strings.Contains(s.LastStep, second) {
		t.Fatalf("after two steps: %+v", s)
	}
}

func TestLeavingStepModeReleasesWaiters(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := optimisticClient(t, NewConfigMap(State{Mode: Step}))
	g := NewGate(client, "scheduler", nil)
	seed(t, ctx, client, g)
	go follow(ctx, client, g)
	done := make(chan error, 1)
	go func() { done <- g.Wait(ctx, "schedule pod default/a") }()
	waitFor(t, ctx, func(s State) bool { return len(s.Waiting) == 1 }, client)
	setMode(t, ctx, client, Realtime)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, func(s State) bool { return len(s.Waiting) == 0 }, client)
}

func TestSlowModeWaitsTheDelay(t *testing.T) {
	ctx := context.Background()
	client := optimisticClient(t, NewConfigMap(State{Mode: Slow, Delay: 300 * time.Millisecond}))
	g := NewGate(client, "scheduler", nil)
	cm, _ := client.CoreV1().ConfigMaps(Namespace).Get(ctx, Name, metav1.GetOptions{})
	g.set(cm)
	start := time.Now()
	if err := g.Wait(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Fatalf("slow mode let the action through after %s", took)
	}
	if err := Wait(ctx, "no gate in context"); err != nil {
		t.Fatal(err)
	}
}

func state(t *testing.T, ctx context.Context, client *fake.Clientset) State {
	t.Helper()
	cm, err := client.CoreV1().ConfigMaps(Namespace).Get(ctx, Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return FromConfigMap(cm)
}

func waitFor(t *testing.T, ctx context.Context, ok func(State) bool, client *fake.Clientset) {
	t.Helper()
	for !ok(state(t, ctx, client)) {
		if ctx.Err() != nil {
			t.Fatalf("gave up waiting; state %+v", state(t, ctx, client))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func modify(t *testing.T, ctx context.Context, client *fake.Clientset, f func(*State)) {
	t.Helper()
	for {
		cm, err := client.CoreV1().ConfigMaps(Namespace).Get(ctx, Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s := FromConfigMap(cm)
		f(&s)
		s.Write(cm)
		_, err = client.CoreV1().ConfigMaps(Namespace).Update(ctx, cm, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		return
	}
}

func release(t *testing.T, ctx context.Context, client *fake.Clientset) {
	modify(t, ctx, client, func(s *State) { s.Released++ })
}

func setMode(t *testing.T, ctx context.Context, client *fake.Clientset, m Mode) {
	modify(t, ctx, client, func(s *State) { s.Mode = m })
}
