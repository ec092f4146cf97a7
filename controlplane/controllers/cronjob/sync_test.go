package cronjob

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllertest"
)

type fixture struct {
	t        *testing.T
	c        *Controller
	recorder *controllertest.Recorder
	client   interface {
		Actions() []clienttesting.Action
	}
	get func() *batchv1.CronJob
}

// newFixture builds the controller at now over a fake clientset and
// informers holding cj and jobs.
func newFixture(t *testing.T, now string, cj *batchv1.CronJob, jobs ...*batchv1.Job) *fixture {
	t.Helper()
	objs := []runtime.Object{cj}
	for _, j := range jobs {
		objs = append(objs, j)
	}
	client := controllertest.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	rec := &controllertest.Recorder{}
	c, err := New(slog.New(slog.NewTextHandler(io.Discard, nil)), client, rec, factory.Batch().V1().CronJobs(), factory.Batch().V1().Jobs(), clocktesting.NewFakeClock(at(now)))
	if err != nil {
		t.Fatal(err)
	}
	factory.Batch().V1().CronJobs().Informer().GetIndexer().Add(cj)
	for _, j := range jobs {
		factory.Batch().V1().Jobs().Informer().GetIndexer().Add(j)
	}
	client.ClearActions()
	return &fixture{t: t, c: c, recorder: rec, client: client, get: func() *batchv1.CronJob {
		got, err := client.BatchV1().CronJobs(cj.Namespace).Get(context.Background(), cj.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}}
}

func (f *fixture) sync() {
	f.t.Helper()
	if err := f.c.sync(context.Background(), "default/tick"); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
}

// actions lists "verb resource[/sub] name" of the writes made.
func (f *fixture) actions() []string {
	var out []string
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "get" || a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		res := a.GetResource().Resource
		if a.GetSubresource() != "" {
			res += "/" + a.GetSubresource()
		}
		name := ""
		switch a := a.(type) {
		case clienttesting.CreateAction:
			name = a.GetObject().(interface{ GetName() string }).GetName()
		case clienttesting.DeleteAction:
			name = a.GetName()
		}
		out = append(out, strings.TrimSpace(a.GetVerb()+" "+res+" "+name))
	}
	return out
}

func (f *fixture) reasons() []string {
	var out []string
	for _, e := range f.recorder.Events() {
		out = append(out, strings.Fields(e)[1])
	}
	return out
}

func ownedJob(cj *batchv1.CronJob, name string, started string, condition batchv1.JobConditionType) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, controllerKind)}}}
	if started != "" {
		j.Status.StartTime = &metav1.Time{Time: at(started)}
	}
	if condition != "" {
		j.Status.Conditions = []batchv1.JobCondition{{Type: condition, Status: corev1.ConditionTrue}}
		if condition == batchv1.JobComplete {
			j.Status.CompletionTime = &metav1.Time{Time: at(started).Add(10 * time.Second)}
		}
	}
	return j
}

func active(jobs ...*batchv1.Job) func(*batchv1.CronJob) {
	return func(cj *batchv1.CronJob) {
		for _, j := range jobs {
			cj.Status.Active = append(cj.Status.Active, corev1.ObjectReference{Kind: "Job", Namespace: j.Namespace, Name: j.Name, UID: j.UID})
		}
	}
}

func policy(p batchv1.ConcurrencyPolicy) func(*batchv1.CronJob) {
	return func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = p }
}

func TestAllowCreatesTheJobDueAndRecordsIt(t *testing.T) {
	cj := cronJobAt("*/1 * * * *", "2026-12-04T10:00:30Z")
	f := newFixture(t, "2026-12-04T10:01:05Z", cj)
	f.sync()
	want := []string{"create jobs tick-29939641", "update cronjobs/status tick"}
	if got := f.actions(); !slices.Equal(got, want) {
		t.Fatalf("actions = %v, want %v", got, want)
	}
	got := f.get()
	if len(got.Status.Active) != 1 || got.Status.Active[0].Name != "tick-29939641" || !got.Status.LastScheduleTime.Time.Equal(at("2026-12-04T10:01:00Z")) {
		t.Errorf("status = %+v", got.Status)
	}
	if r := f.reasons(); !slices.Equal(r, []string{"SuccessfulCreate"}) {
		t.Errorf("events = %v", f.recorder.Events())
	}
}

func TestConcurrencyPolicies(t *testing.T) {
	cj := cronJobAt("*/1 * * * *", "2026-12-04T10:00:30Z")
	running := ownedJob(cj, "tick-29939640", "2026-12-04T10:00:00Z", "")
	for _, tc := range []struct {
		name    string
		policy  batchv1.ConcurrencyPolicy
		actions []string
		reasons []string
	}{
		{"Allow starts beside the running job", batchv1.AllowConcurrent, []string{"create jobs tick-29939641", "update cronjobs/status tick"}, []string{"SuccessfulCreate"}},
		{"Forbid skips while one runs", batchv1.ForbidConcurrent, nil, []string{"JobAlreadyActive"}},
		{"Replace deletes the running job first", batchv1.ReplaceConcurrent,
			[]string{"delete jobs tick-29939640", "create jobs tick-29939641", "update cronjobs/status tick"}, []string{"SuccessfulDelete", "SuccessfulCreate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cj := cronJobAt("*/1 * * * *", "2026-12-04T10:00:30Z", policy(tc.policy), active(running))
			cj.Status.LastScheduleTime = &metav1.Time{Time: at("2026-12-04T10:00:00Z")}
			f := newFixture(t, "2026-12-04T10:01:05Z", cj, running.DeepCopy())
			f.sync()
			if got := f.actions(); !slices.Equal(got, tc.actions) {
				t.Errorf("actions = %v, want %v", got, tc.actions)
			}
			if got := f.reasons(); !slices.Equal(got, tc.reasons) {
				t.Errorf("events = %v, want reasons %v", f.recorder.Events(), tc.reasons)
			}
		})
	}
}

func TestSuspendedCreatesNothing(t *testing.T) {
	yes := true
	cj := cronJobAt("*/1 * * * *", "2026-12-04T10:00:30Z", func(cj *batchv1.CronJob) { cj.Spec.Suspend = &yes })
	f := newFixture(t, "2026-12-04T10:05:05Z", cj)
	f.sync()
	if got := f.actions(); len(got) != 0 {
		t.Errorf("a suspended cron job wrote %v", got)
	}
}

func TestTooManyMissedStartsTheLatestAndWarns(t *testing.T) {
	cj := cronJobAt("*/1 * * * *", "2026-12-04T08:00:00Z")
	f := newFixture(t, "2026-12-04T10:00:30Z", cj)
	f.sync()
	if got := f.reasons(); !slices.Equal(got, []string{"TooManyMissedTimes", "SuccessfulCreate"}) {
		t.Errorf("events = %v", f.recorder.Events())
	}
	if got := f.actions(); len(got) == 0 || got[0] != "create jobs tick-29939640" {
		t.Errorf("actions = %v, want the 10:00 job", got)
	}
}

func TestMissedStartingDeadline(t *testing.T) {
	// The 10:01 start is due and seen, but its deadline of 10 s is past.
	cj := cronJobAt("*/1 * * * *", "2026-12-04T10:00:30Z", func(cj *batchv1.CronJob) { d := int64(10); cj.Spec.StartingDeadlineSeconds = &d })
	f := newFixture(t, "2026-12-04T10:01:30Z", cj)
	f.sync()
	if got := f.actions(); len(got) != 0 {
		t.Errorf("actions = %v, want none past the deadline", got)
	}
	f = newFixture(t, "2026-12-04T10:01:08Z", cj)
	f.sync()
	if got := f.actions(); len(got) == 0 || got[0] != "create jobs tick-29939641" {
		t.Errorf("actions = %v, want the 10:01 job within its deadline", got)
	}
}

func TestHistoryPruningAndCompletedJobs(t *testing.T) {
	one := int32(1)
	base := cronJobAt("*/1 * * * *", "2026-12-04T10:00:30Z")
	ok1 := ownedJob(base, "tick-29939641", "2026-12-04T10:01:00Z", batchv1.JobComplete)
	ok2 := ownedJob(base, "tick-29939642", "2026-12-04T10:02:00Z", batchv1.JobComplete)
	ok3 := ownedJob(base, "tick-29939643", "2026-12-04T10:03:00Z", batchv1.JobComplete)
	bad1 := ownedJob(base, "tick-29939644", "2026-12-04T10:04:00Z", batchv1.JobFailed)
	bad2 := ownedJob(base, "tick-29939645", "2026-12-04T10:05:00Z", batchv1.JobFailed)
	cj := cronJobAt("*/1 * * * *", "2026-12-04T10:00:30Z", active(ok3), func(cj *batchv1.CronJob) {
		cj.Spec.SuccessfulJobsHistoryLimit, cj.Spec.FailedJobsHistoryLimit = &one, &one
		cj.Status.LastScheduleTime = &metav1.Time{Time: at("2026-12-04T10:05:00Z")}
	})
	f := newFixture(t, "2026-12-04T10:05:30Z", cj, ok1, ok2, ok3, bad1, bad2)
	f.sync()
	want := []string{"delete jobs tick-29939641", "delete jobs tick-29939642", "delete jobs tick-29939644", "update cronjobs/status tick"}
	if got := f.actions(); !slices.Equal(got, want) {
		t.Errorf("actions = %v, want %v", got, want)
	}
	got := f.get()
	if len(got.Status.Active) != 0 {
		t.Errorf("active = %v, want the completed job gone", got.Status.Active)
	}
	if got.Status.LastSuccessfulTime == nil {
		t.Error("lastSuccessfulTime not set")
	}
	if r := f.reasons(); !slices.Contains(r, "SawCompletedJob") || !slices.Contains(r, "SuccessfulDelete") {
		t.Errorf("events = %v", f.recorder.Events())
	}
}

func TestActiveJobGoneLeavesTheList(t *testing.T) {
	ghost := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "tick-1", Namespace: "default", UID: "gone"}}
	cj := cronJobAt("*/1 * * * *", "2026-12-04T10:00:30Z", active(ghost), func(cj *batchv1.CronJob) {
		cj.Status.LastScheduleTime = &metav1.Time{Time: at("2026-12-04T10:01:00Z")}
	})
	f := newFixture(t, "2026-12-04T10:01:30Z", cj)
	f.sync()
	if got := f.get(); len(got.Status.Active) != 0 {
		t.Errorf("active = %v", got.Status.Active)
	}
	if r := f.reasons(); !slices.Equal(r, []string{"MissingJob"}) {
		t.Errorf("events = %v", f.recorder.Events())
	}
}
