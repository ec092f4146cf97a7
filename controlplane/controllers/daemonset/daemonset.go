package daemonset

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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

// BurstReplicas caps the creations or deletions of one sync.
const BurstReplicas = 250

// controllerKind is the kind of the owners this controller manages.
var controllerKind = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

// Controller is the DaemonSet controller.
type Controller struct {
	log            *slog.Logger
	client         kubernetes.Interface
	recorder       record.EventRecorder
	dsLister       appslisters.DaemonSetLister
	podLister      corelisters.PodLister
	nodeLister     corelisters.NodeLister
	revisionLister appslisters.ControllerRevisionLister
	synced         []toolscache.InformerSynced
	queue          workqueue.TypedRateLimitingInterface[string]
	expectations   *controllerutil.Expectations
	// now is the clock, replaced in tests.
	now func() time.Time
}

// New builds the controller on the given informers. Nothing runs until Run.
func New(log *slog.Logger, client kubernetes.Interface, recorder record.EventRecorder, dsInformer appsinformers.DaemonSetInformer,
	revisionInformer appsinformers.ControllerRevisionInformer, podInformer coreinformers.PodInformer, nodeInformer coreinformers.NodeInformer) (*Controller, error) {
	c := &Controller{
		log:            log.With("controller", "daemonset"),
		client:         client,
		recorder:       recorder,
		dsLister:       dsInformer.Lister(),
		podLister:      podInformer.Lister(),
		nodeLister:     nodeInformer.Lister(),
		revisionLister: revisionInformer.Lister(),
		synced: []toolscache.InformerSynced{dsInformer.Informer().HasSynced, podInformer.Informer().HasSynced,
			nodeInformer.Informer().HasSynced, revisionInformer.Informer().HasSynced},
		queue:        controllerutil.NewQueue("daemonset"),
		expectations: controllerutil.NewExpectations(),
		now:          time.Now,
	}
	handlers := []struct {
		informer toolscache.SharedIndexInformer
		funcs    toolscache.ResourceEventHandlerFuncs
	}{
		{dsInformer.Informer(), toolscache.ResourceEventHandlerFuncs{
			AddFunc:    c.enqueue,
			UpdateFunc: func(_, obj any) { c.enqueue(obj) },
			DeleteFunc: c.deleteDS,
		}},
		{podInformer.Informer(), toolscache.ResourceEventHandlerFuncs{AddFunc: c.addPod, UpdateFunc: c.updatePod, DeleteFunc: c.deletePod}},
		{nodeInformer.Informer(), toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { c.enqueueAll() },
			UpdateFunc: c.updateNode,
			DeleteFunc: func(any) { c.enqueueAll() },
		}},
	}
	for _, h := range handlers {
		if _, err := h.informer.AddEventHandler(h.funcs); err != nil {
			return nil, fmt.Errorf("failed to add daemonset controller handler: %w", err)
		}
	}
	return c, nil
}

// Run waits for the caches, then syncs DaemonSets with workers goroutines
// until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	if !toolscache.WaitForNamedCacheSync("daemonset", ctx.Done(), c.synced...) {
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

// enqueueAll enqueues every DaemonSet, for a node that came, went or
// changed what may run on it.
func (c *Controller) enqueueAll() {
	all, err := c.dsLister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range all {
		c.enqueue(ds)
	}
}

func (c *Controller) updateNode(oldObj, newObj any) {
	old, cur := oldObj.(*v1.Node), newObj.(*v1.Node)
	if reflect.DeepEqual(old.Labels, cur.Labels) && reflect.DeepEqual(old.Spec.Taints, cur.Spec.Taints) &&
		old.Spec.Unschedulable == cur.Spec.Unschedulable {
		return
	}
	c.enqueueAll()
}

func (c *Controller) deleteDS(obj any) {
	key, err := controllerutil.KeyFunc(obj)
	if err != nil {
		return
	}
	c.expectations.Delete(key)
	c.queue.Add(key)
}

// resolveControllerRef returns the DaemonSet ref names, if it is one of
// ours with the same uid.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *appsv1.DaemonSet {
	if ref.Kind != controllerKind.Kind || ref.APIVersion != controllerKind.GroupVersion().String() {
		return nil
	}
	ds, err := c.dsLister.DaemonSets(namespace).Get(ref.Name)
	if err != nil || ds.UID != ref.UID {
		return nil
	}
	return ds
}

// podDaemonSets returns the DaemonSets whose selector matches an orphan.
func (c *Controller) podDaemonSets(pod *v1.Pod) []*appsv1.DaemonSet {
	all, err := c.dsLister.DaemonSets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*appsv1.DaemonSet
	for _, ds := range all {
		sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, ds)
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
		if ds := c.resolveControllerRef(pod.Namespace, ref); ds != nil {
			key, _ := controllerutil.KeyFunc(ds)
			c.expectations.CreationObserved(key)
			c.queue.Add(key)
		}
		return
	}
	for _, ds := range c.podDaemonSets(pod) {
		c.enqueue(ds)
	}
}

func (c *Controller) updatePod(oldObj, newObj any) {
	cur, old := newObj.(*v1.Pod), oldObj.(*v1.Pod)
	if cur.ResourceVersion == old.ResourceVersion {
		return
	}
	if cur.DeletionTimestamp != nil && old.DeletionTimestamp == nil {
		c.deletePod(cur)
		return
	}
	curRef, oldRef := metav1.GetControllerOf(cur), metav1.GetControllerOf(old)
	if oldRef != nil && (curRef == nil || curRef.UID != oldRef.UID) {
		if ds := c.resolveControllerRef(old.Namespace, oldRef); ds != nil {
			c.enqueue(ds)
		}
	}
	if curRef != nil {
		ds := c.resolveControllerRef(cur.Namespace, curRef)
		if ds == nil {
			return
		}
		c.enqueue(ds)
		// A pod that just became ready becomes available minReadySeconds
		// later; look again then.
		if !controllerutil.IsPodReady(old) && controllerutil.IsPodReady(cur) && ds.Spec.MinReadySeconds > 0 {
			key, _ := controllerutil.KeyFunc(ds)
			c.queue.AddAfter(key, time.Duration(ds.Spec.MinReadySeconds)*time.Second+time.Second)
		}
		return
	}
	if !reflect.DeepEqual(cur.Labels, old.Labels) {
		for _, ds := range c.podDaemonSets(cur) {
			c.enqueue(ds)
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
	ds := c.resolveControllerRef(pod.Namespace, ref)
	if ds == nil {
		return
	}
	key, _ := controllerutil.KeyFunc(ds)
	c.expectations.DeletionObserved(key)
	c.queue.Add(key)
}
