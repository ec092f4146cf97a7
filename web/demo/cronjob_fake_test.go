package demo

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

var (
	cronJobsResource = batchv1.SchemeGroupVersion.WithResource("cronjobs")
	jobsResource     = batchv1.SchemeGroupVersion.WithResource("jobs")
)

// playCronJobs makes c play the job and cronjob controllers: a created Job
// completes at once; the first list of Jobs after a CronJob is made finds
// the Job of its next minute made and complete, and the older successful
// Jobs beyond its successfulJobsHistoryLimit deleted.
func (c *fakeCluster) playCronJobs() {
	c.PrependReactor("create", "jobs", func(a clienttesting.Action) (bool, runtime.Object, error) {
		complete(a.(clienttesting.CreateAction).GetObject().(*batchv1.Job), time.Now())
		return false, nil, nil
	})
	c.PrependReactor("list", "jobs", func(a clienttesting.Action) (bool, runtime.Object, error) {
		list, err := c.tracker.List(cronJobsResource, batchv1.SchemeGroupVersion.WithKind("CronJob"), a.GetNamespace())
		if err != nil {
			return false, nil, nil
		}
		for i := range list.(*batchv1.CronJobList).Items {
			c.runSchedule(&list.(*batchv1.CronJobList).Items[i])
		}
		return false, nil, nil
	})
}

func complete(j *batchv1.Job, at time.Time) {
	j.Status = batchv1.JobStatus{Succeeded: 1, StartTime: &metav1.Time{Time: at}, CompletionTime: &metav1.Time{Time: at.Add(time.Second)},
		Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}
}

// runSchedule makes cj's Job of the next minute, once, and prunes its
// history.
func (c *fakeCluster) runSchedule(cj *batchv1.CronJob) {
	next := time.Now().UTC().Truncate(time.Minute).Add(time.Minute)
	name := fmt.Sprintf("%s-%d", cj.Name, next.Unix()/60)
	if _, err := c.tracker.Get(jobsResource, cj.Namespace, name); err == nil {
		return
	}
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: cj.Namespace, UID: uuid.NewUUID(),
		Annotations:     map[string]string{batchv1.CronJobScheduledTimestampAnnotation: next.Format(time.RFC3339)},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, batchv1.SchemeGroupVersion.WithKind("CronJob"))},
	}, Spec: *cj.Spec.JobTemplate.Spec.DeepCopy()}
	complete(j, next)
	_ = c.tracker.Create(jobsResource, j, cj.Namespace)
	list, err := c.tracker.List(jobsResource, batchv1.SchemeGroupVersion.WithKind("Job"), cj.Namespace)
	if err != nil {
		return
	}
	keep := int(ptr.Deref(cj.Spec.SuccessfulJobsHistoryLimit, 3))
	var owned []batchv1.Job
	for _, o := range list.(*batchv1.JobList).Items {
		if metav1.IsControlledBy(&o, cj) {
			owned = append(owned, o)
		}
	}
	// The newest is the one just made; the others are older.
	for _, o := range owned {
		if o.Name != name && keep <= 1 {
			_ = c.tracker.Delete(jobsResource, o.Namespace, o.Name)
		}
	}
}
