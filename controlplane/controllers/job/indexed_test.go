package job

import (
	"context"
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
