package job

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

func indexed() jobOpt {
	return func(j *batchv1.Job) { j.Spec.CompletionMode = ptr(batchv1.IndexedCompletion) }
}

func withIndex(ix string) podOpt {
	return func(p *v1.Pod) { p.Annotations = map[string]string{batchv1.JobCompletionIndexAnnotation: ix} }
}

func TestCompletedIndexesRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		in   []int
		want string
	}{{nil, ""}, {[]int{0}, "0"}, {[]int{0, 1}, "0,1"}, {[]int{0, 1, 2, 5, 7, 8, 9}, "0-2,5,7-9"}} {
		got := formatIndexes(sets.New(tt.in...))
		if got != tt.want {
			t.Errorf("formatIndexes(%v) = %q, want %q", tt.in, got, tt.want)
		}
		if back := sets.List(parseIndexes(got)); !slices.Equal(back, tt.in) && len(tt.in) > 0 {
			t.Errorf("parseIndexes(%q) = %v, want %v", got, back, tt.in)
		}
	}
}

func TestIndexedJobRunsEachIndexOnce(t *testing.T) {
	j := newJob(indexed(), completions(4), parallelism(2), startedAgo(time.Minute))
	j.Status.CompletedIndexes = "0"
	j.Status.Succeeded = 1
	done := newPod(j, "done", phase(v1.PodSucceeded), tracked(), withIndex("2"))
	running := newPod(j, "running", tracked(), withIndex("1"))
	f := newFixture(t, j, done, running)
	job := f.sync(t)
	if job.Status.CompletedIndexes != "0,2" || job.Status.Succeeded != 2 {
		t.Fatalf("completedIndexes %q succeeded %d, want \"0,2\" and 2", job.Status.CompletedIndexes, job.Status.Succeeded)
	}
	pods := createdPods(f.client.Actions())
	if len(pods) != 1 {
		t.Fatalf("created %d pods, want 1 (parallelism 2, index 1 running)", len(pods))
	}
	p := pods[0]
	if p.Annotations[batchv1.JobCompletionIndexAnnotation] != "3" || p.Labels[batchv1.JobCompletionIndexAnnotation] != "3" ||
		p.Spec.Hostname != "pi-3" || p.GenerateName != "pi-3-" {
		t.Errorf("pod for index 3: annotations %v labels %v hostname %q generateName %q", p.Annotations, p.Labels, p.Spec.Hostname, p.GenerateName)
	}
	env := p.Spec.Containers[0].Env
	if len(env) != 1 || env[0].Name != "JOB_COMPLETION_INDEX" || env[0].ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("env %+v", env)
	}
}

func TestIndexedJobCompletesWhenEveryIndexSucceeded(t *testing.T) {
	j := newJob(indexed(), completions(2), parallelism(2), startedAgo(time.Minute))
	j.Status.CompletedIndexes, j.Status.Succeeded = "0", 1
	f := newFixture(t, j, newPod(j, "last", phase(v1.PodSucceeded), tracked(), withIndex("1")))
	f.sync(t)
	job := f.sync(t)
	if c := condition(job, batchv1.JobComplete); c == nil || job.Status.CompletedIndexes != "0,1" {
		t.Fatalf("completedIndexes %q, Complete %+v", job.Status.CompletedIndexes, c)
	}
	if _, err := f.client.CoreV1().Pods("default").Get(context.Background(), "last", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
}

func backoffLimitPerIndex(n int32) jobOpt {
	return func(j *batchv1.Job) {
		j.Spec.BackoffLimitPerIndex = &n
		j.Spec.BackoffLimit = ptr(int32(math.MaxInt32))
	}
}

func failureCount(n string) podOpt {
	return func(p *v1.Pod) { p.Annotations[batchv1.JobIndexFailureCountAnnotation] = n }
}

func TestBackoffLimitPerIndexRetriesAnIndexWithItsFailureCount(t *testing.T) {
	j := newJob(indexed(), completions(2), parallelism(2), backoffLimitPerIndex(1), startedAgo(time.Minute))
	failed := newPod(j, "failed", phase(v1.PodFailed), tracked(), withIndex("0"), failureCount("0"))
	failed.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	running := newPod(j, "running", tracked(), withIndex("1"), failureCount("0"))
	f := newFixture(t, j, failed, running)
	job := f.sync(t)
	if job.Status.FailedIndexes == nil || *job.Status.FailedIndexes != "" {
		t.Errorf("failedIndexes %v, want \"\"", job.Status.FailedIndexes)
	}
	pods := createdPods(f.client.Actions())
	if len(pods) != 1 {
		t.Fatalf("created %d pods, want index 0 retried", len(pods))
	}
	if a := pods[0].Annotations; a[batchv1.JobCompletionIndexAnnotation] != "0" || a[batchv1.JobIndexFailureCountAnnotation] != "1" {
		t.Errorf("replacement annotations %v, want index 0 with failure count 1", a)
	}
	got, _ := f.client.CoreV1().Pods("default").Get(context.Background(), "failed", metav1.GetOptions{})
	if !slices.Contains(got.Finalizers, batchv1.JobTrackingFinalizer) {
		t.Error("the failed pod lost its finalizer before its replacement was seen")
	}
}

func TestBackoffLimitPerIndexWaitsOutTheIndexBackoff(t *testing.T) {
	j := newJob(indexed(), completions(1), backoffLimitPerIndex(3), startedAgo(time.Minute))
	failed := newPod(j, "failed", phase(v1.PodFailed), tracked(), withIndex("0"), failureCount("1"))
	failed.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "c", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1, FinishedAt: metav1.NewTime(now.Add(-5 * time.Second))}}}}
	f := newFixture(t, j, failed)
	f.sync(t)
	if n := len(createdPods(f.client.Actions())); n != 0 {
		t.Fatalf("created %d pods within the index backoff", n)
	}
	if wait := indexBackoff(failed, now); wait != 2*DefaultPodFailureBackOff-5*time.Second {
		t.Errorf("index backoff %s, want %s for the second failure", wait, 2*DefaultPodFailureBackOff-5*time.Second)
	}
}

func TestBackoffLimitPerIndexFailsTheJob(t *testing.T) {
	for _, tt := range []struct {
		name       string
		opts       []jobOpt
		failed     *v1.Pod
		wantFailed string
		wantReason string
	}{
		{name: "index out of retries, others done", opts: []jobOpt{completions(2)}, wantFailed: "0", wantReason: "FailedIndexes"},
		{name: "more failed indexes than maxFailedIndexes", opts: []jobOpt{completions(4), func(j *batchv1.Job) { j.Spec.MaxFailedIndexes = ptr(int32(0)) }},
			wantFailed: "0", wantReason: "MaxFailedIndexesExceeded"},
		{name: "index failing while others run", opts: []jobOpt{completions(4)}, wantFailed: "0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			j := newJob(append([]jobOpt{indexed(), parallelism(1), backoffLimitPerIndex(1), startedAgo(time.Minute)}, tt.opts...)...)
			j.Status.CompletedIndexes, j.Status.Succeeded = "1", 1
			f := newFixture(t, j, newPod(j, "failed", phase(v1.PodFailed), tracked(), withIndex("0"), failureCount("1")))
			job := f.sync(t)
			if job.Status.FailedIndexes == nil || *job.Status.FailedIndexes != tt.wantFailed {
				t.Fatalf("failedIndexes %v, want %q", job.Status.FailedIndexes, tt.wantFailed)
			}
			c := condition(job, batchv1.JobFailureTarget)
			if tt.wantReason == "" {
				if c != nil {
					t.Fatalf("FailureTarget %+v with indexes left to run", c)
				}
				if pods := createdPods(f.client.Actions()); len(pods) != 1 || pods[0].Annotations[batchv1.JobCompletionIndexAnnotation] != "2" {
					t.Errorf("created %d pods, want index 2 next (0 failed, 1 done)", len(pods))
				}
				return
			}
			if c == nil || c.Reason != tt.wantReason {
				t.Fatalf("FailureTarget %+v, want %s", c, tt.wantReason)
			}
			j2 := j.DeepCopy()
			j2.Status = job.Status
			job = newFixture(t, j2, newPod(j, "failed", phase(v1.PodFailed), withIndex("0"))).sync(t)
			if c := condition(job, batchv1.JobFailed); c == nil || c.Reason != tt.wantReason || job.Status.Failed != 1 {
				t.Fatalf("Failed %+v (failed %d), want %s once the pod is counted", c, job.Status.Failed, tt.wantReason)
			}
		})
	}
}

func TestFailIndexActionFailsTheIndexAtOnce(t *testing.T) {
	j := newJob(indexed(), completions(2), parallelism(2), backoffLimitPerIndex(5), startedAgo(time.Minute),
		podFailurePolicy(onExitCodes(batchv1.PodFailurePolicyActionFailIndex, batchv1.PodFailurePolicyOnExitCodesOpIn, 3)))
	failed := newPod(j, "failed", phase(v1.PodFailed), exitCode(3), tracked(), withIndex("1"), failureCount("0"))
	running := newPod(j, "running", tracked(), withIndex("0"), failureCount("0"))
	f := newFixture(t, j, failed, running)
	job := f.sync(t)
	if job.Status.FailedIndexes == nil || *job.Status.FailedIndexes != "1" {
		t.Fatalf("failedIndexes %v, want \"1\"", job.Status.FailedIndexes)
	}
	if n := len(createdPods(f.client.Actions())); n != 0 {
		t.Errorf("created %d pods, want the failed index not retried", n)
	}
	if u := job.Status.UncountedTerminatedPods; u == nil || len(u.Failed) != 1 {
		t.Errorf("uncounted %+v, want the failure counted", u)
	}
}
