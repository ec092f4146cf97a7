package disruption

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
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllertest"
	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllerutil"
)

var (
	rsKind  = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	depKind = appsv1.SchemeGroupVersion.WithKind("Deployment")
)

type pdbOpt func(*policyv1.PodDisruptionBudget)

func minAvailable(v intstr.IntOrString) pdbOpt {
	return func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = &v }
}
func maxUnavailable(v intstr.IntOrString) pdbOpt {
	return func(p *policyv1.PodDisruptionBudget) { p.Spec.MaxUnavailable = &v }
}
func selector(s *metav1.LabelSelector) pdbOpt {
	return func(p *policyv1.PodDisruptionBudget) { p.Spec.Selector = s }
}
func disrupted(pods map[string]time.Time) pdbOpt {
	return func(p *policyv1.PodDisruptionBudget) {
		p.Status.DisruptedPods = map[string]metav1.Time{}
		for name, at := range pods {
			p.Status.DisruptedPods[name] = metav1.NewTime(at)
		}
	}
}

// newPDB returns budget default/web selecting app=web, at generation 3.
func newPDB(opts ...pdbOpt) *policyv1.PodDisruptionBudget {
	p := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "pdb-uid", Generation: 3},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func newRS(name string, replicas int32, owner *appsv1.Deployment) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       appsv1.ReplicaSetSpec{Replicas: &replicas},
	}
	if owner != nil {
		rs.OwnerReferences = []metav1.OwnerReference{*controllerutil.NewControllerRef(owner, depKind)}
	}
	return rs
}

func newDeployment(name string, replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       appsv1.DeploymentSpec{Replicas: &replicas},
	}
}

type podOpt func(*v1.Pod)

func ready(p *v1.Pod) {
	p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
}
func deleting(p *v1.Pod) {
	now := metav1.Now()
	p.DeletionTimestamp = &now
}
func ownedBy(owner metav1.Object, gvk schema.GroupVersionKind) podOpt {
	return func(p *v1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{*controllerutil.NewControllerRef(owner, gvk)}
	}
}
func inNamespace(ns string) podOpt { return func(p *v1.Pod) { p.Namespace = ns } }
func labelled(app string) podOpt   { return func(p *v1.Pod) { p.Labels = map[string]string{"app": app} } }

func newPod(name string, opts ...podOpt) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}}}
	p.Status.Phase = v1.PodRunning
	for _, o := range opts {
		o(p)
	}
	return p
}

type fixture struct {
	client   *fake.Clientset
	factory  informers.SharedInformerFactory
	recorder *controllertest.Recorder
	c        *Controller
}

func newController(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	client := controllertest.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	rec := &controllertest.Recorder{}
	c, err := New(slog.New(slog.NewTextHandler(io.Discard, nil)), client, rec, factory.Policy().V1().PodDisruptionBudgets(),
		factory.Core().V1().Pods(), factory.Apps().V1().ReplicaSets(), factory.Apps().V1().Deployments())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.queue.ShutDown)
	return &fixture{client: client, factory: factory, recorder: rec, c: c}
}

// newFixture builds the controller with objs in the fake API and in the
// informer caches, without running informers.
func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	f := newController(t, objs...)
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *policyv1.PodDisruptionBudget:
			err = f.factory.Policy().V1().PodDisruptionBudgets().Informer().GetIndexer().Add(o)
		case *v1.Pod:
			err = f.factory.Core().V1().Pods().Informer().GetIndexer().Add(o)
		case *appsv1.ReplicaSet:
			err = f.factory.Apps().V1().ReplicaSets().Informer().GetIndexer().Add(o)
		case *appsv1.Deployment:
			err = f.factory.Apps().V1().Deployments().Informer().GetIndexer().Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	f.client.ClearActions()
	return f
}

func (f *fixture) pdb(t *testing.T) *policyv1.PodDisruptionBudget {
	t.Helper()
	pdb, err := f.client.PolicyV1().PodDisruptionBudgets("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pdb
}

func (f *fixture) hasEvent(prefix string) bool {
	return slices.ContainsFunc(f.recorder.Events(), func(e string) bool { return strings.HasPrefix(e, prefix) })
}

type counts struct{ expected, desired, healthy, allowed int32 }

func countsOf(s policyv1.PodDisruptionBudgetStatus) counts {
	return counts{s.ExpectedPods, s.DesiredHealthy, s.CurrentHealthy, s.DisruptionsAllowed}
}

func TestSyncComputesStatus(t *testing.T) {
	dep := newDeployment("web", 3)
	rsOld, rsNew := newRS("web-old", 1, dep), newRS("web-new", 3, dep)
	bareRS3, bareRS4 := newRS("bare3", 3, nil), newRS("bare4", 4, nil)
	tests := []struct {
		name       string
		pdb        *policyv1.PodDisruptionBudget
		objs       []runtime.Object
		want       counts
		wantReason string
		wantEvent  string
	}{
		{
			name: "minAvailable integer counts the matching pods",
			pdb:  newPDB(minAvailable(intstr.FromInt32(2))),
			objs: []runtime.Object{newPod("a", ready), newPod("b", ready), newPod("c", ready), newPod("other", ready, labelled("db"))},
			want: counts{expected: 3, desired: 2, healthy: 3, allowed: 1}, wantReason: policyv1.SufficientPodsReason,
		},
		{
			name: "maxUnavailable counts the Deployment's replicas once across its ReplicaSets",
			pdb:  newPDB(maxUnavailable(intstr.FromInt32(1))),
			objs: []runtime.Object{dep, rsOld, rsNew,
				newPod("old", ready, ownedBy(rsOld, rsKind)), newPod("new1", ready, ownedBy(rsNew, rsKind)), newPod("new2", ownedBy(rsNew, rsKind))},
			want: counts{expected: 3, desired: 2, healthy: 2, allowed: 0}, wantReason: policyv1.InsufficientPodsReason,
		},
		{
			name: "minAvailable percentage of a ReplicaSet",
			pdb:  newPDB(minAvailable(intstr.FromString("50%"))),
			objs: []runtime.Object{bareRS4, newPod("a", ready, ownedBy(bareRS4, rsKind)), newPod("b", ready, ownedBy(bareRS4, rsKind)),
				newPod("c", ready, ownedBy(bareRS4, rsKind))},
			want: counts{expected: 4, desired: 2, healthy: 3, allowed: 1}, wantReason: policyv1.SufficientPodsReason,
		},
		{
			name: "minAvailable percentage rounds up",
			pdb:  newPDB(minAvailable(intstr.FromString("50%"))),
			objs: []runtime.Object{bareRS3, newPod("a", ready, ownedBy(bareRS3, rsKind)), newPod("b", ready, ownedBy(bareRS3, rsKind))},
			want: counts{expected: 3, desired: 2, healthy: 2, allowed: 0}, wantReason: policyv1.InsufficientPodsReason,
		},
		{
			name: "maxUnavailable percentage rounds up",
			pdb:  newPDB(maxUnavailable(intstr.FromString("30%"))),
			objs: []runtime.Object{bareRS4, newPod("a", ready, ownedBy(bareRS4, rsKind)), newPod("b", ready, ownedBy(bareRS4, rsKind)),
				newPod("c", ready, ownedBy(bareRS4, rsKind))},
			want: counts{expected: 4, desired: 2, healthy: 3, allowed: 1}, wantReason: policyv1.SufficientPodsReason,
		},
		{
			name: "maxUnavailable leaves a pod without a controller out of the scale",
			pdb:  newPDB(maxUnavailable(intstr.FromInt32(1))),
			objs: []runtime.Object{newPod("bare", ready)},
			want: counts{expected: 0, desired: 0, healthy: 1, allowed: 0}, wantReason: policyv1.InsufficientPodsReason,
			wantEvent: "Warning UnmanagedPods Pods selected by this PodDisruptionBudget",
		},
		{
			name: "an empty selector matches every pod in the namespace",
			pdb:  newPDB(minAvailable(intstr.FromInt32(1)), selector(&metav1.LabelSelector{})),
			objs: []runtime.Object{newPod("a", ready), newPod("b", ready, labelled("db")), newPod("elsewhere", ready, inNamespace("other"))},
			want: counts{expected: 2, desired: 1, healthy: 2, allowed: 1}, wantReason: policyv1.SufficientPodsReason,
		},
		{
			name: "a nil selector matches no pod",
			pdb:  newPDB(minAvailable(intstr.FromInt32(0)), selector(nil)),
			objs: []runtime.Object{newPod("a", ready)},
			want: counts{}, wantReason: policyv1.InsufficientPodsReason, wantEvent: "Normal NoPods No matching pods found",
		},
		{
			name: "a pod being deleted is not healthy",
			pdb:  newPDB(minAvailable(intstr.FromInt32(1))),
			objs: []runtime.Object{newPod("a", ready), newPod("b", ready, deleting)},
			want: counts{expected: 2, desired: 1, healthy: 1, allowed: 0}, wantReason: policyv1.InsufficientPodsReason,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, append([]runtime.Object{tt.pdb}, tt.objs...)...)
			if err := f.c.sync(context.Background(), "default/web"); err != nil {
				t.Fatalf("sync: %v", err)
			}
			got := f.pdb(t).Status
			if countsOf(got) != tt.want {
				t.Errorf("status counts %+v, want %+v", countsOf(got), tt.want)
			}
			if got.ObservedGeneration != 3 {
				t.Errorf("observedGeneration = %d, want 3", got.ObservedGeneration)
			}
			cond := meta.FindStatusCondition(got.Conditions, policyv1.DisruptionAllowedCondition)
			wantStatus := metav1.ConditionFalse
			if tt.want.allowed > 0 {
				wantStatus = metav1.ConditionTrue
			}
			if cond == nil || cond.Status != wantStatus || cond.Reason != tt.wantReason || cond.ObservedGeneration != 3 || cond.Message != "" {
				t.Errorf("condition %+v, want %s/%s at generation 3", cond, wantStatus, tt.wantReason)
			}
			if tt.wantEvent != "" && !f.hasEvent(tt.wantEvent) {
				t.Errorf("events %v, want one starting %q", f.recorder.Events(), tt.wantEvent)
			}
		})
	}
}

func TestUnresolvableControllerFailsSafe(t *testing.T) {
	missing := newRS("gone", 3, nil)
	pdb := newPDB(maxUnavailable(intstr.FromInt32(1)))
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 2, DisruptionsAllowed: 2, CurrentHealthy: 3, DesiredHealthy: 1, ExpectedPods: 3}
	f := newFixture(t, pdb, newPod("a", ready, ownedBy(missing, rsKind)))

	err := f.c.sync(context.Background(), "default/web")
	if err == nil {
		t.Fatal("sync succeeded, want an error so the budget is retried")
	}
	got := f.pdb(t).Status
	if got.DisruptionsAllowed != 0 {
		t.Errorf("disruptionsAllowed = %d, want 0", got.DisruptionsAllowed)
	}
	if got.CurrentHealthy != 3 || got.ObservedGeneration != 2 {
		t.Errorf("status %+v, want the rest of the old status kept", got)
	}
	cond := meta.FindStatusCondition(got.Conditions, policyv1.DisruptionAllowedCondition)
	wantMsg := `found no controllers for pod "a"`
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != policyv1.SyncFailedReason || cond.Message != wantMsg {
		t.Errorf("condition %+v, want False/SyncFailed %q", cond, wantMsg)
	}
	if want := "Warning CalculateExpectedPodCountFailed Failed to calculate the number of expected pods: " + wantMsg; !f.hasEvent(want) {
		t.Errorf("events %v, want %q", f.recorder.Events(), want)
	}
}

func TestDisruptedPods(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name        string
		pods        []runtime.Object
		disrupted   map[string]time.Time
		wantKept    []string
		wantHealthy int32
		wantEvent   string
	}{
		{
			name:      "a young entry keeps its ready pod out of the healthy count",
			pods:      []runtime.Object{newPod("a", ready), newPod("b", ready)},
			disrupted: map[string]time.Time{"a": now.Add(-30 * time.Second)},
			wantKept:  []string{"a"}, wantHealthy: 1,
		},
		{
			name:        "an entry older than DeletionTimeout is dropped",
			pods:        []runtime.Object{newPod("a", ready), newPod("b", ready)},
			disrupted:   map[string]time.Time{"a": now.Add(-DeletionTimeout - time.Second)},
			wantHealthy: 2, wantEvent: "Warning NotDeleted Pod was expected by PDB default/web to be deleted but it wasn't",
		},
		{
			name:        "an entry for a pod that is gone is dropped",
			pods:        []runtime.Object{newPod("b", ready)},
			disrupted:   map[string]time.Time{"a": now.Add(-30 * time.Second)},
			wantHealthy: 1,
		},
		{
			name:        "an entry for a pod being deleted is dropped",
			pods:        []runtime.Object{newPod("a", ready, deleting), newPod("b", ready)},
			disrupted:   map[string]time.Time{"a": now.Add(-30 * time.Second)},
			wantHealthy: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, append([]runtime.Object{newPDB(minAvailable(intstr.FromInt32(0)), disrupted(tt.disrupted))}, tt.pods...)...)
			f.c.now = func() time.Time { return now }
			if err := f.c.sync(context.Background(), "default/web"); err != nil {
				t.Fatalf("sync: %v", err)
			}
			got := f.pdb(t).Status
			var kept []string
			for name := range got.DisruptedPods {
				kept = append(kept, name)
			}
			slices.Sort(kept)
			if !slices.Equal(kept, tt.wantKept) {
				t.Errorf("disruptedPods %v, want %v", kept, tt.wantKept)
			}
			if got.CurrentHealthy != tt.wantHealthy || got.DisruptionsAllowed != tt.wantHealthy {
				t.Errorf("currentHealthy %d, disruptionsAllowed %d, want %d for both", got.CurrentHealthy, got.DisruptionsAllowed, tt.wantHealthy)
			}
			if tt.wantEvent != "" && !f.hasEvent(tt.wantEvent) {
				t.Errorf("events %v, want %q", f.recorder.Events(), tt.wantEvent)
			}
		})
	}
}

func TestRecheckWhenDisruptedEntryExpires(t *testing.T) {
	evicted := time.Now().Add(-DeletionTimeout + 200*time.Millisecond)
	f := newFixture(t, newPDB(minAvailable(intstr.FromInt32(0)), disrupted(map[string]time.Time{"a": evicted})), newPod("a", ready))
	ctx := context.Background()
	if err := f.c.sync(ctx, "default/web"); err != nil {
		t.Fatal(err)
	}
	if got := f.pdb(t).Status.CurrentHealthy; got != 0 {
		t.Fatalf("currentHealthy = %d while the eviction is in force, want 0", got)
	}
	if err := f.factory.Policy().V1().PodDisruptionBudgets().Informer().GetIndexer().Update(f.pdb(t)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for f.c.queue.Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the budget was not requeued when its disruptedPods entry expired")
		}
		time.Sleep(20 * time.Millisecond)
	}
	key, _ := f.c.queue.Get()
	f.c.queue.Done(key)
	if key != "default/web" {
		t.Fatalf("requeued %q, want default/web", key)
	}
	if err := f.c.sync(ctx, key); err != nil {
		t.Fatal(err)
	}
	got := f.pdb(t).Status
	if len(got.DisruptedPods) != 0 || got.CurrentHealthy != 1 {
		t.Errorf("after expiry disruptedPods %v, currentHealthy %d; want none and 1", got.DisruptedPods, got.CurrentHealthy)
	}
}

func TestStatusWrites(t *testing.T) {
	t.Run("unchanged status is not written again", func(t *testing.T) {
		f := newFixture(t, newPDB(minAvailable(intstr.FromInt32(1))), newPod("a", ready), newPod("b", ready))
		ctx := context.Background()
		if err := f.c.sync(ctx, "default/web"); err != nil {
			t.Fatal(err)
		}
		if n := controllertest.CountActions(f.client.Actions(), "update", "poddisruptionbudgets", "status"); n != 1 {
			t.Fatalf("first sync wrote status %d times, want 1", n)
		}
		if err := f.factory.Policy().V1().PodDisruptionBudgets().Informer().GetIndexer().Update(f.pdb(t)); err != nil {
			t.Fatal(err)
		}
		f.client.ClearActions()
		if err := f.c.sync(ctx, "default/web"); err != nil {
			t.Fatal(err)
		}
		if n := controllertest.CountActions(f.client.Actions(), "update", "poddisruptionbudgets", ""); n != 0 {
			t.Errorf("second sync made %d updates, want none", n)
		}
	})
	t.Run("a conflict is returned for a retry without failing safe", func(t *testing.T) {
		f := newFixture(t, newPDB(minAvailable(intstr.FromInt32(1))), newPod("a", ready), newPod("b", ready))
		f.client.PrependReactor("update", "poddisruptionbudgets", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"}, "web", nil)
		})
		err := f.c.sync(context.Background(), "default/web")
		if !apierrors.IsConflict(err) {
			t.Fatalf("sync error %v, want a conflict", err)
		}
		if n := controllertest.CountActions(f.client.Actions(), "update", "poddisruptionbudgets", "status"); n != 1 {
			t.Errorf("status updates = %d, want 1 (no SyncFailed write after a conflict)", n)
		}
	})
}

func TestPodEventsEnqueueMatchingBudgets(t *testing.T) {
	named := func(name string, sel *metav1.LabelSelector, ns string) *policyv1.PodDisruptionBudget {
		p := newPDB(minAvailable(intstr.FromInt32(1)), selector(sel))
		p.Name, p.Namespace = name, ns
		return p
	}
	web := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	db := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	pdbs := []runtime.Object{
		named("web", web, "default"), named("db", db, "default"), named("all", &metav1.LabelSelector{}, "default"),
		named("none", nil, "default"), named("web-elsewhere", web, "other"),
	}
	pod, relabelled := newPod("a"), newPod("a", labelled("db"))
	relabelled.ResourceVersion = "2"
	tests := []struct {
		name  string
		event func(c *Controller)
		want  []string
	}{
		{"add", func(c *Controller) { c.addPod(pod) }, []string{"default/all", "default/web"}},
		{"update with new labels", func(c *Controller) { c.updatePod(pod, relabelled) }, []string{"default/all", "default/db", "default/web"}},
		{"delete", func(c *Controller) { c.deletePod(pod) }, []string{"default/all", "default/web"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, pdbs...)
			tt.event(f.c)
			var got []string
			for f.c.queue.Len() > 0 {
				key, _ := f.c.queue.Get()
				f.c.queue.Done(key)
				got = append(got, key)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("enqueued %v, want %v", got, tt.want)
			}
		})
	}
}

// TestPodBecomingUnreadyLowersDisruptionsAllowed runs the controller on
// informers: the pod's update alone must bring the budget's status down.
func TestPodBecomingUnreadyLowersDisruptionsAllowed(t *testing.T) {
	f := newController(t, newPDB(minAvailable(intstr.FromInt32(1))), newPod("a", ready), newPod("b", ready))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.c.Run(ctx, 1) }()
	f.factory.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		f.factory.Shutdown()
	})

	waitForAllowed := func(want int32) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			got := f.pdb(t).Status
			if got.DisruptionsAllowed == want && got.ObservedGeneration == 3 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("disruptionsAllowed = %d, want %d", got.DisruptionsAllowed, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitForAllowed(1)

	unready := newPod("a")
	unready.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse}}
	if _, err := f.client.CoreV1().Pods("default").UpdateStatus(ctx, unready, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForAllowed(0)
	cond := meta.FindStatusCondition(f.pdb(t).Status.Conditions, policyv1.DisruptionAllowedCondition)
	if cond == nil || cond.Reason != policyv1.InsufficientPodsReason {
		t.Errorf("condition %+v, want InsufficientPods", cond)
	}
}
