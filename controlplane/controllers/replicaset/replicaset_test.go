package replicaset

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllertest"
	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllerutil"
)

func newRS(replicas int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "rs-uid", Generation: 2},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
}

type podOpt func(*v1.Pod)

func owned(rs *appsv1.ReplicaSet) podOpt {
	return func(p *v1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{*controllerutil.NewControllerRef(rs, controllerKind)}
	}
}
func onNode(n string) podOpt      { return func(p *v1.Pod) { p.Spec.NodeName = n } }
func phase(ph v1.PodPhase) podOpt { return func(p *v1.Pod) { p.Status.Phase = ph } }
func labelled(l string) podOpt    { return func(p *v1.Pod) { p.Labels = map[string]string{"app": l} } }
func createdAgo(d time.Duration) podOpt {
	return func(p *v1.Pod) { p.CreationTimestamp = metav1.NewTime(time.Now().Add(-d)) }
}
func ready() podOpt {
	return func(p *v1.Pod) {
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour))}}
	}
}

func newPod(name string, opts ...podOpt) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}}}
	p.Status.Phase = v1.PodPending
	for _, o := range opts {
		o(p)
	}
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
	factory := informers.NewSharedInformerFactory(client, 0)
	rec := &controllertest.Recorder{}
	c, err := New(slog.New(slog.NewTextHandler(io.Discard, nil)), client, rec, factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.ReplicaSet:
			factory.Apps().V1().ReplicaSets().Informer().GetIndexer().Add(o)
		case *v1.Pod:
			factory.Core().V1().Pods().Informer().GetIndexer().Add(o)
		}
	}
	client.ClearActions()
	return &fixture{client: client, recorder: rec, c: c}
}

func deletedNames(actions []clienttesting.Action) []string {
	var out []string
	for _, a := range actions {
		if d, ok := a.(clienttesting.DeleteAction); ok && a.GetResource().Resource == "pods" {
			out = append(out, d.GetName())
		}
	}
	slices.Sort(out)
	return out
}

func TestSync(t *testing.T) {
	rs := newRS(3)
	tests := []struct {
		name        string
		rs          *appsv1.ReplicaSet
		pods        []*v1.Pod
		wantCreates int
		wantDeleted []string
		wantPatches int
		wantEvent   string
	}{
		{name: "creates missing pods", rs: newRS(3), wantCreates: 3, wantEvent: "Normal SuccessfulCreate Created pod: web-"},
		{name: "nothing to do", rs: newRS(1), pods: []*v1.Pod{newPod("a", owned(rs), onNode("n1"), phase(v1.PodRunning), ready())}},
		{
			name: "deletes least valuable first",
			rs:   newRS(2),
			pods: []*v1.Pod{
				newPod("old-ready", owned(rs), onNode("n1"), phase(v1.PodRunning), ready(), createdAgo(time.Hour)),
				newPod("new-ready", owned(rs), onNode("n2"), phase(v1.PodRunning), ready(), createdAgo(time.Minute)),
				newPod("unscheduled", owned(rs)),
				newPod("running-not-ready", owned(rs), onNode("n1"), phase(v1.PodRunning)),
			},
			wantDeleted: []string{"running-not-ready", "unscheduled"},
			wantEvent:   "Normal SuccessfulDelete Deleted pod: ",
		},
		{name: "adopts a matching orphan", rs: newRS(1), pods: []*v1.Pod{newPod("orphan", onNode("n1"))}, wantPatches: 1},
		{name: "releases a pod that stopped matching", rs: newRS(0), pods: []*v1.Pod{newPod("relabelled", owned(rs), labelled("other"))}, wantPatches: 1},
		{name: "ignores finished pods", rs: newRS(1), pods: []*v1.Pod{newPod("done", owned(rs), phase(v1.PodSucceeded))}, wantCreates: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []runtime.Object{tt.rs}
			for _, p := range tt.pods {
				objs = append(objs, p)
			}
			f := newFixture(t, objs...)
			if err := f.c.sync(context.Background(), "default/web"); err != nil {
				t.Fatalf("sync: %v", err)
			}
			actions := f.client.Actions()
			if got := controllertest.CountActions(actions, "create", "pods", ""); got != tt.wantCreates {
				t.Errorf("pod creates = %d, want %d", got, tt.wantCreates)
			}
			if got := deletedNames(actions); !slices.Equal(got, tt.wantDeleted) {
				t.Errorf("deleted %v, want %v", got, tt.wantDeleted)
			}
			if got := controllertest.CountActions(actions, "patch", "pods", ""); got != tt.wantPatches {
				t.Errorf("pod patches = %d, want %d", got, tt.wantPatches)
			}
			if tt.wantEvent != "" && !slices.ContainsFunc(f.recorder.Events(), func(e string) bool { return strings.HasPrefix(e, tt.wantEvent) }) {
				t.Errorf("events %v, want one starting %q", f.recorder.Events(), tt.wantEvent)
			}
			for _, a := range actions {
				if c, ok := a.(clienttesting.CreateAction); ok && a.GetVerb() == "create" {
					pod := c.GetObject().(*v1.Pod)
					ref := metav1.GetControllerOf(pod)
					if pod.GenerateName != "web-" || ref == nil || ref.UID != "rs-uid" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
						t.Errorf("created pod %+v, want generateName web- and a blocking controllerRef", pod.ObjectMeta)
					}
				}
			}
		})
	}
}

func TestExpectationsPreventOverCreation(t *testing.T) {
	f := newFixture(t, newRS(3))
	ctx := context.Background()
	for range 3 {
		if err := f.c.sync(ctx, "default/web"); err != nil {
			t.Fatal(err)
		}
	}
	if got := controllertest.CountActions(f.client.Actions(), "create", "pods", ""); got != 3 {
		t.Fatalf("creates after three syncs with an unobserved cache = %d, want 3", got)
	}
}

func TestStatus(t *testing.T) {
	rs := newRS(3)
	f := newFixture(t, rs,
		newPod("a", owned(rs), onNode("n1"), phase(v1.PodRunning), ready()),
		newPod("b", owned(rs), onNode("n1"), phase(v1.PodRunning), ready()),
		newPod("c", owned(rs), onNode("n1"), phase(v1.PodRunning), ready(), labelled("web")),
	)
	if err := f.c.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	got, err := f.client.AppsV1().ReplicaSets("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := appsv1.ReplicaSetStatus{Replicas: 3, FullyLabeledReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3, ObservedGeneration: 2}
	if got.Status.Replicas != want.Replicas || got.Status.ReadyReplicas != want.ReadyReplicas || got.Status.AvailableReplicas != want.AvailableReplicas || got.Status.FullyLabeledReplicas != want.FullyLabeledReplicas || got.Status.ObservedGeneration != want.ObservedGeneration {
		t.Fatalf("status %+v, want %+v", got.Status, want)
	}
}

func TestSlowStartBatch(t *testing.T) {
	tests := []struct {
		name      string
		count     int
		failAfter int
		wantOK    int
		wantCalls int
	}{
		{name: "all succeed", count: 10, failAfter: 100, wantOK: 10, wantCalls: 10},
		{name: "stops after the failing batch", count: 10, failAfter: 2, wantOK: 2, wantCalls: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls int
			ch := make(chan struct{}, 1)
			ch <- struct{}{}
			ok, err := slowStartBatch(tt.count, 1, func() error {
				<-ch
				defer func() { ch <- struct{}{} }()
				calls++
				if calls > tt.failAfter {
					return io.EOF
				}
				return nil
			})
			if ok != tt.wantOK || calls != tt.wantCalls || (err != nil) != (tt.wantOK < tt.count) {
				t.Fatalf("ok=%d calls=%d err=%v, want ok=%d calls=%d", ok, calls, err, tt.wantOK, tt.wantCalls)
			}
		})
	}
}
