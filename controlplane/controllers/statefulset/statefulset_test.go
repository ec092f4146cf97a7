package statefulset

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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllertest"
)

func ptrTo[T any](v T) *T { return &v }

func newSet(replicas int32, opts ...func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "set-uid", Generation: 1},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptrTo(replicas),
			ServiceName: "nginx",
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, Containers: []v1.Container{{Name: "c", Image: "nginx:1"}}},
			},
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{
				Type: appsv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptrTo(int32(0))},
			},
			RevisionHistoryLimit: ptrTo(int32(10)),
		},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

type fixture struct {
	t        *testing.T
	client   *fake.Clientset
	recorder *controllertest.Recorder
	factory  informers.SharedInformerFactory
	c        *Controller
}

// newFixture returns a controller over a fake clientset that gives created
// pods the Pending phase and a uid, as the API server does.
func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	client := controllertest.NewClientset(objs...)
	client.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		pod := action.(clienttesting.CreateAction).GetObject().(*v1.Pod)
		pod.Status.Phase = v1.PodPending
		pod.UID = uuid.NewUUID()
		return false, nil, nil
	})
	f := informers.NewSharedInformerFactory(client, 0)
	rec := &controllertest.Recorder{}
	c, err := New(slog.New(slog.NewTextHandler(io.Discard, nil)), client, rec, f.Apps().V1().StatefulSets(), f.Apps().V1().ControllerRevisions(), f.Core().V1().Pods())
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, client: client, recorder: rec, factory: f, c: c}
}

// sync copies what the fake API holds into the informers' stores and
// syncs the set once.
func (f *fixture) sync() error {
	f.t.Helper()
	ctx := context.Background()
	refill := func(store toolscache.Store, objs []runtime.Object) {
		var items []any
		for _, o := range objs {
			items = append(items, o)
		}
		if err := store.Replace(items, ""); err != nil {
			f.t.Fatal(err)
		}
	}
	pods, _ := f.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	sets, _ := f.client.AppsV1().StatefulSets("default").List(ctx, metav1.ListOptions{})
	revs, _ := f.client.AppsV1().ControllerRevisions("default").List(ctx, metav1.ListOptions{})
	var po, so, ro []runtime.Object
	for i := range pods.Items {
		po = append(po, &pods.Items[i])
	}
	for i := range sets.Items {
		so = append(so, &sets.Items[i])
	}
	for i := range revs.Items {
		ro = append(ro, &revs.Items[i])
	}
	refill(f.factory.Core().V1().Pods().Informer().GetStore(), po)
	refill(f.factory.Apps().V1().StatefulSets().Informer().GetStore(), so)
	refill(f.factory.Apps().V1().ControllerRevisions().Informer().GetStore(), ro)
	return f.c.sync(ctx, "default/web")
}

func (f *fixture) mustSync() {
	f.t.Helper()
	if err := f.sync(); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
}

func (f *fixture) podNames() []string {
	pods, _ := f.client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}

func (f *fixture) pod(name string) *v1.Pod {
	f.t.Helper()
	p, err := f.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatalf("get pod %s: %v", name, err)
	}
	return p
}

func (f *fixture) set() *appsv1.StatefulSet {
	s, _ := f.client.AppsV1().StatefulSets("default").Get(context.Background(), "web", metav1.GetOptions{})
	return s
}

// makeReady marks the named pods Running and Ready a minute ago, as a node
// would.
func (f *fixture) makeReady(names ...string) {
	f.makeReadyFor(time.Minute, names...)
}

// makeReadyFor marks the named pods Running and Ready for the last d.
func (f *fixture) makeReadyFor(d time.Duration, names ...string) {
	for _, n := range names {
		p := f.pod(n)
		p.Status.Phase = v1.PodRunning
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Now().Add(-d))}}
		if _, err := f.client.CoreV1().Pods("default").UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f *fixture) updateSpec(mutate func(*appsv1.StatefulSet)) {
	s := f.set()
	mutate(s)
	s.Generation++
	if _, err := f.client.AppsV1().StatefulSets("default").Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func equalNames(t *testing.T, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("pods = %v, want %v", got, want)
	}
}

func TestOrderedReadyCreatesOnePodAtATime(t *testing.T) {
	f := newFixture(t, newSet(2))
	f.mustSync()
	equalNames(t, f.podNames(), "web-0")
	f.mustSync()
	equalNames(t, f.podNames(), "web-0") // web-0 is not ready yet
	p := f.pod("web-0")
	if p.Spec.Hostname != "web-0" || p.Spec.Subdomain != "nginx" {
		t.Errorf("hostname %q subdomain %q, want web-0 and nginx", p.Spec.Hostname, p.Spec.Subdomain)
	}
	if p.Labels[appsv1.StatefulSetPodNameLabel] != "web-0" || p.Labels[appsv1.PodIndexLabel] != "0" || p.Labels[appsv1.StatefulSetRevisionLabel] == "" {
		t.Errorf("labels = %v", p.Labels)
	}
	if ref := metav1.GetControllerOf(p); ref == nil || ref.Kind != "StatefulSet" || ref.UID != "set-uid" {
		t.Errorf("controller ref = %v", ref)
	}
	f.makeReady("web-0")
	f.mustSync()
	equalNames(t, f.podNames(), "web-0", "web-1")
	f.makeReady("web-1")
	f.mustSync()
	st := f.set().Status
	if st.Replicas != 2 || st.ReadyReplicas != 2 || st.AvailableReplicas != 2 || st.CurrentReplicas != 2 || st.UpdatedReplicas != 2 ||
		st.ObservedGeneration != 1 || st.CurrentRevision == "" || st.CurrentRevision != st.UpdateRevision {
		t.Errorf("status = %+v", st)
	}
	want := "Normal SuccessfulCreate create Pod web-0 in StatefulSet web successful"
	if !slices.Contains(f.recorder.Events(), want) {
		t.Errorf("events %v lack %q", f.recorder.Events(), want)
	}
	rev, err := f.client.AppsV1().ControllerRevisions("default").Get(context.Background(), st.CurrentRevision, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rev.Revision != 1 || !strings.HasPrefix(string(rev.Data.Raw), `{"spec":{"template":{"$patch":"replace"`) {
		t.Errorf("revision %d data %s", rev.Revision, rev.Data.Raw)
	}
}

// TestMinReadySecondsDelaysAvailability: a pod Ready for less than
// minReadySeconds is ready but not available, and in OrderedReady the next
// ordinal waits for it; once it has been Ready that long it is counted in
// status.availableReplicas and the next pod is made.
func TestMinReadySecondsDelaysAvailability(t *testing.T) {
	f := newFixture(t, newSet(2, func(s *appsv1.StatefulSet) { s.Spec.MinReadySeconds = 10 }))
	f.mustSync()
	equalNames(t, f.podNames(), "web-0")
	for _, step := range []struct {
		name             string
		readyFor         time.Duration
		ready, available int32
		pods             []string
	}{
		{"ready for 5s of 10", 5 * time.Second, 1, 0, []string{"web-0"}},
		{"ready for 11s of 10", 11 * time.Second, 1, 1, []string{"web-0", "web-1"}},
	} {
		t.Run(step.name, func(t *testing.T) {
			f.makeReadyFor(step.readyFor, "web-0")
			f.mustSync()
			if st := f.set().Status; st.ReadyReplicas != step.ready || st.AvailableReplicas != step.available {
				t.Errorf("readyReplicas %d availableReplicas %d, want %d and %d", st.ReadyReplicas, st.AvailableReplicas, step.ready, step.available)
			}
			equalNames(t, f.podNames(), step.pods...)
		})
	}
}

func TestParallelCreatesAllAtOnce(t *testing.T) {
	f := newFixture(t, newSet(3, func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement }))
	f.mustSync()
	equalNames(t, f.podNames(), "web-0", "web-1", "web-2")
}

func TestOrdinalsStart(t *testing.T) {
	f := newFixture(t, newSet(2, func(s *appsv1.StatefulSet) {
		s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 3}
	}))
	f.mustSync()
	equalNames(t, f.podNames(), "web-3", "web-4")
	if f.pod("web-4").Labels[appsv1.PodIndexLabel] != "4" {
		t.Errorf("pod-index of web-4 = %q", f.pod("web-4").Labels[appsv1.PodIndexLabel])
	}
}

// readySet runs f's set up to n ready pods.
func (f *fixture) readySet(n int) {
	for i := 0; i < n; i++ {
		f.mustSync()
		f.makeReady(f.podNames()[i])
	}
	f.mustSync()
}

func TestScaleDownRemovesHighestOrdinalFirst(t *testing.T) {
	f := newFixture(t, newSet(3))
	f.readySet(3)
	equalNames(t, f.podNames(), "web-0", "web-1", "web-2")
	f.updateSpec(func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptrTo(int32(1)) })
	f.mustSync()
	equalNames(t, f.podNames(), "web-0", "web-1")
	f.mustSync()
	equalNames(t, f.podNames(), "web-0")
	if !slices.Contains(f.recorder.Events(), "Normal SuccessfulDelete delete Pod web-2 in StatefulSet web successful") {
		t.Errorf("events = %v", f.recorder.Events())
	}
}

func TestRollingUpdateWithPartition(t *testing.T) {
	f := newFixture(t, newSet(3))
	f.readySet(3)
	oldRev := f.set().Status.CurrentRevision
	f.updateSpec(func(s *appsv1.StatefulSet) {
		s.Spec.Template.Spec.Containers[0].Image = "nginx:2"
		s.Spec.UpdateStrategy.RollingUpdate.Partition = ptrTo(int32(2))
	})
	f.mustSync()
	equalNames(t, f.podNames(), "web-0", "web-1") // web-2 deleted for the update
	f.mustSync()
	equalNames(t, f.podNames(), "web-0", "web-1", "web-2")
	if img := f.pod("web-2").Spec.Containers[0].Image; img != "nginx:2" {
		t.Fatalf("web-2 runs %s, want nginx:2", img)
	}
	f.makeReady("web-2")
	f.mustSync()
	f.mustSync()
	equalNames(t, f.podNames(), "web-0", "web-1", "web-2")
	if img := f.pod("web-1").Spec.Containers[0].Image; img != "nginx:1" {
		t.Errorf("web-1 below the partition runs %s, want nginx:1", img)
	}
	st := f.set().Status
	if st.CurrentRevision != oldRev || st.UpdateRevision == oldRev || st.UpdatedReplicas != 1 || st.CurrentReplicas != 2 {
		t.Errorf("status = %+v", st)
	}
	revs, _ := f.client.AppsV1().ControllerRevisions("default").List(context.Background(), metav1.ListOptions{})
	if len(revs.Items) != 2 {
		t.Errorf("%d revisions, want 2", len(revs.Items))
	}
}

func TestRollbackRenumbersOldRevision(t *testing.T) {
	f := newFixture(t, newSet(1))
	f.readySet(1)
	first := f.set().Status.CurrentRevision
	f.updateSpec(func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = "nginx:2" })
	f.mustSync()
	f.updateSpec(func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = "nginx:1" })
	f.mustSync()
	rev, err := f.client.AppsV1().ControllerRevisions("default").Get(context.Background(), first, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rev.Revision != 3 || f.set().Status.UpdateRevision != first {
		t.Errorf("first revision is now number %d, update revision %s; want 3 and %s", rev.Revision, f.set().Status.UpdateRevision, first)
	}
}

func TestOnDeleteWaitsForDeletion(t *testing.T) {
	f := newFixture(t, newSet(2, func(s *appsv1.StatefulSet) {
		s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	}))
	f.readySet(2)
	f.updateSpec(func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = "nginx:2" })
	f.mustSync()
	f.mustSync()
	equalNames(t, f.podNames(), "web-0", "web-1")
	if f.pod("web-1").Spec.Containers[0].Image != "nginx:1" {
		t.Fatal("OnDelete replaced a pod nobody deleted")
	}
	if err := f.client.CoreV1().Pods("default").Delete(context.Background(), "web-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.mustSync()
	if img := f.pod("web-1").Spec.Containers[0].Image; img != "nginx:2" {
		t.Errorf("recreated web-1 runs %s, want nginx:2", img)
	}
}

func TestMaxUnavailableDeletesSeveral(t *testing.T) {
	f := newFixture(t, newSet(4))
	f.readySet(4)
	f.updateSpec(func(s *appsv1.StatefulSet) {
		s.Spec.Template.Spec.Containers[0].Image = "nginx:2"
		s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptrTo(intstr.FromInt32(2))
	})
	f.mustSync()
	equalNames(t, f.podNames(), "web-0", "web-1")
}

func withClaims(policy *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy) func(*appsv1.StatefulSet) {
	return func(s *appsv1.StatefulSet) {
		s.Spec.VolumeClaimTemplates = []v1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "www"}, Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		}}}
		s.Spec.Template.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "www", MountPath: "/data"}}
		s.Spec.PersistentVolumeClaimRetentionPolicy = policy
	}
}

func TestClaimsCreatedBeforePods(t *testing.T) {
	f := newFixture(t, newSet(1, withClaims(&appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	})))
	f.mustSync()
	claim, err := f.client.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), "www-web-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if claim.Labels["app"] != "web" {
		t.Errorf("claim labels = %v", claim.Labels)
	}
	if ref := metav1.GetControllerOf(claim); ref == nil || ref.UID != "set-uid" {
		t.Errorf("whenDeleted=Delete claim controller = %v, want the set", ref)
	}
	vols := f.pod("web-0").Spec.Volumes
	if len(vols) != 1 || vols[0].PersistentVolumeClaim == nil || vols[0].PersistentVolumeClaim.ClaimName != "www-web-0" {
		t.Errorf("volumes = %+v", vols)
	}
	if !slices.Contains(f.recorder.Events(), "Normal SuccessfulCreate create Claim www-web-0 Pod web-0 in StatefulSet web success") {
		t.Errorf("events = %v", f.recorder.Events())
	}
}

func TestScaledDownClaimOwnedByPodWhenScaledDelete(t *testing.T) {
	f := newFixture(t, newSet(2, withClaims(&appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
	})))
	f.readySet(2)
	web1 := f.pod("web-1")
	f.updateSpec(func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptrTo(int32(1)) })
	f.mustSync()
	claim, err := f.client.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), "www-web-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(claim); ref == nil || ref.Kind != "Pod" || ref.UID != web1.UID {
		t.Errorf("scaled-down claim controller = %v, want pod web-1", ref)
	}
	equalNames(t, f.podNames(), "web-0")
}

func TestClaimsNotServedReportsEvent(t *testing.T) {
	f := newFixture(t, newSet(1, withClaims(nil)))
	notServed := apierrors.NewNotFound(v1.Resource("persistentvolumeclaims"), "")
	notServed.ErrStatus.Details = nil
	notServed.ErrStatus.Message = "the server could not find the requested resource"
	f.client.PrependReactor("*", "persistentvolumeclaims", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, notServed
	})
	if err := f.sync(); err == nil {
		t.Fatal("sync succeeded without claims")
	}
	equalNames(t, f.podNames())
	want := "Warning FailedCreate create Claim www-web-0 for Pod web-0 in StatefulSet web failed error: " + errClaimsNotServed.Error()
	if !slices.Contains(f.recorder.Events(), want) {
		t.Errorf("events %v lack %q", f.recorder.Events(), want)
	}
}

func TestFailedPodIsRecreated(t *testing.T) {
	f := newFixture(t, newSet(1))
	f.readySet(1)
	p := f.pod("web-0")
	p.Status.Phase = v1.PodFailed
	if _, err := f.client.CoreV1().Pods("default").UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.mustSync()
	equalNames(t, f.podNames())
	f.mustSync()
	equalNames(t, f.podNames(), "web-0")
	if f.pod("web-0").UID == p.UID {
		t.Error("web-0 was not made again")
	}
}

func TestAdoptsOrphanMember(t *testing.T) {
	orphan := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default", UID: types.UID("orphan"), Labels: map[string]string{"app": "web"}},
		Status: v1.PodStatus{Phase: v1.PodPending}}
	f := newFixture(t, newSet(1), orphan)
	f.mustSync()
	if ref := metav1.GetControllerOf(f.pod("web-0")); ref == nil || ref.UID != "set-uid" {
		t.Errorf("orphan web-0 controller = %v, want the set", ref)
	}
}
