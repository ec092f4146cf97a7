package admission

import (
	"context"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// createdCronJob is a cron job as `kubectl create cronjob` sends it, after
// the defaulting plugin ran.
func createdCronJob(t *testing.T, mutate func(*batchv1.CronJob)) *batchv1.CronJob {
	t.Helper()
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "tick", Namespace: "default"},
		Spec: batchv1.CronJobSpec{Schedule: "*/1 * * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyOnFailure, Containers: []corev1.Container{{Name: "tick", Image: "busybox"}},
			}},
		}}},
	}
	if mutate != nil {
		mutate(cj)
	}
	if err := NewDefaultValues().Admit(context.Background(), &Attributes{Operation: Create, Object: cj}); err != nil {
		t.Fatal(err)
	}
	return cj
}

func TestDefaultCronJobAsKubernetes(t *testing.T) {
	cj := createdCronJob(t, nil)
	s := cj.Spec
	if s.ConcurrencyPolicy != batchv1.AllowConcurrent || *s.Suspend || *s.SuccessfulJobsHistoryLimit != 3 || *s.FailedJobsHistoryLimit != 1 {
		t.Errorf("defaults = policy %s suspend %v successful %d failed %d", s.ConcurrencyPolicy, *s.Suspend, *s.SuccessfulJobsHistoryLimit, *s.FailedJobsHistoryLimit)
	}
	if s.JobTemplate.Spec.Template.Spec.TerminationGracePeriodSeconds == nil {
		t.Error("the job template's pod spec was not defaulted")
	}
	if errs := Validate(cj, nil); len(errs) != 0 {
		t.Errorf("defaulted cron job is invalid: %v", errs)
	}
}

func TestValidateCronJobAsKubernetes(t *testing.T) {
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name   string
		mutate func(*batchv1.CronJob)
		want   []string
	}{
		{"macro", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "@hourly" }, nil},
		{"every", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "@every 5m" }, nil},
		{"time zone", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = str("Asia/Seoul") }, nil},
		{"minute out of range", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "61 * * * *" },
			[]string{`spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61`}},
		{"too few fields", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "* * *" },
			[]string{`spec.schedule: Invalid value: "* * *": expected exactly 5 fields, found 3: [* * *]`}},
		{"empty schedule", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "" }, []string{"spec.schedule: Required value"}},
		{"TZ in schedule", func(cj *batchv1.CronJob) { cj.Spec.Schedule = "CRON_TZ=UTC * * * * *" },
			[]string{`spec.schedule: Invalid value: "CRON_TZ=UTC * * * * *": cannot use TZ or CRON_TZ in schedule, use timeZone field instead`}},
		{"unknown time zone", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = str("Mars/Olympus") },
			[]string{`spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus`}},
		{"bad time zone characters", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = str("../etc") },
			[]string{`spec.timeZone: Invalid value: "../etc": unknown time zone ../etc`}},
		{"local time zone", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = str("Local") },
			[]string{`spec.timeZone: Invalid value: "Local": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones`}},
		{"bad policy", func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = "Sometimes" },
			[]string{`spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"`}},
		{"negative limit", func(cj *batchv1.CronJob) { cj.Spec.SuccessfulJobsHistoryLimit = ptrTo(int32(-1)) },
			[]string{"spec.successfulJobsHistoryLimit: Invalid value: -1: must be greater than or equal to 0"}},
		{"negative deadline", func(cj *batchv1.CronJob) { cj.Spec.StartingDeadlineSeconds = ptrTo(int64(-5)) },
			[]string{"spec.startingDeadlineSeconds: Invalid value: -5: must be greater than or equal to 0"}},
		{"restart always", func(cj *batchv1.CronJob) {
			cj.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
		},
			[]string{`spec.jobTemplate.spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"`}},
		{"selector", func(cj *batchv1.CronJob) {
			cj.Spec.JobTemplate.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
		}, []string{"spec.jobTemplate.spec.selector: Invalid value: {\"matchLabels\":{\"a\":\"b\"}}: `selector` will be auto-generated"}},
		{"long name", func(cj *batchv1.CronJob) { cj.Name = strings.Repeat("a", 53) },
			[]string{`metadata.name: Invalid value: "` + strings.Repeat("a", 53) + `": must be no more than 52 characters`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cj := createdCronJob(t, tc.mutate)
			assertStrings(t, errorStrings(Validate(cj, nil)), tc.want)
		})
	}
}

func TestValidateCronJobUpdateKeepsStoredTZ(t *testing.T) {
	old := createdCronJob(t, func(cj *batchv1.CronJob) { cj.Spec.Schedule = "TZ=UTC 0 * * * *" })
	old.ResourceVersion = "7"
	next := old.DeepCopy()
	next.Spec.Suspend = ptrTo(true)
	if errs := Validate(next, old); len(errs) != 0 {
		t.Errorf("updating a cron job stored with TZ in its schedule: %v", errs)
	}
	next.Spec.TimeZone = ptrTo("UTC")
	assertStrings(t, errorStrings(Validate(next, old)), []string{`spec.schedule: Invalid value: "TZ=UTC 0 * * * *": cannot use both timeZone field and TZ or CRON_TZ in schedule`})
}

func TestReplicationControllerDefaultsAndValidation(t *testing.T) {
	rc := &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ReplicationControllerSpec{Template: &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
		}},
	}
	Default(rc)
	rc.ResourceVersion = "7"
	if rc.Spec.Selector["app"] != "web" || rc.Labels["app"] != "web" || *rc.Spec.Replicas != 1 {
		t.Fatalf("defaults: selector %v labels %v replicas %d", rc.Spec.Selector, rc.Labels, *rc.Spec.Replicas)
	}
	if errs := Validate(rc, nil); len(errs) != 0 {
		t.Fatalf("defaulted rc is invalid: %v", errs)
	}
	bad := rc.DeepCopy()
	bad.Spec.Selector = map[string]string{"app": "other"}
	bad.Spec.Replicas = ptrTo(int32(-1))
	assertStrings(t, errorStrings(Validate(bad, nil)), []string{
		"spec.replicas: Invalid value: -1: must be greater than or equal to 0",
		"spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`",
	})
	noTemplate := rc.DeepCopy()
	noTemplate.Spec.Template = nil
	assertStrings(t, errorStrings(Validate(noTemplate, nil)), []string{"spec.template: Required value"})

	status := rc.DeepCopy()
	status.Status = corev1.ReplicationControllerStatus{Replicas: 1, ReadyReplicas: 2}
	assertStrings(t, errorStrings(validateStatusUpdate(status, rc)), []string{
		"status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas",
	})
}
