package job

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	batchinformers "k8s.io/client-go/informers/batch/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllerutil"
)

// Kubernetes' job controller constants.
const (
	// DefaultPodFailureBackOff is the delay before a pod replaces the
	// first failed one; each further failure doubles it.
	DefaultPodFailureBackOff = 10 * time.Second
	// MaxPodFailureBackOff caps that delay.
	MaxPodFailureBackOff = 10 * time.Minute
	// MaxPodCreateDeletePerSync caps the creations or deletions of one sync.
	MaxPodCreateDeletePerSync = 500
)

// controllerKind is the kind of the owners this controller manages.
var controllerKind = batchv1.SchemeGroupVersion.WithKind("Job")

// orphanPrefix marks queue keys that name a pod, not a job: a pod holding
// the job-tracking finalizer whose job is gone.
const orphanPrefix = "orphan-pod:"

// Controller is the Job controller.
type Controller struct {
	log          *slog.Logger
	client       kubernetes.Interface
	recorder     record.EventRecorder
	jobLister    batchlisters.JobLister
	podLister    corelisters.PodLister
	synced       []toolscache.InformerSynced
	queue        workqueue.TypedRateLimitingInterface[string]
	expectations *controllerutil.Expectations
	// now is the clock, replaced in tests.
	now func() time.Time

	mu sync.Mutex // guards backoff
	// backoff holds, per job key, the failures since the last success and
	// when the last one was counted (Kubernetes' podBackoffStore).
	backoff map[string]backoffRecord
}

type backoffRecord struct {
	failures    int
	lastFailure time.Time
}

// New builds the controller on the given informers. Nothing runs until Run.
func New(log *slog.Logger, client kubernetes.Interface, recorder record.EventRecorder, jobInformer batchinformers.JobInformer, podInformer coreinformers.PodInformer) (*Controller, error) {
	c := &Controller{
		log:          log.With("controller", "job"),
		client:       client,
		recorder:     recorder,
		jobLister:    jobInformer.Lister(),
		podLister:    podInformer.Lister(),
		synced:       []toolscache.InformerSynced{jobInformer.Informer().HasSynced, podInformer.Informer().HasSynced},
		queue:        controllerutil.NewQueue("job"),
		expectations: controllerutil.NewExpectations(),
		now:          time.Now,
		backoff:      map[string]backoffRecord{},
	}
	if _, err := jobInformer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
		DeleteFunc: c.deleteJob,
	}); err != nil {
		return nil, fmt.Errorf("failed to add job handler: %w", err)
	}
	if _, err := podInformer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.addPod,
		UpdateFunc: c.updatePod,
		DeleteFunc: c.deletePod,
	}); err != nil {
		return nil, fmt.Errorf("failed to add pod handler: %w", err)
	}
	return c, nil
}

// Run waits for the caches, then syncs Jobs with workers goroutines until
// ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	if !toolscache.WaitForNamedCacheSync("job", ctx.Done(), c.synced...) {
		return nil
	}
	c.log.Info("controller started", "workers", workers)
	controllerutil.RunWorkers(ctx, c.log, c.queue, workers, c.syncKey)
	return nil
}

func (c *Controller) enqueue(obj any) {
	key, err := controllerutil.KeyFunc(obj)
	if err != nil {
		return
	}
	c.queue.Add(key)
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
	key, _ := controllerutil.KeyFunc(job)
	c.expectations.Delete(key)
	c.mu.Lock()
	delete(c.backoff, key)
	c.mu.Unlock()
	// Its pods lose their job: free the ones still holding the finalizer.
	pods, err := c.podLister.Pods(job.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, p := range pods {
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == job.UID && hasTrackingFinalizer(p) {
			c.queue.Add(orphanPrefix + p.Namespace + "/" + p.Name)
		}
	}
}

// resolveControllerRef returns the Job ref names, if it is one of ours
// with the same uid.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *batchv1.Job {
	if ref.Kind != controllerKind.Kind || ref.APIVersion != controllerKind.GroupVersion().String() {
		return nil
	}
	job, err := c.jobLister.Jobs(namespace).Get(ref.Name)
	if err != nil || job.UID != ref.UID {
		return nil
	}
	return job
}

// podJobs returns the Jobs whose selector matches an orphan.
func (c *Controller) podJobs(pod *v1.Pod) []*batchv1.Job {
	all, err := c.jobLister.Jobs(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*batchv1.Job
	for _, j := range all {
		sel, err := metav1.LabelSelectorAsSelector(j.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, j)
	}
	return out
}

// handlePod enqueues the pod's job; a pod holding the finalizer for a job
// that is gone is enqueued as an orphan.
func (c *Controller) handlePod(pod *v1.Pod, observe func(key string)) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		if hasTrackingFinalizer(pod) {
			// Orphaned, for instance by a delete that orphans dependents.
			c.queue.Add(orphanPrefix + pod.Namespace + "/" + pod.Name)
		}
		if pod.DeletionTimestamp == nil {
			for _, j := range c.podJobs(pod) {
				c.enqueue(j)
			}
		}
		return
	}
	job := c.resolveControllerRef(pod.Namespace, ref)
	if job == nil {
		if hasTrackingFinalizer(pod) && ref.Kind == controllerKind.Kind {
			c.queue.Add(orphanPrefix + pod.Namespace + "/" + pod.Name)
		}
		return
	}
	key, _ := controllerutil.KeyFunc(job)
	if observe != nil {
		observe(key)
	}
	c.queue.Add(key)
}

func (c *Controller) addPod(obj any) {
	pod := obj.(*v1.Pod)
	if pod.DeletionTimestamp != nil {
		c.handlePod(pod, c.expectations.DeletionObserved)
		return
	}
	c.handlePod(pod, c.expectations.CreationObserved)
}

func (c *Controller) updatePod(oldObj, newObj any) {
	cur, old := newObj.(*v1.Pod), oldObj.(*v1.Pod)
	if cur.ResourceVersion == old.ResourceVersion {
		return
	}
	if cur.DeletionTimestamp != nil && old.DeletionTimestamp == nil {
		c.handlePod(cur, c.expectations.DeletionObserved)
	} else {
		c.handlePod(cur, nil)
	}
	curRef, oldRef := metav1.GetControllerOf(cur), metav1.GetControllerOf(old)
	if oldRef != nil && (curRef == nil || curRef.UID != oldRef.UID) {
		if j := c.resolveControllerRef(old.Namespace, oldRef); j != nil {
			c.enqueue(j)
		}
	}
}

func (c *Controller) deletePod(obj any) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		tomb, ok := obj.(toolscache.DeletedFinalStateUnknown)
		if !ok {
			return
		}
		if pod, ok = tomb.Obj.(*v1.Pod); !ok {
			return
		}
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return
	}
	job := c.resolveControllerRef(pod.Namespace, ref)
	if job == nil {
		return
	}
	key, _ := controllerutil.KeyFunc(job)
	c.expectations.DeletionObserved(key)
	c.queue.Add(key)
}

// syncKey syncs a job, or frees an orphan pod.
func (c *Controller) syncKey(ctx context.Context, key string) error {
	if podKey, ok := strings.CutPrefix(key, orphanPrefix); ok {
		return c.syncOrphanPod(ctx, podKey)
	}
	return c.sync(ctx, key)
}

// syncOrphanPod removes the job-tracking finalizer from a pod with no job
// controller, or whose job is gone or finished, as Kubernetes' orphan pod
// cleanup does.
func (c *Controller) syncOrphanPod(ctx context.Context, key string) error {
	namespace, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := c.podLister.Pods(namespace).Get(name)
	if err != nil || !hasTrackingFinalizer(pod) {
		return nil
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if ref.Kind != controllerKind.Kind || ref.APIVersion != controllerKind.GroupVersion().String() {
			return nil
		}
		if job := c.resolveControllerRef(namespace, ref); job != nil && !isFinished(job) {
			return nil
		}
	}
	return c.removeFinalizer(ctx, pod)
}

func hasTrackingFinalizer(pod *v1.Pod) bool {
	for _, f := range pod.Finalizers {
		if f == batchv1.JobTrackingFinalizer {
			return true
		}
	}
	return false
}
