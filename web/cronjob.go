package web

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/components"
)

// nextRunCount is how many start times a CronJob's page lists.
const nextRunCount = 5

// cronJobView reads what a CronJob's page shows beside the stored object,
// through the API as the page's user: the CronJob, its next start times
// and the Jobs it controls (listed in its namespace, matched by owner).
func (d *Dashboard) cronJobView(ctx context.Context, r *http.Request, namespace, name string, now time.Time) *components.CronJob {
	client, err := d.api(r)
	if err != nil {
		return &components.CronJob{Error: fmt.Sprintf("failed to read cronjob %q: %v", name, err)}
	}
	cj, err := client.BatchV1().CronJobs(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return &components.CronJob{Error: err.Error()}
	}
	vm := cronJobSpec(cj)
	runs, err := nextRuns(cj.Spec.Schedule, cj.Spec.TimeZone, now, nextRunCount)
	if err != nil {
		vm.NextError = err.Error()
	}
	for _, t := range runs {
		vm.NextRuns = append(vm.NextRuns, t.Format(time.RFC3339))
	}
	jobs, err := client.BatchV1().Jobs(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		vm.JobsError = err.Error()
	} else {
		vm.Jobs = cronJobRuns(cj, jobs.Items)
	}
	return vm
}

// cronJobSpec is the CronJob's spec and status as the page shows them.
func cronJobSpec(cj *batchv1.CronJob) *components.CronJob {
	s := cj.Spec
	vm := &components.CronJob{
		Schedule: s.Schedule, Suspend: s.Suspend != nil && *s.Suspend, ConcurrencyPolicy: string(s.ConcurrencyPolicy),
		SuccessfulHistoryLimit: optionalInt(s.SuccessfulJobsHistoryLimit), FailedHistoryLimit: optionalInt(s.FailedJobsHistoryLimit),
	}
	if s.TimeZone != nil {
		vm.TimeZone = *s.TimeZone
	}
	if s.StartingDeadlineSeconds != nil {
		vm.StartingDeadlineSeconds = strconv.FormatInt(*s.StartingDeadlineSeconds, 10)
	}
	if t := cj.Status.LastScheduleTime; t != nil {
		vm.LastScheduleTime = t.UTC().Format(time.RFC3339)
	}
	if t := cj.Status.LastSuccessfulTime; t != nil {
		vm.LastSuccessfulTime = t.UTC().Format(time.RFC3339)
	}
	for _, a := range cj.Status.Active {
		ns := a.Namespace
		if ns == "" {
			ns = cj.Namespace
		}
		vm.Active = append(vm.Active, components.ObjectLink{Kind: "Job", Name: a.Name, Href: objectHref("jobs", ns, a.Name)})
	}
	return vm
}

func optionalInt(p *int32) string {
	if p == nil {
		return ""
	}
	return strconv.Itoa(int(*p))
}

// nextRuns returns the n start times of schedule after from, parsed as the
// cronjob controller (and kube-controller-manager) parses it: a standard
// five-field cron line or a descriptor (@hourly), with timeZone as a TZ=
// prefix, in that zone; without one, in this process's local zone, which
// is the controller manager's. A schedule that carries TZ= itself is used
// as it is. An unknown zone is refused in the controller's words.
func nextRuns(schedule string, timeZone *string, from time.Time, n int) ([]time.Time, error) {
	line := schedule
	if timeZone != nil && !strings.Contains(schedule, "TZ") {
		if _, err := time.LoadLocation(*timeZone); err != nil {
			return nil, fmt.Errorf("invalid timeZone: %q: %w", *timeZone, err)
		}
		line = "TZ=" + *timeZone + " " + schedule
	}
	sched, err := cron.ParseStandard(line)
	if err != nil {
		return nil, fmt.Errorf("unparseable schedule: %q : %w", schedule, err)
	}
	var out []time.Time
	for t := from; len(out) < n; {
		t = sched.Next(t)
		if t.IsZero() {
			break
		}
		if spec, ok := sched.(*cron.SpecSchedule); ok {
			t = t.In(spec.Location)
		}
		out = append(out, t)
	}
	return out, nil
}

// cronJobRuns are the Jobs cj controls, newest first (by scheduled time,
// then creation).
func cronJobRuns(cj *batchv1.CronJob, jobs []batchv1.Job) []components.CronJobRun {
	type run struct {
		at  time.Time
		row components.CronJobRun
	}
	var runs []run
	for i := range jobs {
		j := &jobs[i]
		if !metav1.IsControlledBy(j, cj) {
			continue
		}
		row := components.CronJobRun{
			Name: j.Name, Href: objectHref("jobs", j.Namespace, j.Name), Scheduled: j.Annotations[batchv1.CronJobScheduledTimestampAnnotation],
			Status: jobStatus(j), Succeeded: j.Status.Succeeded, Failed: j.Status.Failed, Active: j.Status.Active,
		}
		if t := j.Status.StartTime; t != nil {
			row.Start = t.UTC().Format(time.RFC3339)
		}
		if t := j.Status.CompletionTime; t != nil {
			row.Completion = t.UTC().Format(time.RFC3339)
		}
		at := j.CreationTimestamp.Time
		if t, err := time.Parse(time.RFC3339, row.Scheduled); err == nil {
			at = t
		}
		runs = append(runs, run{at, row})
	}
	sort.SliceStable(runs, func(i, j int) bool {
		if !runs[i].at.Equal(runs[j].at) {
			return runs[i].at.After(runs[j].at)
		}
		return runs[i].row.Name > runs[j].row.Name
	})
	out := make([]components.CronJobRun, len(runs))
	for i, r := range runs {
		out[i] = r.row
	}
	return out
}

// jobStatus reads a Job's state from its conditions as kubectl get jobs
// does: Complete, Failed, Suspended, else Running.
func jobStatus(j *batchv1.Job) string {
	for _, t := range []batchv1.JobConditionType{batchv1.JobComplete, batchv1.JobFailed, batchv1.JobSuspended} {
		for _, c := range j.Status.Conditions {
			if c.Type == t && c.Status == corev1.ConditionTrue {
				return string(t)
			}
		}
	}
	return "Running"
}
