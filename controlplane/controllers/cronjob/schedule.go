package cronjob

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
)

// nextScheduleDelta pads each requeue for clock skew, as upstream does.
const nextScheduleDelta = 100 * time.Millisecond

// missedSchedules says how many start times were missed: none, a few, or
// more than 100 (when the controller stops counting and warns).
type missedSchedules int

const (
	noneMissed missedSchedules = iota
	fewMissed
	manyMissed
)

// formatSchedule returns the schedule to parse: prefixed with TZ=<zone>
// when spec.timeZone names a known zone; a schedule that carries TZ itself
// is used as is, with an UnsupportedSchedule warning when recorder is set.
func formatSchedule(cj *batchv1.CronJob, recorder record.EventRecorder) string {
	if strings.Contains(cj.Spec.Schedule, "TZ") {
		if recorder != nil {
			recorder.Eventf(cj, corev1.EventTypeWarning, "UnsupportedSchedule",
				"CRON_TZ or TZ used in schedule %q is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details", cj.Spec.Schedule)
		}
		return cj.Spec.Schedule
	}
	if cj.Spec.TimeZone != nil {
		if _, err := time.LoadLocation(*cj.Spec.TimeZone); err != nil {
			return cj.Spec.Schedule
		}
		return fmt.Sprintf("TZ=%s %s", *cj.Spec.TimeZone, cj.Spec.Schedule)
	}
	return cj.Spec.Schedule
}

// mostRecentScheduleTime returns the time scheduling counts from (the last
// schedule time, or the creation time), the most recent start time due at
// now (nil when none is), how many were missed, and an error for a
// schedule that parses but never fires twice a second apart ("59 23 31 2 *").
// With withDeadline, nothing before now - startingDeadlineSeconds counts.
func mostRecentScheduleTime(cj *batchv1.CronJob, now time.Time, schedule cron.Schedule, withDeadline bool) (time.Time, *time.Time, missedSchedules, error) {
	earliest := cj.CreationTimestamp.Time
	if cj.Status.LastScheduleTime != nil {
		earliest = cj.Status.LastScheduleTime.Time
	}
	if withDeadline && cj.Spec.StartingDeadlineSeconds != nil {
		if deadline := now.Add(-time.Duration(*cj.Spec.StartingDeadlineSeconds) * time.Second); deadline.After(earliest) {
			earliest = deadline
		}
	}
	t1 := schedule.Next(earliest)
	t2 := schedule.Next(t1)
	if now.Before(t1) {
		return earliest, nil, noneMissed, nil
	}
	if now.Before(t2) {
		return earliest, &t1, noneMissed, nil
	}
	between := int64(t2.Sub(t1).Round(time.Second).Seconds())
	if between < 1 {
		return earliest, nil, noneMissed, fmt.Errorf("time difference between two schedules is less than 1 second")
	}
	// Count the missed times roughly (elapsed / interval), then walk the
	// schedule from just before the estimate to find the latest exactly.
	missedCount := int64(now.Sub(t1).Seconds())/between + 1
	var mostRecent time.Time
	potentialEarliest := t1.Add(time.Duration((missedCount-2)*between) * time.Second)
	for t := schedule.Next(potentialEarliest); !t.After(now); t = schedule.Next(t) {
		mostRecent = t
	}
	missed := fewMissed
	if missedCount > 100 {
		missed = manyMissed
	}
	if mostRecent.IsZero() {
		return earliest, nil, missed, nil
	}
	return earliest, &mostRecent, missed, nil
}

// nextScheduleTimeDuration is how long from now until the next scheduled
// time, plus nextScheduleDelta.
func nextScheduleTimeDuration(cj *batchv1.CronJob, now time.Time, schedule cron.Schedule) time.Duration {
	earliest, mostRecent, missed, err := mostRecentScheduleTime(cj, now, schedule, false)
	switch {
	case err != nil:
		mostRecent = &now
	case mostRecent == nil && missed == noneMissed:
		mostRecent = &earliest
	case mostRecent == nil:
		mostRecent = &now
	}
	return schedule.Next(*mostRecent).Add(nextScheduleDelta).Sub(now)
}

// nextScheduleTime returns the start time due at now that has not been
// met, or nil; more than 100 missed times get a TooManyMissedTimes warning.
func nextScheduleTime(cj *batchv1.CronJob, now time.Time, schedule cron.Schedule, recorder record.EventRecorder) (*time.Time, error) {
	_, mostRecent, missed, err := mostRecentScheduleTime(cj, now, schedule, true)
	if mostRecent == nil || mostRecent.After(now) {
		return nil, err
	}
	if missed == manyMissed {
		recorder.Eventf(cj, corev1.EventTypeWarning, "TooManyMissedTimes", "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew")
	}
	return mostRecent, err
}

// jobName is <cronjob>-<scheduled time in minutes since the epoch>: the
// same scheduled time always names the same Job, so it is never created
// twice.
func jobName(cj *batchv1.CronJob, scheduled time.Time) string {
	return fmt.Sprintf("%s-%d", cj.Name, scheduled.Unix()/60)
}

// jobFromTemplate makes the Job of a scheduled time: the template's labels,
// annotations and spec, owned by the CronJob, with the scheduled time in
// the batch.kubernetes.io/cronjob-scheduled-timestamp annotation (RFC 3339
// in the CronJob's time zone).
func jobFromTemplate(cj *batchv1.CronJob, scheduled time.Time) (*batchv1.Job, error) {
	zone := ""
	if cj.Spec.TimeZone != nil {
		zone = *cj.Spec.TimeZone
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil, fmt.Errorf("failed to load time zone %q: %w", zone, err)
	}
	labels := map[string]string{}
	for k, v := range cj.Spec.JobTemplate.Labels {
		labels[k] = v
	}
	annotations := map[string]string{}
	for k, v := range cj.Spec.JobTemplate.Annotations {
		annotations[k] = v
	}
	annotations[batchv1.CronJobScheduledTimestampAnnotation] = scheduled.In(loc).Format(time.RFC3339)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: jobName(cj, scheduled), Namespace: cj.Namespace, Labels: labels, Annotations: annotations,
			CreationTimestamp: metav1.Time{Time: scheduled},
			OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(cj, controllerKind)},
		},
	}
	cj.Spec.JobTemplate.Spec.DeepCopyInto(&job.Spec)
	return job, nil
}

// NextRuns returns the next n start times of a CronJob after from, in its
// time zone, for the dashboard; an unparseable schedule returns an error.
func NextRuns(cj *batchv1.CronJob, from time.Time, n int) ([]time.Time, error) {
	sched, err := cron.ParseStandard(formatSchedule(cj, nil))
	if err != nil {
		return nil, err
	}
	out := make([]time.Time, 0, n)
	for t := from; len(out) < n; {
		t = sched.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out, nil
}
