package scheduler

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/glassplane/glassplane/controlplane/scheduler/explain"
)

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

func testNode(name, cpu string, taints ...v1.Taint) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1.NodeSpec{Taints: taints},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU:    resource.MustParse(cpu),
			v1.ResourceMemory: resource.MustParse("4Gi"),
			v1.ResourcePods:   resource.MustParse("110"),
		}},
	}
}

func testPod(name, cpu string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name: "app", Image: "busybox",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}},
		}}},
		Status: v1.PodStatus{Phase: v1.PodPending},
	}
}

// withHostPort adds a TCP hostPort to the pod's first container.
func withHostPort(p *v1.Pod, port int32) *v1.Pod {
	p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, v1.ContainerPort{ContainerPort: port, HostPort: port, Protocol: v1.ProtocolTCP})
	return p
}

// bindings records the Bindings the fake API server accepted.
type bindings struct {
	mu   sync.Mutex
	list []*v1.Binding
}

func (b *bindings) get() []*v1.Binding {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*v1.Binding(nil), b.list...)
}

// newFakeClient returns a fake clientset whose pods/binding behaves like the
// API server's: it sets spec.nodeName and copies the Binding's annotations
// (the scheduler sends none).
func newFakeClient(t *testing.T, objects ...runtime.Object) (*fake.Clientset, *bindings) {
	t.Helper()
	client := fake.NewClientset(objects...)
	recorded := &bindings{}
	client.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		ca, ok := action.(clienttesting.CreateAction)
		if !ok || ca.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b := ca.GetObject().(*v1.Binding)
		obj, err := client.Tracker().Get(podsGVR, b.Namespace, b.Name)
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*v1.Pod).DeepCopy()
		if pod.Spec.NodeName != "" {
			return true, nil, errors.New("pod already assigned")
		}
		pod.Spec.NodeName = b.Target.Name
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		for k, v := range b.Annotations {
			pod.Annotations[k] = v
		}
		if err := client.Tracker().Update(podsGVR, pod, b.Namespace); err != nil {
			return true, nil, err
		}
		recorded.mu.Lock()
		recorded.list = append(recorded.list, b.DeepCopy())
		recorded.mu.Unlock()
		return true, b, nil
	})
	return client, recorded
}

// startScheduler runs a scheduler, keeping its decision records in an
// in-memory API, until the test ends.
func startScheduler(t *testing.T, client *fake.Clientset) *Scheduler {
	t.Helper()
	return startSchedulerWith(t, client, newFakeDecisions())
}

// startSchedulerWith runs a scheduler keeping its decision records in
// decisions until the test ends.
func startSchedulerWith(t *testing.T, client *fake.Clientset, decisions *fakeDecisions) *Scheduler {
	t.Helper()
	s, err := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, client)
	if err != nil {
		t.Fatal(err)
	}
	s.decisions.api = decisions
	runScheduler(t, s)
	return s
}

// runScheduler runs s until the test ends and waits for it to be ready.
func runScheduler(t *testing.T, s *Scheduler) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case <-s.Ready():
	case err := <-done:
		t.Fatalf("Run ended before ready: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("scheduler not ready after 30s")
	}
}

// eventually polls cond until it holds or a generous deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func findEvent(client *fake.Clientset, reason string) *v1.Event {
	for _, a := range client.Actions() {
		ca, ok := a.(clienttesting.CreateAction)
		if !ok || a.GetResource().Resource != "events" {
			continue
		}
		if ev, ok := ca.GetObject().(*v1.Event); ok && ev.Reason == reason {
			return ev
		}
	}
	return nil
}

func TestSchedulesOntoTheOnlyFittingNode(t *testing.T) {
	client, recorded := newFakeClient(t,
		testNode("node-1", "2"),
		testNode("node-2", "500m"),
		testNode("node-3", "4", v1.Taint{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoSchedule}),
		testPod("mypod", "1"),
	)
	s := startScheduler(t, client)

	eventually(t, "a binding", func() bool { return len(recorded.get()) > 0 })
	b := recorded.get()[0]
	if b.Name != "mypod" || b.Namespace != "default" || b.UID != "uid-mypod" {
		t.Errorf("binding for %s/%s uid %s, want default/mypod uid-mypod", b.Namespace, b.Name, b.UID)
	}
	if b.Target.Kind != "Node" || b.Target.Name != "node-1" {
		t.Errorf("binding target %+v, want Node node-1", b.Target)
	}

	if len(b.Annotations) != 0 {
		t.Errorf("binding annotations %v, want none: the decision goes to its record", b.Annotations)
	}
	var d explain.Decision
	eventually(t, "the decision record", func() bool {
		_, h := recordOf(t, s, "mypod")
		if len(h.Attempts) != 1 {
			return false
		}
		d = h.Attempts[0]
		return true
	})
	if d.Node != "node-1" || d.Pod != "default/mypod" || d.Attempt != 1 || d.Nodes != 3 || d.Feasible != 1 {
		t.Errorf("decision = %+v", d)
	}
	wantFilter := map[string]explain.NodeFilter{
		"node-1": {Node: "node-1", Passed: true},
		"node-2": {Node: "node-2", Plugin: "NodeResourcesFit", Reason: "Insufficient cpu"},
		"node-3": {Node: "node-3", Plugin: "TaintToleration", Reason: "node(s) had untolerated taint(s)"},
	}
	if len(d.Filter) != len(wantFilter) {
		t.Errorf("filter entries = %+v", d.Filter)
	}
	for _, f := range d.Filter {
		if f != wantFilter[f.Node] {
			t.Errorf("filter entry %+v, want %+v", f, wantFilter[f.Node])
		}
	}

	eventually(t, "the Scheduled event", func() bool { return findEvent(client, ReasonScheduled) != nil })
	ev := findEvent(client, ReasonScheduled)
	if ev.Message != "Successfully assigned default/mypod to node-1" || ev.Type != v1.EventTypeNormal ||
		ev.Source.Component != "default-scheduler" || ev.InvolvedObject.Name != "mypod" || ev.InvolvedObject.Kind != "Pod" {
		t.Errorf("Scheduled event = %+v", ev)
	}

	eventually(t, "the pod bound in the API", func() bool {
		p, err := client.CoreV1().Pods("default").Get(context.Background(), "mypod", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName == "node-1"
	})
	if ds := s.Decisions("default", "mypod"); len(ds) != 1 || ds[0].Message != "Successfully assigned default/mypod to node-1" {
		t.Errorf("Decisions = %+v", ds)
	}
}

func TestFailedSchedulingMessage(t *testing.T) {
	tests := []struct {
		name  string
		nodes []runtime.Object
		pod   *v1.Pod
		want  string
	}{
		{
			name:  "untolerated taint",
			nodes: []runtime.Object{testNode("node-1", "2", v1.Taint{Key: "dedicated", Effect: v1.TaintEffectNoSchedule})},
			pod:   testPod("mypod", "100m"),
			want:  "0/1 nodes are available: 1 node(s) had untolerated taint(s). preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
		},
		{
			name:  "insufficient cpu everywhere",
			nodes: []runtime.Object{testNode("node-1", "1"), testNode("node-2", "1"), testNode("node-3", "1")},
			pod:   testPod("mypod", "2"),
			want:  "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
		},
		{
			name: "mixed reasons",
			nodes: []runtime.Object{
				testNode("node-1", "1"),
				testNode("node-2", "1", v1.Taint{Key: "a", Effect: v1.TaintEffectNoExecute}),
				func() *v1.Node { n := testNode("node-3", "8"); n.Spec.Unschedulable = true; return n }(),
			},
			pod:  testPod("mypod", "2"),
			want: "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
		},
		{
			name: "no room left and no lower-priority pod to evict",
			nodes: []runtime.Object{testNode("node-1", "2"), func() *v1.Pod {
				p := testPod("busy", "1500m")
				p.Spec.NodeName = "node-1"
				p.Status.Phase = v1.PodRunning
				return p
			}()},
			pod:  testPod("mypod", "1"),
			want: "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
		},
		{
			name:  "nodeSelector matches no node",
			nodes: []runtime.Object{testNode("node-1", "2"), testNode("node-2", "2"), testNode("node-3", "2")},
			pod: func() *v1.Pod {
				p := testPod("mypod", "100m")
				p.Spec.NodeSelector = map[string]string{"disktype": "ssd"}
				return p
			}(),
			want: "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
		},
		{
			name: "host port taken on the only node the affinity allows",
			nodes: []runtime.Object{
				testNode("node-1", "2"), testNode("node-2", "2"), testNode("node-3", "2"),
				func() *v1.Pod {
					p := withHostPort(testPod("web", "100m"), 80)
					p.Spec.NodeName = "node-1"
					p.Status.Phase = v1.PodRunning
					return p
				}(),
			},
			pod: func() *v1.Pod {
				p := withHostPort(testPod("mypod", "100m"), 80)
				p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
					NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"node-1"}}}}},
				}}}
				return p
			}(),
			want: "0/3 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.",
		},
		{
			name:  "no nodes",
			nodes: nil,
			pod:   testPod("mypod", "1"),
			want:  "no nodes available to schedule pods",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, recorded := newFakeClient(t, append(tt.nodes, tt.pod)...)
			s := startScheduler(t, client)

			eventually(t, "the FailedScheduling event", func() bool { return findEvent(client, ReasonFailedScheduling) != nil })
			ev := findEvent(client, ReasonFailedScheduling)
			if ev.Message != tt.want {
				t.Errorf("message\n got %q\nwant %q", ev.Message, tt.want)
			}
			if ev.Type != v1.EventTypeWarning || ev.Source.Component != "default-scheduler" {
				t.Errorf("event type %q from %q, want Warning from default-scheduler", ev.Type, ev.Source.Component)
			}

			eventually(t, "the PodScheduled condition", func() bool {
				p, err := client.CoreV1().Pods("default").Get(context.Background(), "mypod", metav1.GetOptions{})
				if err != nil {
					return false
				}
				for _, c := range p.Status.Conditions {
					if c.Type == v1.PodScheduled {
						return c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable && c.Message == tt.want
					}
				}
				return false
			})
			if ds := s.Decisions("default", "mypod"); len(ds) == 0 || ds[0].Node != "" || ds[0].Message != tt.want {
				t.Errorf("Decisions = %+v", ds)
			}
			if n := len(recorded.get()); n != 0 {
				t.Errorf("%d bindings for an unschedulable pod", n)
			}
		})
	}
}

func TestRetriesWhenANodeIsAdded(t *testing.T) {
	client, recorded := newFakeClient(t, testNode("small", "500m"), testPod("mypod", "1"))
	startScheduler(t, client)
	eventually(t, "the FailedScheduling event", func() bool { return findEvent(client, ReasonFailedScheduling) != nil })
	eventually(t, "the node watch", func() bool {
		for _, a := range client.Actions() {
			if a.GetVerb() == "watch" && a.GetResource().Resource == "nodes" {
				return true
			}
		}
		return false
	})

	if _, err := client.CoreV1().Nodes().Create(context.Background(), testNode("big", "4"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a binding to the new node", func() bool {
		bs := recorded.get()
		return len(bs) == 1 && bs[0].Target.Name == "big"
	})
}

func TestIgnoresPodsForOtherSchedulers(t *testing.T) {
	other := testPod("other", "100m")
	other.Spec.SchedulerName = "my-scheduler"
	mine := testPod("mine", "100m")
	client, recorded := newFakeClient(t, testNode("node-1", "2"), other, mine)
	startScheduler(t, client)

	eventually(t, "the binding of the default-scheduler pod", func() bool { return len(recorded.get()) == 1 })
	if b := recorded.get()[0]; b.Name != "mine" {
		t.Fatalf("bound %s, want mine", b.Name)
	}
	p, err := client.CoreV1().Pods("default").Get(context.Background(), "other", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.NodeName != "" {
		t.Errorf("pod for my-scheduler was bound to %s", p.Spec.NodeName)
	}
}

func TestScoresPreferTheEmptierNode(t *testing.T) {
	busy := testPod("busy", "3")
	busy.Spec.NodeName = "node-a"
	busy.Status.Phase = v1.PodRunning
	client, recorded := newFakeClient(t, testNode("node-a", "4"), testNode("node-b", "4"), busy, testPod("mypod", "500m"))
	s := startScheduler(t, client)

	eventually(t, "a binding", func() bool { return len(recorded.get()) == 1 })
	if b := recorded.get()[0]; b.Target.Name != "node-b" {
		t.Fatalf("bound to %s, want the emptier node-b", b.Target.Name)
	}
	ds := s.Decisions("default", "mypod")
	if len(ds) != 1 || len(ds[0].Scores) != 2 {
		t.Fatalf("decisions = %+v", ds)
	}
	best := ds[0].Scores[0]
	if best.Node != "node-b" || best.Total != ds[0].Scores[0].Total || best.Total <= ds[0].Scores[1].Total {
		t.Errorf("scores = %+v, want node-b first and strictly best", ds[0].Scores)
	}
	plugins := map[string]explain.PluginScore{}
	for _, p := range best.Plugins {
		plugins[p.Plugin] = p
	}
	// node-b: cpu (4000-500)*100/4000 = 87, memory (4Gi-200Mi)*100/4Gi = 95 → 91.
	if got := plugins["NodeResourcesFit"]; got.Raw != 91 || got.Weight != 1 || got.Weighted != 91 {
		t.Errorf("NodeResourcesFit on node-b = %+v, want raw 91 weight 1", got)
	}
	if got := plugins["TaintToleration"]; got.Normalized != 100 || got.Weight != 3 || got.Weighted != 300 {
		t.Errorf("TaintToleration on node-b = %+v, want 100 x 3", got)
	}
	// NodeResourcesBalancedAllocation: cpu 500/4000 = 0.125, memory 0 →
	// (1 - 0.0625) * 100 = 93. Total 91 + 300 + 93 (the other plugins give 0).
	if got := plugins["NodeResourcesBalancedAllocation"]; got.Raw != 93 || got.Weighted != 93 {
		t.Errorf("NodeResourcesBalancedAllocation on node-b = %+v, want 93", got)
	}
	if best.Total != 484 {
		t.Errorf("node-b total = %d, want 484", best.Total)
	}
}

func TestScoresPreferredNodeAffinity(t *testing.T) {
	a, b := testNode("node-a", "4"), testNode("node-b", "4")
	b.Labels = map[string]string{"zone": "east"}
	pod := testPod("mypod", "500m")
	pod.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{
		Weight:     10,
		Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"east"}}}},
	}}}}
	client, recorded := newFakeClient(t, a, b, pod)
	s := startScheduler(t, client)

	eventually(t, "a binding", func() bool { return len(recorded.get()) == 1 })
	if got := recorded.get()[0].Target.Name; got != "node-b" {
		t.Fatalf("bound to %s, want node-b with the preferred label", got)
	}
	ds := s.Decisions("default", "mypod")
	if len(ds) != 1 || len(ds[0].Scores) != 2 || ds[0].Scores[0].Node != "node-b" {
		t.Fatalf("decisions = %+v", ds)
	}
	plugins := map[string]explain.PluginScore{}
	for _, p := range ds[0].Scores[0].Plugins {
		plugins[p.Plugin] = p
	}
	if got := plugins["NodeAffinity"]; got.Raw != 10 || got.Normalized != 100 || got.Weight != 2 || got.Weighted != 200 {
		t.Errorf("NodeAffinity on node-b = %+v, want raw 10, normalized 100, weight 2", got)
	}
}
