package admission

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// createdJob is a job as `kubectl create job pi --image=busybox` sends
// it, after the defaulting plugin ran with the uid the server set.
func createdJob(t *testing.T, mutate func(*batchv1.Job)) *batchv1.Job {
	t.Helper()
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default", UID: "1234"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "pi", Image: "busybox"}},
		}}},
	}
	if mutate != nil {
		mutate(j)
	}
	if err := NewDefaultValues().Admit(context.Background(), &Attributes{Operation: Create, Object: j}); err != nil {
		t.Fatal(err)
	}
	return j
}

func TestDefaultJobAsKubernetes(t *testing.T) {
	j := createdJob(t, nil)
	s := j.Spec
	if *s.Completions != 1 || *s.Parallelism != 1 || *s.BackoffLimit != 6 || *s.CompletionMode != batchv1.NonIndexedCompletion ||
		*s.Suspend || *s.ManualSelector || *s.PodReplacementPolicy != batchv1.TerminatingOrFailed {
		t.Errorf("spec defaults = completions %d parallelism %d backoffLimit %d mode %s suspend %v manualSelector %v replacement %s",
			*s.Completions, *s.Parallelism, *s.BackoffLimit, *s.CompletionMode, *s.Suspend, *s.ManualSelector, *s.PodReplacementPolicy)
	}
	want := map[string]string{"batch.kubernetes.io/controller-uid": "1234", "controller-uid": "1234", "batch.kubernetes.io/job-name": "pi", "job-name": "pi"}
	for k, v := range want {
		if s.Template.Labels[k] != v || j.Labels[k] != v {
			t.Errorf("label %s: template %q, job %q, want %q", k, s.Template.Labels[k], j.Labels[k], v)
		}
	}
	if len(s.Selector.MatchLabels) != 1 || s.Selector.MatchLabels["batch.kubernetes.io/controller-uid"] != "1234" {
		t.Errorf("selector = %v", s.Selector)
	}
	if errs := Validate(j, nil); len(errs) != 0 {
		t.Errorf("defaulted job is invalid: %v", errs)
	}

	parallel := createdJob(t, func(j *batchv1.Job) { j.Spec.Parallelism = ptrTo(int32(3)) })
	if parallel.Spec.Completions != nil {
		t.Errorf("completions = %d for a job that sets only parallelism, want unset (a work queue)", *parallel.Spec.Completions)
	}
}

func TestValidateWorkloads(t *testing.T) {
	ds := func(mutate func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
		d := &appsv1.DaemonSet{
			ObjectMeta: metaNS("agent", "default"),
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
				},
			},
		}
		mutate(d)
		Default(d)
		return d
	}
	tests := []struct {
		name string
		errs []string
		obj  func(t *testing.T) any
	}{
		{name: "job restartPolicy Always", errs: []string{`spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"`},
			obj: func(t *testing.T) any {
				return createdJob(t, func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways })
			}},
		{name: "job negative counts", errs: []string{"spec.parallelism: Invalid value: -1: must be greater than or equal to 0", "spec.backoffLimit: Invalid value: -2: must be greater than or equal to 0"},
			obj: func(t *testing.T) any {
				return createdJob(t, func(j *batchv1.Job) { j.Spec.Parallelism, j.Spec.BackoffLimit = ptrTo(int32(-1)), ptrTo(int32(-2)) })
			}},
		{name: "job selecting another job's pods", errs: []string{
			"spec.selector.matchLabels[batch.kubernetes.io/controller-uid]: Invalid value: \"other\": must be '1234'",
			"spec.template.metadata.labels: Invalid value: {\"batch.kubernetes.io/controller-uid\":\"1234\",\"batch.kubernetes.io/job-name\":\"pi\",\"controller-uid\":\"1234\",\"job-name\":\"pi\"}: `selector` does not match template `labels`",
		},
			obj: func(t *testing.T) any {
				return createdJob(t, func(j *batchv1.Job) {
					j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "other"}}
				})
			}},
		{name: "daemon set restartPolicy Never", errs: []string{`spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"`},
			obj: func(t *testing.T) any {
				return ds(func(d *appsv1.DaemonSet) { d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever })
			}},
		{name: "daemon set selector not matching", errs: []string{"spec.template.metadata.labels: Invalid value: {\"app\":\"other\"}: `selector` does not match template `labels`"},
			obj: func(t *testing.T) any {
				return ds(func(d *appsv1.DaemonSet) { d.Spec.Template.Labels = map[string]string{"app": "other"} })
			}},
		{name: "daemon set with nothing unavailable and no surge", errs: []string{"spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"},
			obj: func(t *testing.T) any {
				return ds(func(d *appsv1.DaemonSet) {
					d.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptrTo(intstr.FromInt32(0))}
				})
			}},
		{name: "valid daemon set", obj: func(t *testing.T) any { return ds(func(*appsv1.DaemonSet) {}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			switch o := tt.obj(t).(type) {
			case *batchv1.Job:
				for _, e := range Validate(o, nil) {
					got = append(got, e.Error())
				}
			case *appsv1.DaemonSet:
				for _, e := range Validate(o, nil) {
					got = append(got, e.Error())
				}
			}
			if strings.Join(got, "\n") != strings.Join(tt.errs, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.errs, "\n"))
			}
		})
	}
}

func TestValidateJobUpdateKeepsTheTemplate(t *testing.T) {
	old := createdJob(t, nil)
	old.ResourceVersion = "7"
	next := old.DeepCopy()
	next.Spec.Template.Spec.Containers[0].Image = "busybox:1.37"
	errs := Validate(next, old)
	if len(errs) != 1 || errs[0].Field != "spec.template" || !strings.Contains(errs[0].Error(), "field is immutable") {
		t.Fatalf("errors = %v, want spec.template immutable", errs)
	}
	next = old.DeepCopy()
	next.Spec.Parallelism = ptrTo(int32(4))
	if errs := Validate(next, old); len(errs) != 0 {
		t.Fatalf("changing parallelism: %v", errs)
	}
}
