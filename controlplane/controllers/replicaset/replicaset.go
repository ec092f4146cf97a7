package replicaset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllerutil"
)

const (
	// BurstReplicas caps the creations or deletions of one sync.
	BurstReplicas = 500
	// SlowStartInitialBatchSize is the first creation batch; each batch
	// that succeeds doubles the next.
	SlowStartInitialBatchSize = 1
)

// controllerKind is the kind of the owners this controller manages.
var controllerKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

// Controller is the ReplicaSet controller.
type Controller struct {
	// kind is the owners' kind: ReplicaSet, or ReplicationController when
	// the replication controller runs this logic through its adapters.
	kind         schema.GroupVersionKind
	name         string
	log          *slog.Logger
	client       kubernetes.Interface
	recorder     record.EventRecorder
	rsLister     appslisters.ReplicaSetLister
	podLister    corelisters.PodLister
	synced       []toolscache.InformerSynced
	queue        workqueue.TypedRateLimitingInterface[string]
	expectations *controllerutil.Expectations
}

// New builds the controller on the given informers. Nothing runs until Run.
func New(log *slog.Logger, client kubernetes.Interface, recorder record.EventRecorder, rsInformer appsinformers.ReplicaSetInformer, podInformer coreinformers.PodInformer) (*Controller, error) {
	return NewBase(log, client, recorder, rsInformer, podInformer, controllerKind, "replicaset")
}

// NewBase builds the controller for owners of kind, named name in logs and
// its queue, as upstream's NewBaseController: the replication controller
// passes ReplicaSet views of its ReplicationControllers (informer, client
// and recorder adapters), so both kinds share this logic.
func NewBase(log *slog.Logger, client kubernetes.Interface, recorder record.EventRecorder, rsInformer appsinformers.ReplicaSetInformer, podInformer coreinformers.PodInformer,
	kind schema.GroupVersionKind, name string) (*Controller, error) {
	c := &Controller{
		kind:         kind,
		name:         name,
		log:          log.With("controller", name),
		client:       client,
		recorder:     recorder,
		rsLister:     rsInformer.Lister(),
		podLister:    podInformer.Lister(),
		synced:       []toolscache.InformerSynced{rsInformer.Informer().HasSynced, podInformer.Informer().HasSynced},
		queue:        controllerutil.NewQueue(name),
		expectations: controllerutil.NewExpectations(),
	}
	if _, err := rsInformer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
		DeleteFunc: c.deleteRS,
	}); err != nil {
		return nil, fmt.Errorf("failed to add replicaset handler: %w", err)
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

// Run waits for the caches, then syncs ReplicaSets with workers goroutines
// until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	if !toolscache.WaitForNamedCacheSync(c.name, ctx.Done(), c.synced...) {
		return nil
	}
	c.log.Info("controller started", "workers", workers)
	controllerutil.RunWorkers(ctx, c.log, c.queue, workers, c.sync)
	return nil
}

func (c *Controller) enqueue(obj any) {
	key, err := controllerutil.KeyFunc(obj)
	if err != nil {
		return
	}
	c.queue.Add(key)
}

func (c *Controller) enqueueAfter(obj any, after time.Duration) {
	key, err := controllerutil.KeyFunc(obj)
	if err != nil {
		return
	}
	c.queue.AddAfter(key, after)
}

func (c *Controller) deleteRS(obj any) {
	key, err := controllerutil.KeyFunc(obj)
	if err != nil {
		return
	}
	c.expectations.Delete(key)
	c.queue.Add(key)
}

// resolveControllerRef returns the ReplicaSet ref names, if it is one of
// ours with the same uid.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *appsv1.ReplicaSet {
	if ref.Kind != c.kind.Kind || ref.APIVersion != c.kind.GroupVersion().String() {
		return nil
	}
	rs, err := c.rsLister.ReplicaSets(namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return nil
	}
	return rs
}

// podReplicaSets returns the ReplicaSets whose selector matches an orphan.
func (c *Controller) podReplicaSets(pod *v1.Pod) []*appsv1.ReplicaSet {
	all, err := c.rsLister.ReplicaSets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*appsv1.ReplicaSet
	for _, rs := range all {
		sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, rs)
	}
	return out
}

func (c *Controller) addPod(obj any) {
	pod := obj.(*v1.Pod)
	if pod.DeletionTimestamp != nil {
		c.deletePod(pod)
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if rs := c.resolveControllerRef(pod.Namespace, ref); rs != nil {
			key, _ := controllerutil.KeyFunc(rs)
			c.expectations.CreationObserved(key)
			c.queue.Add(key)
		}
		return
	}
	for _, rs := range c.podReplicaSets(pod) {
		c.enqueue(rs)
	}
}

func (c *Controller) updatePod(oldObj, newObj any) {
	cur, old := newObj.(*v1.Pod), oldObj.(*v1.Pod)
	if cur.ResourceVersion == old.ResourceVersion {
		return
	}
	labelsChanged := !reflect.DeepEqual(cur.Labels, old.Labels)
	if cur.DeletionTimestamp != nil {
		c.deletePod(cur)
		if labelsChanged {
			c.deletePod(old)
		}
		return
	}
	curRef, oldRef := metav1.GetControllerOf(cur), metav1.GetControllerOf(old)
	if oldRef != nil && (curRef == nil || curRef.UID != oldRef.UID) {
		if rs := c.resolveControllerRef(old.Namespace, oldRef); rs != nil {
			c.enqueue(rs)
		}
	}
	if curRef != nil {
		rs := c.resolveControllerRef(cur.Namespace, curRef)
		if rs == nil {
			return
		}
		c.enqueue(rs)
		// A pod that just became ready becomes available minReadySeconds
		// later; look again then.
		if !controllerutil.IsPodReady(old) && controllerutil.IsPodReady(cur) && rs.Spec.MinReadySeconds > 0 {
			c.enqueueAfter(rs, time.Duration(rs.Spec.MinReadySeconds)*time.Second+time.Second)
		}
		return
	}
	if labelsChanged || oldRef != nil {
		for _, rs := range c.podReplicaSets(cur) {
			c.enqueue(rs)
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
	rs := c.resolveControllerRef(pod.Namespace, ref)
	if rs == nil {
		return
	}
	key, _ := controllerutil.KeyFunc(rs)
	c.expectations.DeletionObserved(key)
	c.queue.Add(key)
}

// sync makes one ReplicaSet's pods match its spec and reports its status.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.rsLister.ReplicaSets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.expectations.Delete(key)
		return nil
	}
	if err != nil {
		return err
	}
	rs := cached.DeepCopy()
	needsSync := c.expectations.Satisfied(key)
	selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		c.log.Info("replica set has an invalid selector", "replicaset", key, "err", err)
		return nil
	}
	all, err := c.podLister.Pods(namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	claimer := &controllerutil.Claimer{
		Controller: rs, ControllerKind: c.kind, Selector: selector,
		Patch: func(ctx context.Context, ns, name string, pt types.PatchType, data []byte) error {
			_, err := c.client.CoreV1().Pods(ns).Patch(ctx, name, pt, data, metav1.PatchOptions{})
			return err
		},
	}
	pods, err := controllerutil.ClaimAll(ctx, claimer, controllerutil.FilterActivePods(all))
	if err != nil {
		return err
	}

	var manageErr error
	if needsSync && rs.DeletionTimestamp == nil {
		manageErr = c.manageReplicas(ctx, key, pods, rs)
	}
	newStatus := calculateStatus(rs, pods, manageErr)
	updated, err := c.updateStatus(ctx, rs, newStatus)
	if err != nil {
		return err
	}
	if manageErr == nil && updated.Spec.MinReadySeconds > 0 &&
		updated.Status.ReadyReplicas == *updated.Spec.Replicas &&
		updated.Status.AvailableReplicas != *updated.Spec.Replicas {
		c.queue.AddAfter(key, time.Duration(updated.Spec.MinReadySeconds)*time.Second)
	}
	return manageErr
}

// manageReplicas creates or deletes pods so len(pods) matches the spec.
func (c *Controller) manageReplicas(ctx context.Context, key string, pods []*v1.Pod, rs *appsv1.ReplicaSet) error {
	diff := len(pods) - int(*rs.Spec.Replicas)
	if diff < 0 {
		diff = min(-diff, BurstReplicas)
		c.expectations.Expect(key, diff, 0)
		c.log.Debug("too few replicas", "replicaset", key, "need", *rs.Spec.Replicas, "creating", diff)
		ref := controllerutil.NewControllerRef(rs, c.kind)
		created, err := slowStartBatch(diff, SlowStartInitialBatchSize, func() error {
			return c.createPod(ctx, rs, ref)
		})
		if skipped := diff - created; skipped > 0 {
			c.expectations.LowerExpectations(key, skipped, 0)
		}
		return err
	}
	if diff > 0 {
		diff = min(diff, BurstReplicas)
		c.log.Debug("too many replicas", "replicaset", key, "need", *rs.Spec.Replicas, "deleting", diff)
		toDelete := c.podsToDelete(pods, rs, diff)
		c.expectations.Expect(key, 0, len(toDelete))
		var wg sync.WaitGroup
		errCh := make(chan error, len(toDelete))
		for _, pod := range toDelete {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := c.deletePodFor(ctx, rs, pod); err != nil {
					c.expectations.DeletionObserved(key)
					if !apierrors.IsNotFound(err) {
						errCh <- err
					}
				}
			}()
		}
		wg.Wait()
		close(errCh)
		var errs []error
		for err := range errCh {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}
	return nil
}

// podsToDelete ranks pods, counting the pods of sibling ReplicaSets (same
// controller) for doubling up on a node, and returns the first diff.
func (c *Controller) podsToDelete(pods []*v1.Pod, rs *appsv1.ReplicaSet, diff int) []*v1.Pod {
	related := pods
	if owner := metav1.GetControllerOf(rs); owner != nil {
		related = nil
		siblings, _ := c.rsLister.ReplicaSets(rs.Namespace).List(labels.Everything())
		uids := map[types.UID]bool{}
		for _, s := range siblings {
			if r := metav1.GetControllerOf(s); r != nil && r.UID == owner.UID {
				uids[s.UID] = true
			}
		}
		all, _ := c.podLister.Pods(rs.Namespace).List(labels.Everything())
		for _, p := range all {
			if r := metav1.GetControllerOf(p); r != nil && uids[r.UID] {
				related = append(related, p)
			}
		}
	}
	ranked := append([]*v1.Pod(nil), pods...)
	controllerutil.RankPodsForDeletion(ranked, related)
	return ranked[:diff]
}

func (c *Controller) createPod(ctx context.Context, rs *appsv1.ReplicaSet, ref *metav1.OwnerReference) error {
	pod := controllerutil.PodFromTemplate(&rs.Spec.Template, rs, ref)
	if len(pod.Labels) == 0 {
		return fmt.Errorf("failed to create pod for %q: no labels in its template", rs.Name)
	}
	created, err := c.client.CoreV1().Pods(rs.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		if !apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause) {
			c.recorder.Eventf(rs, v1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
		}
		return err
	}
	c.recorder.Eventf(rs, v1.EventTypeNormal, "SuccessfulCreate", "Created pod: %v", created.Name)
	return nil
}

func (c *Controller) deletePodFor(ctx context.Context, rs *appsv1.ReplicaSet, pod *v1.Pod) error {
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			c.recorder.Eventf(rs, v1.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
		}
		return err
	}
	c.recorder.Eventf(rs, v1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %v", pod.Name)
	return nil
}

// slowStartBatch calls fn count times in batches that start at initial and
// double after each fully successful batch; it stops at the first failing
// batch and returns how many calls succeeded.
func slowStartBatch(count, initial int, fn func() error) (int, error) {
	remaining := count
	successes := 0
	for batch := min(remaining, initial); batch > 0; batch = min(2*batch, remaining) {
		errCh := make(chan error, batch)
		var wg sync.WaitGroup
		for range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := fn(); err != nil {
					errCh <- err
				}
			}()
		}
		wg.Wait()
		close(errCh)
		successes += batch - len(errCh)
		if len(errCh) > 0 {
			return successes, <-errCh
		}
		remaining -= batch
	}
	return successes, nil
}
