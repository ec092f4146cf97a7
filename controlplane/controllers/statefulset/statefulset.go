package statefulset

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllerutil"
)

// controllerKind is the kind of the owners this controller manages.
var controllerKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

// Controller is the StatefulSet controller.
type Controller struct {
	log            *slog.Logger
	client         kubernetes.Interface
	recorder       record.EventRecorder
	setLister      appslisters.StatefulSetLister
	podLister      corelisters.PodLister
	revisionLister appslisters.ControllerRevisionLister
	synced         []toolscache.InformerSynced
	queue          workqueue.TypedRateLimitingInterface[string]
}

// New builds the controller on the given informers. Nothing runs until Run.
func New(log *slog.Logger, client kubernetes.Interface, recorder record.EventRecorder, setInformer appsinformers.StatefulSetInformer,
	revisionInformer appsinformers.ControllerRevisionInformer, podInformer coreinformers.PodInformer) (*Controller, error) {
	c := &Controller{
		log:            log.With("controller", "statefulset"),
		client:         client,
		recorder:       recorder,
		setLister:      setInformer.Lister(),
		podLister:      podInformer.Lister(),
		revisionLister: revisionInformer.Lister(),
		synced:         []toolscache.InformerSynced{setInformer.Informer().HasSynced, podInformer.Informer().HasSynced, revisionInformer.Informer().HasSynced},
		queue:          controllerutil.NewQueue("statefulset"),
	}
	if _, err := setInformer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
		DeleteFunc: c.enqueue,
	}); err != nil {
		return nil, fmt.Errorf("failed to add statefulset controller handler: %w", err)
	}
	if _, err := podInformer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: c.addPod, UpdateFunc: c.updatePodEvent, DeleteFunc: c.deletePodEvent,
	}); err != nil {
		return nil, fmt.Errorf("failed to add statefulset controller handler: %w", err)
	}
	// ControllerRevisions need an informer for the lister only.
	revisionInformer.Informer()
	return c, nil
}

// Run waits for the caches, then syncs StatefulSets with workers
// goroutines until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	if !toolscache.WaitForNamedCacheSync("statefulset", ctx.Done(), c.synced...) {
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

// resolveControllerRef returns the StatefulSet ref names, if it is one of
// ours with the same uid.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *appsv1.StatefulSet {
	if ref.Kind != controllerKind.Kind || ref.APIVersion != controllerKind.GroupVersion().String() {
		return nil
	}
	set, err := c.setLister.StatefulSets(namespace).Get(ref.Name)
	if err != nil || set.UID != ref.UID {
		return nil
	}
	return set
}

// setsSelecting returns the StatefulSets whose selector matches an orphan.
func (c *Controller) setsSelecting(pod *v1.Pod) []*appsv1.StatefulSet {
	all, err := c.setLister.StatefulSets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*appsv1.StatefulSet
	for _, set := range all {
		sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, set)
	}
	return out
}

func (c *Controller) addPod(obj any) {
	pod := obj.(*v1.Pod)
	if pod.DeletionTimestamp != nil {
		c.deletePodEvent(pod)
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if set := c.resolveControllerRef(pod.Namespace, ref); set != nil {
			c.enqueue(set)
		}
		return
	}
	for _, set := range c.setsSelecting(pod) {
		c.enqueue(set)
	}
}

func (c *Controller) updatePodEvent(oldObj, newObj any) {
	cur, old := newObj.(*v1.Pod), oldObj.(*v1.Pod)
	if cur.ResourceVersion == old.ResourceVersion {
		return
	}
	curRef, oldRef := metav1.GetControllerOf(cur), metav1.GetControllerOf(old)
	if oldRef != nil && (curRef == nil || curRef.UID != oldRef.UID) {
		if set := c.resolveControllerRef(old.Namespace, oldRef); set != nil {
			c.enqueue(set)
		}
	}
	if curRef != nil {
		set := c.resolveControllerRef(cur.Namespace, curRef)
		if set == nil {
			return
		}
		c.enqueue(set)
		// A pod that just became ready becomes available minReadySeconds
		// later; look again then.
		if !controllerutil.IsPodReady(old) && controllerutil.IsPodReady(cur) && set.Spec.MinReadySeconds > 0 {
			key, _ := controllerutil.KeyFunc(set)
			c.queue.AddAfter(key, time.Duration(set.Spec.MinReadySeconds)*time.Second+time.Second)
		}
		return
	}
	if !reflect.DeepEqual(cur.Labels, old.Labels) {
		for _, set := range c.setsSelecting(cur) {
			c.enqueue(set)
		}
	}
}

func (c *Controller) deletePodEvent(obj any) {
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
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if set := c.resolveControllerRef(pod.Namespace, ref); set != nil {
			c.enqueue(set)
		}
	}
}

// sync brings one StatefulSet one step closer to its spec.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	set, err := c.setLister.StatefulSets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil {
		c.log.Info("stateful set has an invalid selector", "statefulset", key, "err", err)
		return nil
	}
	pods, err := c.podsOf(ctx, set, selector)
	if err != nil {
		return err
	}
	status, err := c.updateSet(ctx, set, pods)
	if err != nil {
		return err
	}
	if set.Spec.MinReadySeconds > 0 && status != nil && status.AvailableReplicas != int32(replicasOf(set)) {
		c.queue.AddAfter(key, time.Duration(set.Spec.MinReadySeconds)*time.Second)
	}
	return nil
}

// podsOf returns the pods set owns, adopting orphans named as its members
// that its selector matches and releasing members it no longer selects.
func (c *Controller) podsOf(ctx context.Context, set *appsv1.StatefulSet, selector labels.Selector) ([]*v1.Pod, error) {
	all, err := c.podLister.Pods(set.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var members []*v1.Pod
	for _, p := range all {
		if isMemberOf(set, p) {
			members = append(members, p)
		}
	}
	claimer := &controllerutil.Claimer{
		Controller: set, ControllerKind: controllerKind, Selector: selector,
		Patch: func(ctx context.Context, ns, name string, pt types.PatchType, data []byte) error {
			_, err := c.client.CoreV1().Pods(ns).Patch(ctx, name, pt, data, metav1.PatchOptions{})
			return err
		},
	}
	return controllerutil.ClaimAll(ctx, claimer, members)
}

// writeStatus is the status updater: it writes status on set, reading the
// set again on a conflict.
func (c *Controller) writeStatus(ctx context.Context, set *appsv1.StatefulSet, status *appsv1.StatefulSetStatus) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		set.Status = *status
		_, err := c.client.AppsV1().StatefulSets(set.Namespace).UpdateStatus(ctx, set, metav1.UpdateOptions{})
		if err == nil {
			return nil
		}
		if fresh, getErr := c.setLister.StatefulSets(set.Namespace).Get(set.Name); getErr == nil {
			set = fresh.DeepCopy()
		}
		return err
	})
}
