package daemonset

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sort"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllertest"
	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllerutil"
)

func newDS(opts ...func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default", UID: "ds-uid", Generation: 1},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec:       v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
			},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type:          appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptrTo(intstr.FromInt32(1))},
			},
		},
	}
	for _, o := range opts {
		o(ds)
	}
	return ds
}

func ptrTo[T any](v T) *T { return &v }

func newNode(name string, taints ...v1.Taint) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}, Spec: v1.NodeSpec{Taints: taints}}
}

func currentHash(ds *appsv1.DaemonSet) string {
	return controllerutil.ComputeHash(&ds.Spec.Template, ds.Status.CollisionCount)
}

// daemonPod is a running, ready pod of ds on node with the given revision
// hash, created age ago.
func daemonPod(ds *appsv1.DaemonSet, name, node, hash string, age time.Duration) *v1.Pod {
	p := newDaemonPod(ds, hash, node)
	p.Name, p.UID = name, types.UID("uid-"+name)
	p.Spec.NodeName = node
	p.CreationTimestamp = metav1.NewTime(time.Now().Add(-age))
	p.Status.Phase = v1.PodRunning
	p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour))}}
	return p
}

type fixture struct {
	client   *fake.Clientset
	recorder *controllertest.Recorder
	c        *Controller
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	client := controllertest.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	rec := &controllertest.Recorder{}
	c, err := New(slog.New(slog.NewTextHandler(io.Discard, nil)), client, rec, f.Apps().V1().DaemonSets(), f.Apps().V1().ControllerRevisions(),
		f.Core().V1().Pods(), f.Core().V1().Nodes())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.DaemonSet:
			f.Apps().V1().DaemonSets().Informer().GetIndexer().Add(o)
		case *v1.Pod:
			f.Core().V1().Pods().Informer().GetIndexer().Add(o)
		case *v1.Node:
			f.Core().V1().Nodes().Informer().GetIndexer().Add(o)
		case *appsv1.ControllerRevision:
			f.Apps().V1().ControllerRevisions().Informer().GetIndexer().Add(o)
		}
	}
	client.ClearActions()
	return &fixture{client: client, recorder: rec, c: c}
}

func (f *fixture) sync(t *testing.T) *appsv1.DaemonSet {
	t.Helper()
	if err := f.c.sync(context.Background(), "default/agent"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	ds, err := f.client.AppsV1().DaemonSets("default").Get(context.Background(), "agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func createdFor(actions []clienttesting.Action) []string {
	var nodes []string
	for _, a := range actions {
		if c, ok := a.(clienttesting.CreateAction); ok && a.GetResource().Resource == "pods" {
			nodes = append(nodes, targetNodeName(c.GetObject().(*v1.Pod)))
		}
	}
	sort.Strings(nodes)
	return nodes
}

func deleted(actions []clienttesting.Action) []string {
	var out []string
	for _, a := range actions {
		if d, ok := a.(clienttesting.DeleteAction); ok && a.GetResource().Resource == "pods" {
			out = append(out, d.GetName())
		}
	}
	sort.Strings(out)
	return out
}

func TestNodeShouldRunDaemonPod(t *testing.T) {
	taint := func(key string, effect v1.TaintEffect) v1.Taint {
		return v1.Taint{Key: key, Value: "x", Effect: effect}
	}
	tests := []struct {
		name                 string
		node                 *v1.Node
		ds                   *appsv1.DaemonSet
		run, continueRunning bool
	}{
		{name: "plain node", node: newNode("n"), ds: newDS(), run: true, continueRunning: true},
		{name: "untolerated NoSchedule keeps a pod there", node: newNode("n", taint("dedicated", v1.TaintEffectNoSchedule)), ds: newDS(), continueRunning: true},
		{name: "untolerated NoExecute", node: newNode("n", taint("dedicated", v1.TaintEffectNoExecute)), ds: newDS()},
		{name: "PreferNoSchedule does not count", node: newNode("n", taint("dedicated", v1.TaintEffectPreferNoSchedule)), ds: newDS(), run: true, continueRunning: true},
		{name: "tolerated taint", node: newNode("n", taint("dedicated", v1.TaintEffectNoSchedule)), ds: newDS(func(ds *appsv1.DaemonSet) {
			ds.Spec.Template.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpExists}}
		}), run: true, continueRunning: true},
		{name: "daemon tolerations: not ready", node: newNode("n", v1.Taint{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoExecute}), ds: newDS(), run: true, continueRunning: true},
		{name: "daemon tolerations: unreachable", node: newNode("n", v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute}), ds: newDS(), run: true, continueRunning: true},
		{name: "daemon tolerations: unschedulable", node: newNode("n", v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}), ds: newDS(), run: true, continueRunning: true},
		{name: "daemon tolerations: memory pressure", node: newNode("n", v1.Taint{Key: v1.TaintNodeMemoryPressure, Effect: v1.TaintEffectNoSchedule}), ds: newDS(), run: true, continueRunning: true},
		{name: "network unavailable is not tolerated without hostNetwork", node: newNode("n", v1.Taint{Key: v1.TaintNodeNetworkUnavailable, Effect: v1.TaintEffectNoSchedule}), ds: newDS(), continueRunning: true},
		{name: "node selector mismatch", node: newNode("n"), ds: newDS(func(ds *appsv1.DaemonSet) {
			ds.Spec.Template.Spec.NodeSelector = map[string]string{"disk": "ssd"}
		})},
		{name: "node selector match", node: func() *v1.Node { n := newNode("n"); n.Labels["disk"] = "ssd"; return n }(), ds: newDS(func(ds *appsv1.DaemonSet) {
			ds.Spec.Template.Spec.NodeSelector = map[string]string{"disk": "ssd"}
		}), run: true, continueRunning: true},
		{name: "required node affinity mismatch", node: newNode("n"), ds: newDS(func(ds *appsv1.DaemonSet) {
			ds.Spec.Template.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
				NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"a"}}}}},
			}}}
		})},
		{name: "template names another node", node: newNode("n"), ds: newDS(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeName = "m" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run, cont := nodeShouldRunDaemonPod(context.Background(), tt.node, tt.ds)
			if run != tt.run || cont != tt.continueRunning {
				t.Fatalf("shouldRun, shouldContinueRunning = %v, %v; want %v, %v", run, cont, tt.run, tt.continueRunning)
			}
		})
	}
}

func TestNewDaemonPodIsPinnedToItsNode(t *testing.T) {
	ds := newDS(func(ds *appsv1.DaemonSet) {
		ds.Spec.Template.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptrTo(int64(5))}}
	})
	pod := newDaemonPod(ds, "abc", "n1")
	if pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != "abc" || pod.Labels["app"] != "agent" {
		t.Errorf("labels %v", pod.Labels)
	}
	if got := targetNodeName(pod); got != "n1" {
		t.Errorf("affinity names %q, want n1: %+v", got, pod.Spec.Affinity)
	}
	if pod.Spec.NodeName != "" {
		t.Errorf("nodeName %q: the scheduler binds daemon pods", pod.Spec.NodeName)
	}
	if len(pod.Spec.Tolerations) != len(daemonTolerations) {
		t.Errorf("%d tolerations, want the %d daemon ones (the template's not-ready one replaced): %+v", len(pod.Spec.Tolerations), len(daemonTolerations), pod.Spec.Tolerations)
	}
	for _, tol := range pod.Spec.Tolerations {
		if tol.Key == v1.TaintNodeNotReady && tol.TolerationSeconds != nil {
			t.Errorf("not-ready toleration keeps tolerationSeconds %d, Kubernetes tolerates it forever", *tol.TolerationSeconds)
		}
	}
	if ref := metav1.GetControllerOf(pod); ref == nil || ref.UID != "ds-uid" || ref.Kind != "DaemonSet" {
		t.Errorf("controller %+v", ref)
	}
}

func TestSyncCreatesOnePodPerEligibleNode(t *testing.T) {
	ds := newDS()
	f := newFixture(t, ds, newNode("n1"), newNode("n2"), newNode("tainted", v1.Taint{Key: "dedicated", Effect: v1.TaintEffectNoSchedule}))
	got := f.sync(t)
	if nodes := createdFor(f.client.Actions()); !slices.Equal(nodes, []string{"n1", "n2"}) {
		t.Fatalf("created pods for %v, want n1 and n2", nodes)
	}
	revs, _ := f.client.AppsV1().ControllerRevisions("default").List(context.Background(), metav1.ListOptions{})
	if len(revs.Items) != 1 || revs.Items[0].Name != "agent-"+currentHash(ds) || revs.Items[0].Revision != 1 {
		t.Fatalf("revisions %+v", revs.Items)
	}
	if got.Status.DesiredNumberScheduled != 2 || got.Status.ObservedGeneration != 1 {
		t.Errorf("status %+v", got.Status)
	}
	events := f.recorder.Events()
	if len(events) != 2 || events[0][:len("Normal SuccessfulCreate Created pod: agent-")] != "Normal SuccessfulCreate Created pod: agent-" {
		t.Errorf("events %v", events)
	}
}

func TestSyncDeletesExtraAndMisplacedPods(t *testing.T) {
	ds := newDS()
	h := currentHash(ds)
	f := newFixture(t, ds, newNode("n1"), newNode("evicting", v1.Taint{Key: "dedicated", Effect: v1.TaintEffectNoExecute}),
		daemonPod(ds, "old", "n1", h, time.Hour), daemonPod(ds, "young", "n1", h, time.Minute),
		daemonPod(ds, "misplaced", "evicting", h, time.Hour), daemonPod(ds, "nodeless", "gone", h, time.Hour))
	st := f.sync(t).Status
	if got := deleted(f.client.Actions()); !slices.Equal(got, []string{"misplaced", "nodeless", "young"}) {
		t.Fatalf("deleted %v, want the younger duplicate, the pod on the NoExecute node and the one whose node is gone", got)
	}
	if st.NumberMisscheduled != 1 || st.DesiredNumberScheduled != 1 || st.CurrentNumberScheduled != 1 {
		t.Errorf("status %+v", st)
	}
}

func TestRollingUpdateRespectsMaxUnavailable(t *testing.T) {
	tests := []struct {
		name        string
		strategy    appsv1.DaemonSetUpdateStrategy
		notReady    string
		wantDeleted []string
	}{
		{name: "maxUnavailable 1", strategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptrTo(intstr.FromInt32(1))}}, wantDeleted: []string{"p1"}},
		{name: "maxUnavailable 2", strategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptrTo(intstr.FromInt32(2))}}, wantDeleted: []string{"p1", "p2"}},
		{name: "maxUnavailable 34% of 3 rounds up", strategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptrTo(intstr.FromString("34%"))}}, wantDeleted: []string{"p1", "p2"}},
		{name: "an unavailable old pod goes first, within the budget", strategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptrTo(intstr.FromInt32(1))}}, notReady: "p3", wantDeleted: []string{"p3"}},
		{name: "OnDelete leaves old pods", strategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := newDS(func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy = tt.strategy })
			objs := []runtime.Object{ds}
			for i, n := range []string{"n1", "n2", "n3"} {
				objs = append(objs, newNode(n))
				p := daemonPod(ds, "p"+string(rune('1'+i)), n, "old-hash", time.Hour)
				if p.Name == tt.notReady {
					p.Status.Conditions = nil
				}
				objs = append(objs, p)
			}
			f := newFixture(t, objs...)
			st := f.sync(t).Status
			if got := deleted(f.client.Actions()); !slices.Equal(got, tt.wantDeleted) {
				t.Fatalf("deleted %v, want %v", got, tt.wantDeleted)
			}
			if len(createdFor(f.client.Actions())) != 0 {
				t.Error("created pods while old ones remain on their nodes")
			}
			if st.UpdatedNumberScheduled != 0 || st.DesiredNumberScheduled != 3 {
				t.Errorf("status %+v", st)
			}
		})
	}
}

func TestRollingUpdateWithSurge(t *testing.T) {
	surge := appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &appsv1.RollingUpdateDaemonSet{
		MaxSurge: ptrTo(intstr.FromInt32(1)), MaxUnavailable: ptrTo(intstr.FromInt32(0)),
	}}
	ds := newDS(func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy = surge })
	h := currentHash(ds)

	t.Run("starts one new pod beside an old one", func(t *testing.T) {
		objs := []runtime.Object{ds}
		for i, n := range []string{"n1", "n2", "n3"} {
			objs = append(objs, newNode(n), daemonPod(ds, "old"+string(rune('1'+i)), n, "old-hash", time.Hour))
		}
		f := newFixture(t, objs...)
		f.sync(t)
		if got := createdFor(f.client.Actions()); !slices.Equal(got, []string{"n1"}) {
			t.Fatalf("created for %v, want n1 only (maxSurge 1)", got)
		}
		if got := deleted(f.client.Actions()); len(got) != 0 {
			t.Fatalf("deleted %v, want none (maxUnavailable 0)", got)
		}
	})
	t.Run("removes the old pod once the new one is available", func(t *testing.T) {
		f := newFixture(t, ds, newNode("n1"), daemonPod(ds, "old", "n1", "old-hash", time.Hour), daemonPod(ds, "new", "n1", h, time.Minute))
		f.sync(t)
		if got := deleted(f.client.Actions()); !slices.Equal(got, []string{"old"}) {
			t.Fatalf("deleted %v, want the old pod", got)
		}
	})
}
