package job

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllertest"
)

func podFailurePolicy(rules ...batchv1.PodFailurePolicyRule) jobOpt {
	return func(j *batchv1.Job) {
		j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: rules}
		j.Spec.PodReplacementPolicy = ptr(batchv1.Failed)
	}
}

func onExitCodes(action batchv1.PodFailurePolicyAction, op batchv1.PodFailurePolicyOnExitCodesOperator, codes ...int32) batchv1.PodFailurePolicyRule {
	return batchv1.PodFailurePolicyRule{Action: action, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: op, Values: codes}}
}

func onCondition(action batchv1.PodFailurePolicyAction, t v1.PodConditionType) batchv1.PodFailurePolicyRule {
	return batchv1.PodFailurePolicyRule{Action: action, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: t, Status: v1.ConditionTrue}}}
}

func exitCode(code int32) podOpt {
	return func(p *v1.Pod) {
		p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "c", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}}
	}
}

func podCondition(t v1.PodConditionType) podOpt {
	return func(p *v1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: t, Status: v1.ConditionTrue})
	}
}

func TestMatchPodFailurePolicy(t *testing.T) {
	failJob := onExitCodes(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpIn, 42)
	ignoreDisruption := onCondition(batchv1.PodFailurePolicyActionIgnore, v1.DisruptionTarget)
	countOthers := onExitCodes(batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyOnExitCodesOpNotIn, 42)
	j := newJob()
	for _, tt := range []struct {
		name       string
		rules      []batchv1.PodFailurePolicyRule
		pod        *v1.Pod
		wantMsg    string
		wantCounts bool
		wantAction batchv1.PodFailurePolicyAction
	}{
		{name: "exit code matches FailJob", rules: []batchv1.PodFailurePolicyRule{ignoreDisruption, failJob}, pod: newPod(j, "a", phase(v1.PodFailed), exitCode(42)),
			wantMsg: "Container c for pod default/a failed with exit code 42 matching FailJob rule at index 1", wantCounts: true, wantAction: batchv1.PodFailurePolicyActionFailJob},
		{name: "condition matches Ignore", rules: []batchv1.PodFailurePolicyRule{ignoreDisruption, failJob}, pod: newPod(j, "a", phase(v1.PodFailed), exitCode(42), podCondition(v1.DisruptionTarget)),
			wantAction: batchv1.PodFailurePolicyActionIgnore},
		{name: "NotIn matches Count", rules: []batchv1.PodFailurePolicyRule{failJob, countOthers}, pod: newPod(j, "a", phase(v1.PodFailed), exitCode(1)),
			wantCounts: true, wantAction: batchv1.PodFailurePolicyActionCount},
		{name: "exit code 0 never matches", rules: []batchv1.PodFailurePolicyRule{countOthers}, pod: newPod(j, "a", phase(v1.PodFailed), exitCode(0)), wantCounts: true},
		{name: "FailJob on a condition", rules: []batchv1.PodFailurePolicyRule{onCondition(batchv1.PodFailurePolicyActionFailJob, v1.DisruptionTarget)}, pod: newPod(j, "a", phase(v1.PodFailed), podCondition(v1.DisruptionTarget)),
			wantMsg: "Pod default/a has condition DisruptionTarget matching FailJob rule at index 0", wantCounts: true, wantAction: batchv1.PodFailurePolicyActionFailJob},
	} {
		t.Run(tt.name, func(t *testing.T) {
			msg, counts, action := matchPodFailurePolicy(&batchv1.PodFailurePolicy{Rules: tt.rules}, tt.pod)
			var got batchv1.PodFailurePolicyAction
			if action != nil {
				got = *action
			}
			if msg != tt.wantMsg || counts != tt.wantCounts || got != tt.wantAction {
				t.Errorf("got (%q, %v, %q), want (%q, %v, %q)", msg, counts, got, tt.wantMsg, tt.wantCounts, tt.wantAction)
			}
		})
	}
}

func TestSyncPodFailurePolicyFailJobFailsTheJob(t *testing.T) {
	j := newJob(completions(2), parallelism(2), startedAgo(time.Minute),
		podFailurePolicy(onExitCodes(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpIn, 42)))
	failed := newPod(j, "failed", phase(v1.PodFailed), exitCode(42), tracked())
	running := newPod(j, "running", tracked())
	f := newFixture(t, j, failed, running)
	job := f.sync(t)
	wantMsg := "Container c for pod default/failed failed with exit code 42 matching FailJob rule at index 0"
	target := condition(job, batchv1.JobFailureTarget)
	if target == nil || target.Reason != "PodFailurePolicy" || target.Message != wantMsg {
		t.Fatalf("FailureTarget = %+v", target)
	}
	if n := controllertest.CountActions(f.client.Actions(), "delete", "pods", ""); n != 1 {
		t.Errorf("%d pod deletions, want the running pod deleted", n)
	}
	if condition(job, batchv1.JobFailed) != nil {
		t.Error("Failed while a pod is still running")
	}

	// Once the pods are gone and counted, the job fails with the same reason.
	j2 := newJob(completions(2), parallelism(2), startedAgo(time.Minute), counted(0, 2))
	j2.Spec.PodFailurePolicy = j.Spec.PodFailurePolicy
	j2.Status.Conditions = job.Status.Conditions
	f = newFixture(t, j2)
	job = f.sync(t)
	if c := condition(job, batchv1.JobFailed); c == nil || c.Reason != "PodFailurePolicy" || c.Message != wantMsg {
		t.Fatalf("Failed = %+v", c)
	}
	if !f.hasEvent("Warning PodFailurePolicy " + wantMsg) {
		t.Errorf("events %v", f.recorder.Events())
	}
}

func TestSyncPodFailurePolicyIgnoreDoesNotCount(t *testing.T) {
	j := newJob(backoffLimit(0), startedAgo(time.Minute),
		podFailurePolicy(onCondition(batchv1.PodFailurePolicyActionIgnore, v1.DisruptionTarget)))
	evicted := newPod(j, "evicted", phase(v1.PodFailed), exitCode(137), podCondition(v1.DisruptionTarget), tracked())
	f := newFixture(t, j, evicted)
	job := f.sync(t)
	if job.Status.Failed != 0 || (job.Status.UncountedTerminatedPods != nil && len(job.Status.UncountedTerminatedPods.Failed) != 0) {
		t.Fatalf("status %+v, want the ignored failure uncounted", job.Status)
	}
	if condition(job, batchv1.JobFailureTarget) != nil {
		t.Fatalf("conditions %+v, want no failure with backoffLimit 0", job.Status.Conditions)
	}
	got, _ := f.client.CoreV1().Pods("default").Get(context.Background(), "evicted", metav1.GetOptions{})
	if len(got.Finalizers) != 0 {
		t.Errorf("finalizers %v on the ignored pod", got.Finalizers)
	}
	if n := len(createdPods(f.client.Actions())); n != 1 {
		t.Errorf("created %d pods, want the ignored pod replaced at once", n)
	}
}

func TestSyncPodFailurePolicyCountCountsTheFailure(t *testing.T) {
	j := newJob(backoffLimit(0), startedAgo(time.Minute),
		podFailurePolicy(onExitCodes(batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyOnExitCodesOpIn, 1)))
	f := newFixture(t, j, newPod(j, "failed", phase(v1.PodFailed), exitCode(1), tracked()))
	job := f.sync(t)
	if u := job.Status.UncountedTerminatedPods; u == nil || len(u.Failed) != 1 {
		t.Fatalf("uncounted %+v, want the failure counted", u)
	}
	if c := condition(job, batchv1.JobFailureTarget); c == nil || c.Reason != "BackoffLimitExceeded" {
		t.Errorf("FailureTarget = %+v", c)
	}
}

func TestMatchSuccessPolicy(t *testing.T) {
	for _, tt := range []struct {
		name      string
		rules     []batchv1.SuccessPolicyRule
		succeeded []int
		wantMsg   string
	}{
		{name: "indexes all succeeded", rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr("0,2-3")}}, succeeded: []int{0, 1, 2, 3}, wantMsg: "Matched rules at index 0"},
		{name: "indexes missing one", rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr("0,2-3")}}, succeeded: []int{0, 1, 2}},
		{name: "count among indexes", rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr("1-3")}, {SucceededIndexes: ptr("0-3"), SucceededCount: ptr(int32(2))}}, succeeded: []int{0, 3}, wantMsg: "Matched rules at index 1"},
		{name: "count alone", rules: []batchv1.SuccessPolicyRule{{SucceededCount: ptr(int32(2))}}, succeeded: []int{4, 5}, wantMsg: "Matched rules at index 0"},
		{name: "count alone not reached", rules: []batchv1.SuccessPolicyRule{{SucceededCount: ptr(int32(3))}}, succeeded: []int{4, 5}},
		{name: "nothing succeeded", rules: []batchv1.SuccessPolicyRule{{SucceededCount: ptr(int32(0))}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			msg, ok := matchSuccessPolicy(&batchv1.SuccessPolicy{Rules: tt.rules}, 6, sets.New(tt.succeeded...))
			if msg != tt.wantMsg || ok != (tt.wantMsg != "") {
				t.Errorf("got (%q, %v), want %q", msg, ok, tt.wantMsg)
			}
		})
	}
}

func TestSyncSuccessPolicyEndsTheJobEarly(t *testing.T) {
	for _, tt := range []struct {
		name string
		rule batchv1.SuccessPolicyRule
	}{
		{name: "succeededIndexes", rule: batchv1.SuccessPolicyRule{SucceededIndexes: ptr("0")}},
		{name: "succeededCount", rule: batchv1.SuccessPolicyRule{SucceededCount: ptr(int32(1))}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			j := newJob(indexed(), completions(3), parallelism(2), startedAgo(time.Minute))
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{tt.rule}}
			done := newPod(j, "done", phase(v1.PodSucceeded), tracked(), withIndex("0"))
			running := newPod(j, "running", tracked(), withIndex("1"), podCondition(v1.PodReady))
			f := newFixture(t, j, done, running)
			job := f.sync(t)
			c := condition(job, batchv1.JobSuccessCriteriaMet)
			if c == nil || c.Reason != "SuccessPolicy" || c.Message != "Matched rules at index 0" {
				t.Fatalf("SuccessCriteriaMet = %+v", c)
			}
			if n := controllertest.CountActions(f.client.Actions(), "delete", "pods", ""); n != 1 {
				t.Errorf("%d pod deletions, want the running pod deleted", n)
			}
			if n := len(createdPods(f.client.Actions())); n != 0 {
				t.Errorf("created %d pods after the success policy was met", n)
			}
			if job.Status.Active != 0 || *job.Status.Ready != 0 || *job.Status.Terminating != 1 {
				t.Errorf("active %d ready %d terminating %d, want the running pod terminating", job.Status.Active, *job.Status.Ready, *job.Status.Terminating)
			}

			// Once the pods are gone, the job completes for the same reason.
			j2 := j.DeepCopy()
			j2.Status = job.Status
			job = newFixture(t, j2).sync(t)
			if c := condition(job, batchv1.JobComplete); c == nil || c.Reason != "SuccessPolicy" || c.Message != "Matched rules at index 0" {
				t.Fatalf("Complete = %+v", c)
			}
		})
	}
}

func TestSyncPodFailurePolicyWaitsForTerminatingPodsToFail(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts []jobOpt
	}{
		{name: "NonIndexed"},
		{name: "Indexed", opts: []jobOpt{indexed()}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			j := newJob(append(tt.opts, completions(2), parallelism(2), startedAgo(time.Minute),
				podFailurePolicy(onCondition(batchv1.PodFailurePolicyActionIgnore, v1.DisruptionTarget)))...)
			evicted := newPod(j, "evicted", tracked(), withIndex("0"), podCondition(v1.DisruptionTarget))
			evicted.DeletionTimestamp = &metav1.Time{Time: now}
			running := newPod(j, "running", tracked(), withIndex("1"))
			f := newFixture(t, j, evicted, running)
			job := f.sync(t)
			if n := len(createdPods(f.client.Actions())); n != 0 {
				t.Errorf("created %d pods, want none while the evicted pod terminates (podReplacementPolicy Failed)", n)
			}
			if job.Status.Terminating == nil || *job.Status.Terminating != 1 || job.Status.Active != 1 {
				t.Errorf("terminating %v active %d, want 1 and 1", job.Status.Terminating, job.Status.Active)
			}
		})
	}
}
