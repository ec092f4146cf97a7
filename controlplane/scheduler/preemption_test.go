package scheduler

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/glassplane/glassplane/controlplane/scheduler/explain"
	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
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
	// Each victim was marked DisruptionTarget (PreemptionByScheduler) by a
	// patch of its status before its deletion.
	marked := map[string]bool{}
	for _, a := range client.Actions() {
		if pa, ok := a.(clienttesting.PatchAction); ok && pa.GetSubresource() == "status" && pa.GetPatchType() == types.StrategicMergePatchType &&
			strings.Contains(string(pa.GetPatch()), `"type":"DisruptionTarget"`) && strings.Contains(string(pa.GetPatch()), `"reason":"PreemptionByScheduler"`) {
			marked[pa.GetName()] = true
		}
	}
	if !marked["b1"] || !marked["b2"] || marked["a1"] {
		t.Errorf("victims marked DisruptionTarget: %v, want b1 and b2", marked)
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

func withLabels(p *v1.Pod, lbls map[string]string) *v1.Pod {
	p.Labels = lbls
	return p
}

// testPDB is a PodDisruptionBudget in namespace default selecting app=app
// with allowed disruptions left.
func testPDB(name, app string, allowed int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
}

// addPDBs puts pdbs in the PodDisruptionBudget cache of a scheduler that is
// not running.
func addPDBs(t *testing.T, s *Scheduler, pdbs ...*policyv1.PodDisruptionBudget) {
	t.Helper()
	indexer := s.pdbInformers.Policy().V1().PodDisruptionBudgets().Informer().GetIndexer()
	for _, pdb := range pdbs {
		if err := indexer.Add(pdb); err != nil {
			t.Fatal(err)
		}
	}
}

// failedCycle is a scheduling cycle of a pod that fit nowhere, ready for
// preemption.
type failedCycle struct {
	s      *Scheduler
	prof   *profile
	state  *framework.CycleState
	pod    *v1.Pod
	fitErr *framework.FitError
}

// scheduleAndFail builds a scheduler that is not running, whose cache holds
// nodes and the bound pods and whose PodDisruptionBudget cache holds pdbs,
// and runs one cycle for pod, which must not fit.
func scheduleAndFail(t *testing.T, nodes []*v1.Node, bound []*v1.Pod, pdbs []*policyv1.PodDisruptionBudget, pod *v1.Pod) failedCycle {
	t.Helper()
	s, err := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, fake.NewClientset())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		s.cache.AddNode(n)
	}
	for _, p := range bound {
		if err := s.cache.AddPod(p); err != nil {
			t.Fatal(err)
		}
	}
	addPDBs(t, s, pdbs...)
	s.cache.UpdateSnapshot(s.snapshot)
	prof := s.profileFor(pod)
	state := framework.NewCycleState()
	_, err = s.schedulePod(context.Background(), prof.fwk, state, pod, &explain.Decision{})
	var fitErr *framework.FitError
	if !errors.As(err, &fitErr) {
		t.Fatalf("schedulePod: %v, want a FitError", err)
	}
	return failedCycle{s: s, prof: prof, state: state, pod: pod, fitErr: fitErr}
}

func podNames(pods []*v1.Pod) []string {
	names := make([]string, 0, len(pods))
	for _, p := range pods {
		names = append(names, p.Name)
	}
	return names
}

func TestSelectVictimsOnNodeWithPDBs(t *testing.T) {
	// Each case has node-a of 1 cpu full of lower-priority pods.
	disrupted := testPDB("db", "db", 1)
	disrupted.Status.DisruptedPods = map[string]metav1.Time{"db1": metav1.Now()}
	tests := []struct {
		name          string
		bound         []*v1.Pod
		pdbs          []*policyv1.PodDisruptionBudget
		podCPU        string
		wantVictims   []string
		wantViolating int
	}{
		{
			// Reprieving the more important pod first keeps "high" and
			// evicts "protected".
			name: "without budgets the less important pod goes",
			bound: []*v1.Pod{
				withLabels(boundTo(withPriority(testPod("protected", "500m"), 1), "node-a"), map[string]string{"app": "db"}),
				withLabels(boundTo(withPriority(testPod("high", "500m"), 5), "node-a"), map[string]string{"app": "web"}),
			},
			podCPU:      "500m",
			wantVictims: []string{"protected"},
		},
		{
			// Violating pods are reprieved before the others whatever
			// their priority.
			name: "a pod whose budget allows no disruption is reprieved first",
			bound: []*v1.Pod{
				withLabels(boundTo(withPriority(testPod("protected", "500m"), 1), "node-a"), map[string]string{"app": "db"}),
				withLabels(boundTo(withPriority(testPod("high", "500m"), 5), "node-a"), map[string]string{"app": "web"}),
			},
			pdbs:        []*policyv1.PodDisruptionBudget{testPDB("db", "db", 0)},
			podCPU:      "500m",
			wantVictims: []string{"high"},
		},
		{
			name: "a budget of one for two pods that must both go counts one violation",
			bound: []*v1.Pod{
				withLabels(boundTo(withPriority(testPod("db1", "500m"), 1), "node-a"), map[string]string{"app": "db"}),
				withLabels(boundTo(withPriority(testPod("db2", "500m"), 2), "node-a"), map[string]string{"app": "db"}),
			},
			pdbs:          []*policyv1.PodDisruptionBudget{testPDB("db", "db", 1)},
			podCPU:        "1",
			wantVictims:   []string{"db2", "db1"},
			wantViolating: 1,
		},
		{
			// db1 is already among the budget's disrupted pods: only db2
			// uses up the one allowed disruption.
			name: "a pod the budget already counts as disrupted is not a violation",
			bound: []*v1.Pod{
				withLabels(boundTo(withPriority(testPod("db1", "500m"), 1), "node-a"), map[string]string{"app": "db"}),
				withLabels(boundTo(withPriority(testPod("db2", "500m"), 2), "node-a"), map[string]string{"app": "db"}),
			},
			pdbs:        []*policyv1.PodDisruptionBudget{disrupted},
			podCPU:      "1",
			wantVictims: []string{"db2", "db1"},
		},
		{
			// The violating victim is listed by priority with the others.
			name: "victims of both kinds are ordered by priority",
			bound: []*v1.Pod{
				withLabels(boundTo(withPriority(testPod("protected", "500m"), 1), "node-a"), map[string]string{"app": "db"}),
				withLabels(boundTo(withPriority(testPod("high", "500m"), 5), "node-a"), map[string]string{"app": "web"}),
			},
			pdbs:          []*policyv1.PodDisruptionBudget{testPDB("db", "db", 0)},
			podCPU:        "1",
			wantVictims:   []string{"high", "protected"},
			wantViolating: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := withPriority(testPod("p", tt.podCPU), 100)
			c := scheduleAndFail(t, []*v1.Node{testNode("node-a", "1")}, tt.bound, tt.pdbs, pod)
			victims, violating, st := c.s.selectVictimsOnNode(context.Background(), c.prof.fwk, c.state, pod, 100, "node-a", tt.pdbs)
			if !st.IsSuccess() {
				t.Fatalf("status %v", st)
			}
			if got := podNames(victims); !slices.Equal(got, tt.wantVictims) {
				t.Errorf("victims %v, want %v", got, tt.wantVictims)
			}
			if violating != tt.wantViolating {
				t.Errorf("%d violating victims, want %d", violating, tt.wantViolating)
			}
		})
	}
}

func TestFilterPodsWithPDBViolation(t *testing.T) {
	labelled := func(name, ns string, lbls map[string]string) *v1.Pod {
		p := withLabels(testPod(name, "100m"), lbls)
		p.Namespace = ns
		return p
	}
	emptySelector := testPDB("empty", "db", 0)
	emptySelector.Spec.Selector = &metav1.LabelSelector{}
	nilSelector := testPDB("nil", "db", 0)
	nilSelector.Spec.Selector = nil
	invalidSelector := testPDB("invalid", "db", 0)
	invalidSelector.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}
	tests := []struct {
		name          string
		pods          []*v1.Pod
		pdbs          []*policyv1.PodDisruptionBudget
		wantViolating []string
	}{
		{
			name:          "a matching budget with no disruptions left",
			pods:          []*v1.Pod{labelled("a", "default", map[string]string{"app": "db"})},
			pdbs:          []*policyv1.PodDisruptionBudget{testPDB("db", "db", 0)},
			wantViolating: []string{"a"},
		},
		{
			name: "a budget in another namespace",
			pods: []*v1.Pod{labelled("a", "other", map[string]string{"app": "db"})},
			pdbs: []*policyv1.PodDisruptionBudget{testPDB("db", "db", 0)},
		},
		{
			name: "a pod without labels",
			pods: []*v1.Pod{labelled("a", "default", nil)},
			pdbs: []*policyv1.PodDisruptionBudget{testPDB("db", "db", 0)},
		},
		{
			name: "empty, nil and invalid selectors match nothing",
			pods: []*v1.Pod{labelled("a", "default", map[string]string{"app": "db"})},
			pdbs: []*policyv1.PodDisruptionBudget{emptySelector, nilSelector, invalidSelector},
		},
		{
			// The budget is used up in the pods' order, so the later
			// pods violate it.
			name: "disruptions are used up in order",
			pods: []*v1.Pod{
				labelled("a", "default", map[string]string{"app": "db"}),
				labelled("b", "default", map[string]string{"app": "db"}),
				labelled("c", "default", map[string]string{"app": "db"}),
			},
			pdbs:          []*policyv1.PodDisruptionBudget{testPDB("db", "db", 1)},
			wantViolating: []string{"b", "c"},
		},
		{
			// a's other budget allows it, but one violated budget is enough.
			name:          "a pod violating one of two budgets",
			pods:          []*v1.Pod{labelled("a", "default", map[string]string{"app": "db"})},
			pdbs:          []*policyv1.PodDisruptionBudget{testPDB("db", "db", 0), testPDB("loose", "db", 3)},
			wantViolating: []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			violating, nonViolating := filterPodsWithPDBViolation(tt.pods, tt.pdbs)
			if got := podNames(violating); !slices.Equal(got, tt.wantViolating) {
				t.Errorf("violating %v, want %v", got, tt.wantViolating)
			}
			if len(violating)+len(nonViolating) != len(tt.pods) {
				t.Errorf("%d violating + %d not, want %d pods", len(violating), len(nonViolating), len(tt.pods))
			}
		})
	}
}

func TestPreemptionWhenEveryCandidateViolatesAPDB(t *testing.T) {
	// node-a's two priority-1 pods and node-b's priority-5 pod are all
	// covered by budgets allowing no disruption. On priorities alone
	// node-a would win; node-b violates once, node-a twice.
	bound := []*v1.Pod{
		withLabels(boundTo(withPriority(testPod("a1", "500m"), 1), "node-a"), map[string]string{"app": "a"}),
		withLabels(boundTo(withPriority(testPod("a2", "500m"), 1), "node-a"), map[string]string{"app": "a"}),
		withLabels(boundTo(withPriority(testPod("b1", "1"), 5), "node-b"), map[string]string{"app": "b"}),
	}
	pdbs := []*policyv1.PodDisruptionBudget{testPDB("a", "a", 0), testPDB("b", "b", 0)}
	pod := withPriority(testPod("p", "1"), 100)
	c := scheduleAndFail(t, []*v1.Node{testNode("node-a", "1"), testNode("node-b", "1")}, bound, pdbs, pod)
	r := c.s.preempt(context.Background(), c.prof, c.state, pod, c.fitErr)
	if r.message != "" || r.nominatedNode != "node-b" || !slices.Equal(podNames(r.victims), []string{"b1"}) || r.pdbViolations != 1 {
		t.Errorf("preempted on %q victims %v with %d violations (message %q), want node-b, [b1], 1", r.nominatedNode, podNames(r.victims), r.pdbViolations, r.message)
	}
	var d explain.Decision
	explainPreemption(&d, r)
	if d.PDBViolations != 1 {
		t.Errorf("decision counts %d PDB violations, want 1", d.PDBViolations)
	}
}

func TestPickOneNodeForPreemptionPrefersFewerPDBViolations(t *testing.T) {
	low := boundTo(withPriority(testPod("low", "1"), 1), "a")
	high := boundTo(withPriority(testPod("high", "1"), 50), "b")
	cs := []candidate{
		{node: "a", victims: []*v1.Pod{low}, numPDBViolations: 1},
		{node: "b", victims: []*v1.Pod{high, high}, numPDBViolations: 0},
	}
	if got := pickOneNodeForPreemption(cs).node; got != "b" {
		t.Errorf("picked %q, want b (no violations)", got)
	}
	cs[1].numPDBViolations = 1
	if got := pickOneNodeForPreemption(cs).node; got != "a" {
		t.Errorf("picked %q, want a (as many violations, lower victim priority)", got)
	}
}

func TestPreemptionAvoidsPDBViolations(t *testing.T) {
	// node-a holds a priority-5 pod, node-b a priority-10 one, 600m each;
	// a priority-100 pod of 800m must evict one. On priority node-a
	// wins, unless a budget allowing no disruption covers its pod.
	tests := []struct {
		name        string
		pdb         *policyv1.PodDisruptionBudget
		wantNode    string
		wantVictim  string
		wantSurvive string
	}{
		{name: "no budget", wantNode: "node-a", wantVictim: "a1", wantSurvive: "b1"},
		{name: "a1 protected", pdb: testPDB("a", "a", 0), wantNode: "node-b", wantVictim: "b1", wantSurvive: "a1"},
		{name: "a1's budget allows a disruption", pdb: testPDB("a", "a", 1), wantNode: "node-a", wantVictim: "a1", wantSurvive: "b1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objects := []runtime.Object{
				testNode("node-a", "1"), testNode("node-b", "1"),
				withLabels(boundTo(withPriority(testPod("a1", "600m"), 5), "node-a"), map[string]string{"app": "a"}),
				withLabels(boundTo(withPriority(testPod("b1", "600m"), 10), "node-b"), map[string]string{"app": "b"}),
				withPriority(testPod("high", "800m"), 100),
			}
			if tt.pdb != nil {
				objects = append(objects, tt.pdb)
			}
			client, _ := newFakeClient(t, objects...)
			s := startScheduler(t, client)
			eventually(t, "the pod nominated", func() bool {
				p, err := client.CoreV1().Pods("default").Get(context.Background(), "high", metav1.GetOptions{})
				return err == nil && p.Status.NominatedNodeName != ""
			})
			p, _ := client.CoreV1().Pods("default").Get(context.Background(), "high", metav1.GetOptions{})
			if p.Status.NominatedNodeName != tt.wantNode {
				t.Fatalf("nominated %q, want %q", p.Status.NominatedNodeName, tt.wantNode)
			}
			eventually(t, tt.wantVictim+" deleted", func() bool {
				_, err := client.CoreV1().Pods("default").Get(context.Background(), tt.wantVictim, metav1.GetOptions{})
				return apierrors.IsNotFound(err)
			})
			if _, err := client.CoreV1().Pods("default").Get(context.Background(), tt.wantSurvive, metav1.GetOptions{}); err != nil {
				t.Errorf("%s was evicted: %v", tt.wantSurvive, err)
			}
			var ds []explain.Decision
			eventually(t, "the preempting attempt recorded", func() bool {
				ds = s.Decisions("default", "high")
				return len(ds) > 0
			})
			if ds[0].NominatedNode != tt.wantNode || ds[0].PDBViolations != 0 {
				t.Errorf("decision nominates %q with %d PDB violations, want %q with 0", ds[0].NominatedNode, ds[0].PDBViolations, tt.wantNode)
			}
		})
	}
}

func TestPreemptionWithoutPDBsServed(t *testing.T) {
	// An API that does not serve policy/v1 PodDisruptionBudgets, or
	// forbids listing them, must neither keep the scheduler from starting
	// nor stop preemption.
	pdbsGR := schema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"}
	tests := []struct {
		name string
		err  error
	}{
		{name: "not found", err: apierrors.NewNotFound(pdbsGR, "")},
		{name: "forbidden", err: apierrors.NewForbidden(pdbsGR, "", errors.New("no RBAC rule"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, _ := newFakeClient(t,
				testNode("node-a", "1"),
				boundTo(withPriority(testPod("low", "600m"), 1), "node-a"),
				withPriority(testPod("high", "800m"), 100),
			)
			var lists atomic.Int32
			client.PrependReactor("list", "poddisruptionbudgets", func(clienttesting.Action) (bool, runtime.Object, error) {
				lists.Add(1)
				return true, nil, tt.err
			})
			s := startScheduler(t, client)
			select {
			case <-s.pdbUnavailable:
			default:
				t.Error("the budgets were not marked unavailable")
			}
			if lists.Load() == 0 {
				t.Error("the scheduler never listed PodDisruptionBudgets")
			}
			eventually(t, "low deleted", func() bool {
				_, err := client.CoreV1().Pods("default").Get(context.Background(), "low", metav1.GetOptions{})
				return apierrors.IsNotFound(err)
			})
			eventually(t, "high nominated to node-a", func() bool {
				p, err := client.CoreV1().Pods("default").Get(context.Background(), "high", metav1.GetOptions{})
				return err == nil && p.Status.NominatedNodeName == "node-a"
			})
		})
	}
}
