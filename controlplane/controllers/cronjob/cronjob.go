package cronjob

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	batchinformers "k8s.io/client-go/informers/batch/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllerutil"
)

// controllerKind is the kind of the owners this controller manages.
var controllerKind = batchv1.SchemeGroupVersion.WithKind("CronJob")

// Controller is the CronJob controller.
type Controller struct {
	log       *slog.Logger
	client    kubernetes.Interface
	recorder  record.EventRecorder
	cjLister  batchlisters.CronJobLister
	jobLister batchlisters.JobLister
	synced    []toolscache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	clock     clock.PassiveClock
}

// New builds the controller on the given informers, telling time by clk
// (clock.RealClock{} outside tests). Nothing runs until Run.
func New(log *slog.Logger, client kubernetes.Interface, recorder record.EventRecorder, cjInformer batchinformers.CronJobInformer, jobInformer batchinformers.JobInformer, clk clock.PassiveClock) (*Controller, error) {
	c := &Controller{
		log:       log.With("controller", "cronjob"),
		client:    client,
		recorder:  recorder,
		cjLister:  cjInformer.Lister(),
		jobLister: jobInformer.Lister(),
		synced:    []toolscache.InformerSynced{cjInformer.Informer().HasSynced, jobInformer.Informer().HasSynced},
		queue:     controllerutil.NewQueue("cronjob"),
		clock:     clk,
	}
	if _, err := cjInformer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: c.updateCronJob,
		DeleteFunc: c.enqueue,
	}); err != nil {
		return nil, fmt.Errorf("failed to add cronjob handler: %w", err)
	}
	if _, err := jobInformer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.addJob,
		UpdateFunc: c.updateJob,
		DeleteFunc: c.deleteJob,
	}); err != nil {
		return nil, fmt.Errorf("failed to add job handler: %w", err)
	}
	return c, nil
}

// Run waits for the caches, then syncs CronJobs with workers goroutines
// until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	if !toolscache.WaitForNamedCacheSync("cronjob", ctx.Done(), c.synced...) {
		return nil
	}
	c.log.Info("controller started", "workers", workers)
	controllerutil.RunWorkers(ctx, c.log, c.queue, workers, c.sync)
	return nil
}

func (c *Controller) enqueue(obj any) {
	if key, err := controllerutil.KeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

// updateCronJob requeues a CronJob for its next scheduled time when its
// schedule or time zone changed, and at once for any other change.
func (c *Controller) updateCronJob(oldObj, newObj any) {
	old, cur := oldObj.(*batchv1.CronJob), newObj.(*batchv1.CronJob)
	if old.Spec.Schedule == cur.Spec.Schedule && equalStringPtr(old.Spec.TimeZone, cur.Spec.TimeZone) {
		c.enqueue(cur)
		return
	}
	sched, err := cron.ParseStandard(formatSchedule(cur, nil))
	if err != nil {
		c.recorder.Eventf(cur, corev1.EventTypeWarning, "UnParseableCronJobSchedule", "unparseable schedule for cronjob: %s", cur.Spec.Schedule)
		return
	}
	if key, err := controllerutil.KeyFunc(cur); err == nil {
		c.queue.AddAfter(key, nextScheduleTimeDuration(cur, c.clock.Now(), sched))
	}
}

func equalStringPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// resolveControllerRef returns the CronJob a job's controller ref names,
// if it still exists with the same uid.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *batchv1.CronJob {
	if ref == nil || ref.Kind != controllerKind.Kind {
		return nil
	}
	cj, err := c.cjLister.CronJobs(namespace).Get(ref.Name)
	if err != nil || cj.UID != ref.UID {
		return nil
	}
	return cj
}

func (c *Controller) addJob(obj any) {
	job := obj.(*batchv1.Job)
	if job.DeletionTimestamp != nil {
		c.deleteJob(job)
		return
	}
	if cj := c.resolveControllerRef(job.Namespace, metav1.GetControllerOf(job)); cj != nil {
		c.enqueue(cj)
	}
}

func (c *Controller) updateJob(oldObj, newObj any) {
	old, cur := oldObj.(*batchv1.Job), newObj.(*batchv1.Job)
	if old.ResourceVersion == cur.ResourceVersion {
		return
	}
	oldRef, curRef := metav1.GetControllerOf(old), metav1.GetControllerOf(cur)
	if oldRef != nil && (curRef == nil || oldRef.UID != curRef.UID) {
		if cj := c.resolveControllerRef(old.Namespace, oldRef); cj != nil {
			c.enqueue(cj)
		}
	}
	if cj := c.resolveControllerRef(cur.Namespace, curRef); cj != nil {
		c.enqueue(cj)
	}
}

func (c *Controller) deleteJob(obj any) {
	job, ok := obj.(*batchv1.Job)
	if !ok {
		tomb, ok := obj.(toolscache.DeletedFinalStateUnknown)
		if !ok {
			return
		}
		if job, ok = tomb.Obj.(*batchv1.Job); !ok {
			return
		}
	}
	if cj := c.resolveControllerRef(job.Namespace, metav1.GetControllerOf(job)); cj != nil {
		c.enqueue(cj)
	}
}

// sync reconciles one CronJob: prunes its finished Jobs, starts the Job
// due now, writes its status once, and requeues it for its next time.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.cjLister.CronJobs(namespace).Get(name)
	if err != nil {
		return client404(err)
	}
	jobs, err := c.jobsOf(cached)
	if err != nil {
		return err
	}
	cj := cached.DeepCopy()
	cleaned := c.cleanupFinishedJobs(ctx, cj, jobs)
	requeueAfter, updated, syncErr := c.syncCronJob(ctx, cj, jobs)
	if syncErr != nil {
		c.log.Info("failed to sync cron job", "cronjob", key, "err", syncErr)
	}
	if cleaned || updated {
		if _, err := c.client.BatchV1().CronJobs(namespace).UpdateStatus(ctx, cj, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("failed to update status of cron job %q: %w", key, err)
		}
	}
	if requeueAfter != nil {
		c.queue.AddAfter(key, *requeueAfter)
		return nil
	}
	return syncErr
}

// jobsOf returns the Jobs a CronJob controls, from the informer.
func (c *Controller) jobsOf(cj *batchv1.CronJob) ([]*batchv1.Job, error) {
	all, err := c.jobLister.Jobs(cj.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var out []*batchv1.Job
	for _, j := range all {
		if ref := metav1.GetControllerOf(j); ref != nil && ref.Kind == controllerKind.Kind && ref.Name == cj.Name {
			out = append(out, j)
		}
	}
	return out, nil
}
