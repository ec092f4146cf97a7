package cronjob

import (
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func cronJobAt(schedule, created string, mutate ...func(*batchv1.CronJob)) *batchv1.CronJob {
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "tick", Namespace: "default", UID: "cj-uid", CreationTimestamp: metav1.NewTime(at(created))},
		Spec:       batchv1.CronJobSpec{Schedule: schedule, ConcurrencyPolicy: batchv1.AllowConcurrent},
	}
	for _, m := range mutate {
		m(cj)
	}
	return cj
}

func TestParseScheduleAsUpstream(t *testing.T) {
	for _, tc := range []struct {
		schedule string
		ok       bool
	}{
		{"*/1 * * * *", true}, {"0 3 * * 1-5", true}, {"@hourly", true}, {"@daily", true}, {"@every 90s", true},
		{"TZ=Asia/Seoul 0 9 * * *", true}, {"* * * * * *", false}, {"61 * * * *", false}, {"@fortnightly", false}, {"", false},
	} {
		_, err := cron.ParseStandard(tc.schedule)
		if (err == nil) != tc.ok {
			t.Errorf("ParseStandard(%q) err = %v, want ok %v", tc.schedule, err, tc.ok)
		}
	}
}

func TestMostRecentScheduleTime(t *testing.T) {
	deadline := func(s int64) func(*batchv1.CronJob) {
		return func(cj *batchv1.CronJob) { cj.Spec.StartingDeadlineSeconds = &s }
	}
	last := func(s string) func(*batchv1.CronJob) {
		return func(cj *batchv1.CronJob) { cj.Status.LastScheduleTime = &metav1.Time{Time: at(s)} }
	}
	for _, tc := range []struct {
		name   string
		cj     *batchv1.CronJob
		now    string
		want   string // "" for none
		missed missedSchedules
	}{
		{"not yet", cronJobAt("*/1 * * * *", "2026-12-04T10:00:30Z"), "2026-12-04T10:00:50Z", "", noneMissed},
		{"first minute", cronJobAt("*/1 * * * *", "2026-12-04T10:00:30Z"), "2026-12-04T10:01:10Z", "2026-12-04T10:01:00Z", noneMissed},
		{"after last schedule", cronJobAt("*/1 * * * *", "2026-12-04T10:00:30Z", last("2026-12-04T10:01:00Z")), "2026-12-04T10:01:50Z", "", noneMissed},
		{"a few missed", cronJobAt("*/5 * * * *", "2026-12-04T10:00:00Z"), "2026-12-04T10:17:00Z", "2026-12-04T10:15:00Z", fewMissed},
		{"too many missed", cronJobAt("*/1 * * * *", "2026-12-04T08:00:00Z"), "2026-12-04T10:00:30Z", "2026-12-04T10:00:00Z", manyMissed},
		{"deadline bounds the count", cronJobAt("*/1 * * * *", "2026-12-04T08:00:00Z", deadline(200)), "2026-12-04T10:00:30Z", "2026-12-04T10:00:00Z", fewMissed},
		{"every", cronJobAt("@every 5m", "2026-12-04T10:00:30Z"), "2026-12-04T10:05:31Z", "2026-12-04T10:05:30Z", noneMissed},
		{"hourly", cronJobAt("@hourly", "2026-12-04T10:00:30Z"), "2026-12-04T11:00:01Z", "2026-12-04T11:00:00Z", noneMissed},
		{"time zone", cronJobAt("0 9 * * *", "2026-12-03T12:00:00Z", func(cj *batchv1.CronJob) { z := "Asia/Seoul"; cj.Spec.TimeZone = &z }),
			"2026-12-04T00:00:05Z", "2026-12-04T00:00:00Z", noneMissed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sched, err := cron.ParseStandard(formatSchedule(tc.cj, nil))
			if err != nil {
				t.Fatal(err)
			}
			_, got, missed, err := mostRecentScheduleTime(tc.cj, at(tc.now), sched, true)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("most recent = %v, want none", got)
			case tc.want != "" && (got == nil || !got.Equal(at(tc.want))):
				t.Errorf("most recent = %v, want %s", got, tc.want)
			}
			if missed != tc.missed {
				t.Errorf("missed = %d, want %d", missed, tc.missed)
			}
		})
	}
}

func TestInvalidScheduleNeverFires(t *testing.T) {
	cj := cronJobAt("59 23 31 2 *", "2026-12-04T10:00:00Z")
	sched, err := cron.ParseStandard(cj.Spec.Schedule)
	if err != nil {
		t.Fatal(err)
	}
	if _, got, _, err := mostRecentScheduleTime(cj, at("2027-12-04T10:00:00Z"), sched, false); got != nil || err == nil {
		t.Errorf("31 February: most recent %v, err %v; want none and an error", got, err)
	}
}

func TestNextScheduleTimeDuration(t *testing.T) {
	cj := cronJobAt("*/1 * * * *", "2026-12-04T10:00:30Z")
	sched, _ := cron.ParseStandard(cj.Spec.Schedule)
	if got := nextScheduleTimeDuration(cj, at("2026-12-04T10:00:40Z"), sched); got != 20*time.Second+nextScheduleDelta {
		t.Errorf("requeue after %v, want 20.1s", got)
	}
	cj.Status.LastScheduleTime = &metav1.Time{Time: at("2026-12-04T10:01:00Z")}
	if got := nextScheduleTimeDuration(cj, at("2026-12-04T10:01:02Z"), sched); got != 58*time.Second+nextScheduleDelta {
		t.Errorf("requeue after %v, want 58.1s", got)
	}
}

func TestJobFromTemplate(t *testing.T) {
	cj := cronJobAt("0 9 * * *", "2026-12-03T12:00:00Z", func(cj *batchv1.CronJob) {
		z := "Asia/Seoul"
		cj.Spec.TimeZone = &z
		cj.Spec.JobTemplate.Labels = map[string]string{"team": "a"}
	})
	job, err := jobFromTemplate(cj, at("2026-12-04T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	if job.Name != "tick-29939040" {
		t.Errorf("name = %s, want tick-29939040 (minutes since the epoch)", job.Name)
	}
	if got := job.Annotations[batchv1.CronJobScheduledTimestampAnnotation]; got != "2026-12-04T09:00:00+09:00" {
		t.Errorf("scheduled annotation = %q, want the time in Asia/Seoul", got)
	}
	if ref := metav1.GetControllerOf(job); ref == nil || ref.Kind != "CronJob" || ref.UID != cj.UID || job.Labels["team"] != "a" {
		t.Errorf("owner %+v labels %v", ref, job.Labels)
	}
	runs, err := NextRuns(cj, at("2026-12-04T00:00:00Z"), 2)
	if err != nil || len(runs) != 2 || !runs[0].Equal(at("2026-12-05T00:00:00Z")) {
		t.Errorf("next runs = %v, %v", runs, err)
	}
}
