package cronjob

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// client404 treats a CronJob that is gone as synced.
func client404(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// syncCronJob is upstream's syncCronJob: it reconciles status.active with
// the Jobs that exist, then creates the Job due now, if any, under the
// concurrency policy. It changes cj's status in place and reports whether
// it did, and how long until cj should be synced again (nil: not until
// its spec changes).
func (c *Controller) syncCronJob(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job) (*time.Duration, bool, error) {
	now := c.clock.Now()
	updateStatus := false
	children := map[types.UID]bool{}
	for _, j := range jobs {
		children[j.UID] = true
		active := inActiveList(cj, j.UID)
		finished, condition := finishedCondition(j)
		switch {
		case !active && !finished:
			fresh, err := c.client.BatchV1().CronJobs(cj.Namespace).Get(ctx, cj.Name, metav1.GetOptions{})
			if err != nil {
				return nil, updateStatus, err
			}
			if inActiveList(fresh, j.UID) {
				*cj = *fresh
				continue
			}
			c.recorder.Eventf(cj, corev1.EventTypeWarning, "UnexpectedJob", "Saw a job that the controller did not create or forgot: %s", j.Name)
		case active && finished:
			deleteFromActiveList(cj, j.UID)
			c.recorder.Eventf(cj, corev1.EventTypeNormal, "SawCompletedJob", "Saw completed job: %s, condition: %v", j.Name, condition)
			updateStatus = true
		case condition == batchv1.JobComplete && j.Status.CompletionTime != nil:
			if cj.Status.LastSuccessfulTime == nil || j.Status.CompletionTime.After(cj.Status.LastSuccessfulTime.Time) {
				cj.Status.LastSuccessfulTime = j.Status.CompletionTime
				updateStatus = true
			}
		}
	}
	// An active Job that is gone (not even in the API, the informer may be
	// behind) leaves the active list.
	for _, ref := range append([]corev1.ObjectReference(nil), cj.Status.Active...) {
		if children[ref.UID] {
			continue
		}
		_, err := c.client.BatchV1().Jobs(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			c.recorder.Eventf(cj, corev1.EventTypeNormal, "MissingJob", "Active job went missing: %v", ref.Name)
			deleteFromActiveList(cj, ref.UID)
			updateStatus = true
		case err != nil:
			return nil, updateStatus, err
		}
	}
	if cj.DeletionTimestamp != nil {
		return nil, updateStatus, nil
	}
	if cj.Spec.TimeZone != nil {
		if _, err := time.LoadLocation(*cj.Spec.TimeZone); err != nil {
			c.recorder.Eventf(cj, corev1.EventTypeWarning, "UnknownTimeZone", "invalid timeZone: %q: %s", *cj.Spec.TimeZone, err)
			return nil, updateStatus, nil
		}
	}
	if cj.Spec.Suspend != nil && *cj.Spec.Suspend {
		return nil, updateStatus, nil
	}
	sched, err := cron.ParseStandard(formatSchedule(cj, c.recorder))
	if err != nil {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "UnparseableSchedule", "unparseable schedule: %q : %s", cj.Spec.Schedule, err)
		return nil, updateStatus, nil
	}
	scheduled, err := nextScheduleTime(cj, now, sched, c.recorder)
	if err != nil {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "InvalidSchedule", "invalid schedule: %s : %s", cj.Spec.Schedule, err)
		return nil, updateStatus, nil
	}
	next := func() (*time.Duration, bool, error) {
		d := nextScheduleTimeDuration(cj, now, sched)
		return &d, updateStatus, nil
	}
	if scheduled == nil {
		return next()
	}
	if cj.Spec.StartingDeadlineSeconds != nil && scheduled.Add(time.Duration(*cj.Spec.StartingDeadlineSeconds)*time.Second).Before(now) {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "MissSchedule", "Missed scheduled time to start a job: %s", scheduled.UTC().Format(time.RFC1123Z))
		return next()
	}
	name := jobName(cj, *scheduled)
	if inActiveListByName(cj, cj.Namespace, name) || (cj.Status.LastScheduleTime != nil && cj.Status.LastScheduleTime.Time.Equal(*scheduled)) {
		return next()
	}
	if cj.Spec.ConcurrencyPolicy == batchv1.ForbidConcurrent && len(cj.Status.Active) > 0 {
		c.recorder.Eventf(cj, corev1.EventTypeNormal, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
		return next()
	}
	if cj.Spec.ConcurrencyPolicy == batchv1.ReplaceConcurrent {
		for _, ref := range append([]corev1.ObjectReference(nil), cj.Status.Active...) {
			job, err := c.client.BatchV1().Jobs(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				c.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedGet", "Get job: %v", err)
				return nil, updateStatus, err
			}
			if !c.deleteJobOf(ctx, cj, job) {
				return nil, updateStatus, fmt.Errorf("could not replace job %s/%s", job.Namespace, job.Name)
			}
			updateStatus = true
		}
	}
	req, err := jobFromTemplate(cj, *scheduled)
	if err != nil {
		return nil, updateStatus, err
	}
	created, err := c.client.BatchV1().Jobs(cj.Namespace).Create(ctx, req, metav1.CreateOptions{})
	switch {
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil, updateStatus, err
	case apierrors.IsAlreadyExists(err):
		// Created before but not recorded in status (a crash, or a failed
		// status write): record it now if it is ours.
		existing, getErr := c.client.BatchV1().Jobs(cj.Namespace).Get(ctx, req.Name, metav1.GetOptions{})
		if getErr != nil {
			return nil, updateStatus, getErr
		}
		if !metav1.IsControlledBy(existing, cj) || inActiveList(cj, existing.UID) {
			return nil, updateStatus, nil
		}
		created = existing
	case err != nil:
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedCreate", "Error creating job: %v", err)
		return nil, updateStatus, err
	default:
		c.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulCreate", "Created job %v", created.Name)
	}
	cj.Status.Active = append(cj.Status.Active, corev1.ObjectReference{
		Kind: "Job", APIVersion: batchv1.SchemeGroupVersion.String(), Namespace: created.Namespace, Name: created.Name,
		UID: created.UID, ResourceVersion: created.ResourceVersion,
	})
	cj.Status.LastScheduleTime = &metav1.Time{Time: *scheduled}
	updateStatus = true
	return next()
}

// cleanupFinishedJobs deletes the oldest finished Jobs beyond
// successfulJobsHistoryLimit and failedJobsHistoryLimit; it reports
// whether cj's status changed.
func (c *Controller) cleanupFinishedJobs(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job) bool {
	if cj.Spec.FailedJobsHistoryLimit == nil && cj.Spec.SuccessfulJobsHistoryLimit == nil {
		return false
	}
	var succeeded, failed []*batchv1.Job
	for _, j := range jobs {
		switch _, condition := finishedCondition(j); condition {
		case batchv1.JobComplete:
			succeeded = append(succeeded, j)
		case batchv1.JobFailed:
			failed = append(failed, j)
		}
	}
	updated := false
	if cj.Spec.SuccessfulJobsHistoryLimit != nil && c.removeOldestJobs(ctx, cj, succeeded, *cj.Spec.SuccessfulJobsHistoryLimit) {
		updated = true
	}
	if cj.Spec.FailedJobsHistoryLimit != nil && c.removeOldestJobs(ctx, cj, failed, *cj.Spec.FailedJobsHistoryLimit) {
		updated = true
	}
	return updated
}

// removeOldestJobs deletes the jobs that started first until max remain.
func (c *Controller) removeOldestJobs(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job, max int32) bool {
	n := len(jobs) - int(max)
	if n <= 0 {
		return false
	}
	sorted := append([]*batchv1.Job(nil), jobs...)
	sort.Slice(sorted, func(i, k int) bool { return startedBefore(sorted[i], sorted[k]) })
	updated := false
	for _, j := range sorted[:n] {
		if c.deleteJobOf(ctx, cj, j) {
			updated = true
		}
	}
	return updated
}

// startedBefore orders Jobs by start time (unstarted last), then name.
func startedBefore(a, b *batchv1.Job) bool {
	as, bs := a.Status.StartTime, b.Status.StartTime
	switch {
	case as == nil && bs != nil:
		return false
	case as != nil && bs == nil:
		return true
	case as.Equal(bs):
		return a.Name < b.Name
	}
	return as.Before(bs)
}

// deleteJobOf deletes a Job of cj in the background (its pods follow by
// garbage collection) and drops it from the active list.
func (c *Controller) deleteJobOf(ctx context.Context, cj *batchv1.CronJob, job *batchv1.Job) bool {
	background := metav1.DeletePropagationBackground
	if err := c.client.BatchV1().Jobs(job.Namespace).Delete(ctx, job.Name, metav1.DeleteOptions{PropagationPolicy: &background}); err != nil && !apierrors.IsNotFound(err) {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedDelete", "Deleted job: %v", err)
		return false
	}
	deleteFromActiveList(cj, job.UID)
	c.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job %v", job.Name)
	return true
}

// finishedCondition returns whether a Job finished and how (Complete or
// Failed).
func finishedCondition(j *batchv1.Job) (bool, batchv1.JobConditionType) {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true, c.Type
		}
	}
	return false, ""
}

func inActiveList(cj *batchv1.CronJob, uid types.UID) bool {
	for _, r := range cj.Status.Active {
		if r.UID == uid {
			return true
		}
	}
	return false
}

func inActiveListByName(cj *batchv1.CronJob, namespace, name string) bool {
	for _, r := range cj.Status.Active {
		if r.Namespace == namespace && r.Name == name {
			return true
		}
	}
	return false
}

func deleteFromActiveList(cj *batchv1.CronJob, uid types.UID) {
	kept := cj.Status.Active[:0:0]
	for _, r := range cj.Status.Active {
		if r.UID != uid {
			kept = append(kept, r)
		}
	}
	cj.Status.Active = kept
}
