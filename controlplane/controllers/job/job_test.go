package job

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
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

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

type jobOpt func(*batchv1.Job)

func completions(n int32) jobOpt  { return func(j *batchv1.Job) { j.Spec.Completions = &n } }
func parallelism(n int32) jobOpt  { return func(j *batchv1.Job) { j.Spec.Parallelism = &n } }
func backoffLimit(n int32) jobOpt { return func(j *batchv1.Job) { j.Spec.BackoffLimit = &n } }
func deadline(s int64) jobOpt     { return func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = &s } }
func suspend() jobOpt             { return func(j *batchv1.Job) { j.Spec.Suspend = ptr(true) } }
func startedAgo(d time.Duration) jobOpt {
	return func(j *batchv1.Job) { j.Status.StartTime = &metav1.Time{Time: now.Add(-d)} }
}
func counted(succeeded, failed int32) jobOpt {
	return func(j *batchv1.Job) { j.Status.Succeeded, j.Status.Failed = succeeded, failed }
}
func uncountedSucceeded(uids ...types.UID) jobOpt {
	return func(j *batchv1.Job) {
		j.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{Succeeded: uids}
	}
}

func newJob(opts ...jobOpt) *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default", UID: "job-uid", Generation: 1},
		Spec: batchv1.JobSpec{
			Completions: ptr(int32(1)), Parallelism: ptr(int32(1)), BackoffLimit: ptr(int32(6)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: "job-uid"}},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{batchv1.ControllerUidLabel: "job-uid", batchv1.JobNameLabel: "pi"}},
				Spec:       v1.PodSpec{RestartPolicy: v1.RestartPolicyNever, Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
	for _, o := range opts {
		o(j)
	}
	return j
}

type podOpt func(*v1.Pod)

func phase(ph v1.PodPhase) podOpt { return func(p *v1.Pod) { p.Status.Phase = ph } }
func tracked() podOpt {
	return func(p *v1.Pod) { p.Finalizers = []string{batchv1.JobTrackingFinalizer} }
}

func newPod(job *batchv1.Job, name string, opts ...podOpt) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "default", UID: types.UID("uid-" + name), Labels: job.Spec.Template.Labels,
		OwnerReferences: []metav1.OwnerReference{*controllerutil.NewControllerRef(job, controllerKind)},
	}}
	p.Spec.NodeName = "n1"
	p.Status.Phase = v1.PodRunning
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
	c, err := New(slog.New(slog.NewTextHandler(io.Discard, nil)), client, rec, factory.Batch().V1().Jobs(), factory.Core().V1().Pods())
	if err != nil {
		t.Fatal(err)
	}
	c.now = func() time.Time { return now }
	for _, o := range objs {
		switch o := o.(type) {
		case *batchv1.Job:
			factory.Batch().V1().Jobs().Informer().GetIndexer().Add(o)
		case *v1.Pod:
			factory.Core().V1().Pods().Informer().GetIndexer().Add(o)
		}
	}
	client.ClearActions()
	return &fixture{client: client, recorder: rec, c: c}
}

func (f *fixture) sync(t *testing.T) *batchv1.Job {
	t.Helper()
	if err := f.c.sync(context.Background(), "default/pi"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	job, err := f.client.BatchV1().Jobs("default").Get(context.Background(), "pi", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return job
}

func (f *fixture) hasEvent(prefix string) bool {
	return slices.ContainsFunc(f.recorder.Events(), func(e string) bool { return strings.HasPrefix(e, prefix) })
}

func createdPods(actions []clienttesting.Action) []*v1.Pod {
	var out []*v1.Pod
	for _, a := range actions {
		if c, ok := a.(clienttesting.CreateAction); ok && a.GetResource().Resource == "pods" {
			out = append(out, c.GetObject().(*v1.Pod))
		}
	}
	return out
}

func condition(job *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range job.Status.Conditions {
		if job.Status.Conditions[i].Type == t {
			return &job.Status.Conditions[i]
		}
	}
	return nil
}

func TestSyncCreatesParallelismPodsWithTheTrackingFinalizer(t *testing.T) {
	f := newFixture(t, newJob(completions(5), parallelism(2)))
	job := f.sync(t)
	pods := createdPods(f.client.Actions())
	if len(pods) != 2 {
		t.Fatalf("created %d pods, want parallelism 2", len(pods))
	}
	for _, p := range pods {
		if !slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
			t.Errorf("pod %s lacks the job-tracking finalizer: %v", p.Name, p.Finalizers)
		}
		if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != "job-uid" || ref.Kind != "Job" {
			t.Errorf("pod %s controller %+v", p.Name, ref)
		}
		if p.GenerateName != "pi-" {
			t.Errorf("generateName %q", p.GenerateName)
		}
	}
	if job.Status.Active != 2 || job.Status.StartTime == nil {
		t.Errorf("status %+v, want 2 active and a start time", job.Status)
	}
	if !f.hasEvent("Normal SuccessfulCreate Created pod: pi-") {
		t.Errorf("events %v", f.recorder.Events())
	}
}

func TestSyncCreatesOnlyTheMissingCompletions(t *testing.T) {
	j := newJob(completions(3), parallelism(3), counted(2, 0), startedAgo(time.Minute))
	f := newFixture(t, j)
	f.sync(t)
	if n := len(createdPods(f.client.Actions())); n != 1 {
		t.Fatalf("created %d pods, want 1 (3 completions, 2 succeeded)", n)
	}
}

func TestSyncCountsAFinishedPodOnceThroughUncountedTerminatedPods(t *testing.T) {
	j := newJob(startedAgo(time.Minute))
	pod := newPod(j, "a", phase(v1.PodSucceeded), tracked())
	f := newFixture(t, j, pod)
	job := f.sync(t)
	if u := job.Status.UncountedTerminatedPods; u == nil || !slices.Equal(u.Succeeded, []types.UID{"uid-a"}) {
		t.Fatalf("uncountedTerminatedPods = %+v, want the succeeded pod", u)
	}
	if job.Status.Succeeded != 0 {
		t.Errorf("succeeded = %d before the finalizer is gone", job.Status.Succeeded)
	}
	if n := controllertest.CountActions(f.client.Actions(), "patch", "pods", ""); n != 1 {
		t.Errorf("%d pod patches, want 1 removing the finalizer", n)
	}
	got, _ := f.client.CoreV1().Pods("default").Get(context.Background(), "a", metav1.GetOptions{})
	if len(got.Finalizers) != 0 {
		t.Errorf("finalizers %v after the sync", got.Finalizers)
	}
	if condition(job, batchv1.JobComplete) != nil {
		t.Error("complete before the pod is counted")
	}
}

func TestSyncCompletesOnceCounted(t *testing.T) {
	j := newJob(startedAgo(time.Minute), uncountedSucceeded("uid-a"))
	pod := newPod(j, "a", phase(v1.PodSucceeded))
	f := newFixture(t, j, pod)
	job := f.sync(t)
	if job.Status.Succeeded != 1 || job.Status.Active != 0 {
		t.Fatalf("status %+v, want 1 succeeded", job.Status)
	}
	for _, ct := range []batchv1.JobConditionType{batchv1.JobSuccessCriteriaMet, batchv1.JobComplete} {
		c := condition(job, ct)
		if c == nil || c.Status != v1.ConditionTrue || c.Reason != "CompletionsReached" {
			t.Errorf("%s condition = %+v", ct, c)
		}
	}
	if job.Status.CompletionTime == nil {
		t.Error("no completionTime")
	}
	if len(createdPods(f.client.Actions())) != 0 {
		t.Error("created a pod for a complete job")
	}
	if !f.hasEvent("Normal Completed Job completed") {
		t.Errorf("events %v", f.recorder.Events())
	}
}

func TestSyncFailsPastTheBackoffLimit(t *testing.T) {
	j := newJob(completions(2), parallelism(2), backoffLimit(1), counted(0, 2), startedAgo(time.Minute))
	running := newPod(j, "running", tracked())
	f := newFixture(t, j, running)
	job := f.sync(t)
	target := condition(job, batchv1.JobFailureTarget)
	if target == nil || target.Reason != "BackoffLimitExceeded" || target.Message != "Job has reached the specified backoff limit" {
		t.Fatalf("FailureTarget = %+v", target)
	}
	if condition(job, batchv1.JobFailed) != nil {
		t.Error("Failed before the active pod is gone")
	}
	if n := controllertest.CountActions(f.client.Actions(), "delete", "pods", ""); n != 1 {
		t.Errorf("%d pod deletions, want the active pod deleted", n)
	}
	if !f.hasEvent("Normal SuccessfulDelete Deleted pod: running") {
		t.Errorf("events %v", f.recorder.Events())
	}

	// Once no pod is left, the job fails.
	j2 := newJob(completions(2), parallelism(2), backoffLimit(1), counted(0, 3), startedAgo(time.Minute))
	j2.Status.Conditions = job.Status.Conditions
	f = newFixture(t, j2)
	job = f.sync(t)
	if c := condition(job, batchv1.JobFailed); c == nil || c.Reason != "BackoffLimitExceeded" {
		t.Fatalf("Failed = %+v", c)
	}
	if !f.hasEvent("Warning BackoffLimitExceeded Job has reached the specified backoff limit") {
		t.Errorf("events %v", f.recorder.Events())
	}
	if len(createdPods(f.client.Actions())) != 0 {
		t.Error("created a pod for a failed job")
	}
}

func TestSyncFailsPastTheActiveDeadline(t *testing.T) {
	f := newFixture(t, newJob(deadline(10), startedAgo(11*time.Second)))
	f.sync(t)
	job := f.sync(t)
	if c := condition(job, batchv1.JobFailed); c == nil || c.Reason != "DeadlineExceeded" || c.Message != "Job was active longer than specified deadline" {
		t.Fatalf("Failed = %+v", c)
	}
	if !f.hasEvent("Warning DeadlineExceeded") {
		t.Errorf("events %v", f.recorder.Events())
	}
}

func TestSyncWaitsOutTheFailureBackoff(t *testing.T) {
	j := newJob(startedAgo(time.Minute))
	failed := newPod(j, "failed", phase(v1.PodFailed), tracked())
	f := newFixture(t, j, failed)
	job := f.sync(t)
	if u := job.Status.UncountedTerminatedPods; u == nil || len(u.Failed) != 1 {
		t.Fatalf("uncounted = %+v, want the failed pod", u)
	}
	if n := len(createdPods(f.client.Actions())); n != 0 {
		t.Fatalf("created %d pods right after a failure, want to wait %s", n, DefaultPodFailureBackOff)
	}
	if wait := f.c.remainingBackoff("default/pi"); wait != DefaultPodFailureBackOff {
		t.Errorf("backoff %s, want %s", wait, DefaultPodFailureBackOff)
	}
	f.c.recordBackoff("default/pi", 0, 1)
	if wait := f.c.remainingBackoff("default/pi"); wait != 2*DefaultPodFailureBackOff {
		t.Errorf("backoff after a second failure %s, want %s", wait, 2*DefaultPodFailureBackOff)
	}
}

func TestSyncSuspendedJobDeletesItsPods(t *testing.T) {
	j := newJob(suspend(), startedAgo(time.Minute))
	f := newFixture(t, j, newPod(j, "a", tracked()))
	job := f.sync(t)
	if n := controllertest.CountActions(f.client.Actions(), "delete", "pods", ""); n != 1 {
		t.Errorf("%d deletions, want the active pod deleted", n)
	}
	if c := condition(job, batchv1.JobSuspended); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("Suspended = %+v", c)
	}
}

func TestSyncOrphanPodLosesItsFinalizer(t *testing.T) {
	gone := newJob()
	pod := newPod(gone, "orphan", phase(v1.PodSucceeded), tracked())
	f := newFixture(t, pod)
	if err := f.c.syncKey(context.Background(), orphanPrefix+"default/orphan"); err != nil {
		t.Fatal(err)
	}
	got, _ := f.client.CoreV1().Pods("default").Get(context.Background(), "orphan", metav1.GetOptions{})
	if len(got.Finalizers) != 0 {
		t.Errorf("finalizers %v on a pod whose job is gone", got.Finalizers)
	}
}

func TestSyncDeletesAFinishedJobAfterItsTTL(t *testing.T) {
	for _, tt := range []struct {
		name       string
		ttl        int32
		wantDelete bool
	}{{name: "ttl passed", ttl: 10, wantDelete: true}, {name: "ttl not yet passed", ttl: 60}} {
		t.Run(tt.name, func(t *testing.T) {
			j := newJob(startedAgo(time.Minute), counted(1, 0))
			j.Spec.TTLSecondsAfterFinished = &tt.ttl
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-20 * time.Second))}}
			f := newFixture(t, j)
			if err := f.c.sync(context.Background(), "default/pi"); err != nil {
				t.Fatal(err)
			}
			var deletes []clienttesting.DeleteActionImpl
			for _, a := range f.client.Actions() {
				if d, ok := a.(clienttesting.DeleteActionImpl); ok && a.GetResource().Resource == "jobs" {
					deletes = append(deletes, d)
				}
			}
			if (len(deletes) == 1) != tt.wantDelete {
				t.Fatalf("%d job deletions, want delete=%v", len(deletes), tt.wantDelete)
			}
			if tt.wantDelete {
				if p := deletes[0].DeleteOptions.PropagationPolicy; p == nil || *p != metav1.DeletePropagationForeground {
					t.Errorf("propagation %v, want Foreground", p)
				}
			}
		})
	}
}

func TestSyncOnFailureCountsContainerRestarts(t *testing.T) {
	for _, tt := range []struct {
		name     string
		restarts int32
		wantFail bool
	}{{name: "below the limit", restarts: 1}, {name: "at the limit", restarts: 2, wantFail: true}} {
		t.Run(tt.name, func(t *testing.T) {
			j := newJob(backoffLimit(2), startedAgo(time.Minute))
			j.Spec.Template.Spec.RestartPolicy = v1.RestartPolicyOnFailure
			pod := newPod(j, "restarting", tracked())
			pod.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "c", RestartCount: tt.restarts}}
			job := newFixture(t, j, pod).sync(t)
			if got := condition(job, batchv1.JobFailureTarget) != nil; got != tt.wantFail {
				t.Fatalf("FailureTarget set = %v, want %v (conditions %+v)", got, tt.wantFail, job.Status.Conditions)
			}
		})
	}
}

func TestSyncPodOrphanedByItsJobLosesItsFinalizer(t *testing.T) {
	pod := newPod(newJob(), "released", tracked())
	pod.OwnerReferences = nil
	f := newFixture(t, pod)
	if err := f.c.syncKey(context.Background(), orphanPrefix+"default/released"); err != nil {
		t.Fatal(err)
	}
	got, _ := f.client.CoreV1().Pods("default").Get(context.Background(), "released", metav1.GetOptions{})
	if len(got.Finalizers) != 0 {
		t.Errorf("finalizers %v on a pod without a controller", got.Finalizers)
	}
}
