package demo

import (
	"context"
	"regexp"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"
)

// scheduledJob names the Jobs a CronJob's controller makes:
// <cronjob>-<scheduled time in minutes since the epoch>.
var scheduledJob = regexp.MustCompile(`^tick-\d{8,}$`)

// cronJob shows a CronJob every minute: a Job started by hand from it,
// the Job of the next scheduled minute, and successfulJobsHistoryLimit
// pruning the older.
func cronJob() Demo {
	const name = "tick"
	const byHand = name + "-by-hand"
	var cj *batchv1.CronJob
	return Demo{
		Name:  "cron-job",
		Title: Text{"A CronJob: a Job every minute, and the history limit", "CronJob: 1분마다 Job을 만들고, 기록 한도로 정리하기"},
		Steps: []Step{
			{Say: Text{
				`Create a CronJob with schedule "*/1 * * * *" (every minute), timeZone Etc/UTC, concurrencyPolicy Forbid and successfulJobsHistoryLimit 1. The cronjob controller parses the schedule as upstream does (robfig/cron) in the timeZone; its page on the dashboard lists the next runs.`,
				`schedule이 "*/1 * * * *"(매분), timeZone이 Etc/UTC, concurrencyPolicy가 Forbid, successfulJobsHistoryLimit가 1인 CronJob을 만듭니다. cronjob 컨트롤러는 스케줄을 업스트림처럼(robfig/cron) timeZone 기준으로 해석합니다. 대시보드의 CronJob 페이지에 다음 실행 시각이 나옵니다.`,
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				cronJobs := env.Client.BatchV1().CronJobs(env.Namespace)
				created, err := cronJobs.Create(ctx, &batchv1.CronJob{ObjectMeta: meta(env, name, "cron-job"), Spec: batchv1.CronJobSpec{
					Schedule: "*/1 * * * *", TimeZone: ptr.To("Etc/UTC"), ConcurrencyPolicy: batchv1.ForbidConcurrent,
					SuccessfulJobsHistoryLimit: ptr.To(int32(1)), FailedJobsHistoryLimit: ptr.To(int32(1)),
					JobTemplate: batchv1.JobTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{demoLabel: "cron-job"}},
						Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
							ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{demoLabel: "cron-job"}},
							Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure, TerminationGracePeriodSeconds: ptr.To(int64(1)),
								Containers: []corev1.Container{{Name: name, Image: Image, Command: []string{"sh", "-c", "date"}}}},
						}},
					},
				}}, metav1.CreateOptions{})
				if err != nil {
					return Text{}, err
				}
				cj = created
				env.remember("cronjob.batch", created, cronJobs.Delete, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
				next := time.Now().UTC().Truncate(time.Minute).Add(time.Minute).Format(time.RFC3339)
				return textf("cronjob.batch/%s created: schedule */1 * * * *, timeZone Etc/UTC, next run %s",
					"CronJob을 만들었습니다: cronjob.batch/%s, schedule */1 * * * *, timeZone Etc/UTC, 다음 실행 %s", name, next), nil
			}},
			{Say: Text{
				"Start a Job by hand from the CronJob, as kubectl create job tick-by-hand --from=cronjob/tick does: the Job of the jobTemplate, owned by the CronJob (a controller ownerReference) and annotated cronjob.kubernetes.io/instantiate: manual. The job controller runs its pod to completion.",
				"kubectl create job tick-by-hand --from=cronjob/tick처럼 CronJob에서 Job을 직접 시작합니다: jobTemplate으로 만든 Job이고, CronJob이 소유하며(컨트롤러 ownerReference), cronjob.kubernetes.io/instantiate: manual 애너테이션이 붙습니다. job 컨트롤러가 그 Pod를 끝까지 실행합니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				jobs := env.Client.BatchV1().Jobs(env.Namespace)
				job := &batchv1.Job{
					ObjectMeta: metav1.ObjectMeta{
						Name: byHand, Namespace: env.Namespace, Labels: map[string]string{demoLabel: "cron-job"},
						Annotations:     map[string]string{"cronjob.kubernetes.io/instantiate": "manual"},
						OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, batchv1.SchemeGroupVersion.WithKind("CronJob"))},
					},
					Spec: *cj.Spec.JobTemplate.Spec.DeepCopy(),
				}
				created, err := jobs.Create(ctx, job, metav1.CreateOptions{})
				if err != nil {
					return Text{}, err
				}
				env.remember("job.batch", created, jobs.Delete, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
				err = until(ctx, env, textf("job %s to complete", "Job %s 완료", byHand), func(ctx context.Context) (bool, error) {
					j, err := jobs.Get(ctx, byHand, metav1.GetOptions{})
					if apierrors.IsNotFound(err) {
						// When a scheduled run completed meanwhile (the
						// demo started just before a whole minute), the
						// history limit may prune this Job as soon as it
						// completes: the controller says so in an Event.
						return prunedByHistoryLimit(ctx, env, cj, byHand)
					}
					if err != nil {
						return false, err
					}
					return jobCompleted(j), nil
				})
				if err != nil {
					return Text{}, err
				}
				return textf("job.batch/%s Complete, owned by cronjob.batch/%s", "Job이 완료되었습니다: job.batch/%s, 소유자 cronjob.batch/%s", byHand, name), nil
			}},
			{Say: Text{
				"Wait for the schedule: at the next whole minute (up to a minute away) the cronjob controller creates Job tick-<minutes since the epoch> (SuccessfulCreate); once it completes (SawCompletedJob), successfulJobsHistoryLimit 1 keeps only the newest successful Job and deletes tick-by-hand (SuccessfulDelete). The CronJob's page shows the past Jobs.",
				"스케줄을 기다립니다: 다음 정각 분(최대 1분 뒤)에 cronjob 컨트롤러가 Job tick-<에포크 이후 분>을 만들고(SuccessfulCreate), 그 Job이 끝나면(SawCompletedJob) successfulJobsHistoryLimit 1에 따라 가장 최근의 성공한 Job만 남기고 tick-by-hand를 삭제합니다(SuccessfulDelete). CronJob 페이지에서 지난 Job을 볼 수 있습니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				jobs := env.Client.BatchV1().Jobs(env.Namespace)
				var scheduled *batchv1.Job
				err := until(ctx, env, Text{"the scheduled Job, and tick-by-hand to be pruned", "예약된 Job 실행과 tick-by-hand 정리"}, func(ctx context.Context) (bool, error) {
					list, err := jobs.List(ctx, metav1.ListOptions{})
					if err != nil {
						return false, err
					}
					i := slices.IndexFunc(list.Items, func(j batchv1.Job) bool {
						return scheduledJob.MatchString(j.Name) && metav1.IsControlledBy(&j, cj) && jobCompleted(&j)
					})
					if i < 0 {
						return false, nil
					}
					scheduled = &list.Items[i]
					_, err = jobs.Get(ctx, byHand, metav1.GetOptions{})
					if apierrors.IsNotFound(err) {
						return true, nil
					}
					return false, err
				})
				if err != nil {
					return Text{}, err
				}
				return textf("job.batch/%s scheduled for %s, Complete; job.batch/%s deleted by successfulJobsHistoryLimit 1",
					"예약된 Job이 완료되었습니다: job.batch/%s (예약 시각 %s). successfulJobsHistoryLimit 1에 따라 job.batch/%s는 삭제되었습니다",
					scheduled.Name, scheduled.Annotations[batchv1.CronJobScheduledTimestampAnnotation], byHand), nil
			}},
		},
	}
}

// prunedByHistoryLimit reports whether the cronjob controller deleted the
// finished Job name of cj for its history limits (a SuccessfulDelete Event
// of cj naming it); it fails when the Job is gone otherwise.
func prunedByHistoryLimit(ctx context.Context, env *Env, cj *batchv1.CronJob, name string) (bool, error) {
	events, err := env.Client.CoreV1().Events(env.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.uid": string(cj.UID), "reason": "SuccessfulDelete"}.String(),
	})
	if err != nil {
		return false, err
	}
	for _, e := range events.Items {
		if e.Reason == "SuccessfulDelete" && e.InvolvedObject.UID == cj.UID && e.Message == "Deleted job "+name {
			return true, nil
		}
	}
	return false, env.errorf("job.batch %s is gone, and not by the CronJob's history limit", "job.batch %s가 사라졌지만 CronJob의 기록 한도로 삭제된 것이 아닙니다", name)
}

// jobCompleted reports whether a Job has its Complete condition.
func jobCompleted(j *batchv1.Job) bool {
	return slices.ContainsFunc(j.Status.Conditions, func(c batchv1.JobCondition) bool {
		return c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue
	})
}
