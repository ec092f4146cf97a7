package resourcequota

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	quotav1 "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/glassplane/glassplane/controlplane/quota"
	"github.com/glassplane/glassplane/controlplane/trim"
)

// DefaultResyncPeriod is how often every quota is recomputed. Upstream's
// default is five minutes; Glassplane recomputes more often since it
// replenishes on deletes of the kinds it watches only, not of every
// resource.
const DefaultResyncPeriod = 30 * time.Second

// Controller keeps ResourceQuota status current.
type Controller struct {
	log      *slog.Logger
	client   kubernetes.Interface
	meta     metadata.Interface
	quotas   corelisters.ResourceQuotaLister
	pods     corelisters.PodLister
	services corelisters.ServiceLister
	claims   corelisters.PersistentVolumeClaimLister
	synced   []toolscache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	registry quotav1.Registry
	resync   time.Duration
	// metaInformers watch the deletes of watchedCounts.
	metaInformers metadatainformer.SharedInformerFactory
	// resolve finds the served version of a group resource, for counts of
	// kinds without their own evaluator.
	resolve func(schema.GroupResource) (schema.GroupVersionResource, error)
}

// New returns the controller over the shared informers. meta lists the
// objects counted by count/<resource>.<group>; resolve maps a group
// resource to its served version.
func New(log *slog.Logger, client kubernetes.Interface, meta metadata.Interface, resolve func(schema.GroupResource) (schema.GroupVersionResource, error),
	quotas coreinformers.ResourceQuotaInformer, pods coreinformers.PodInformer, services coreinformers.ServiceInformer,
	claims coreinformers.PersistentVolumeClaimInformer, resync time.Duration) (*Controller, error) {
	if resync <= 0 {
		resync = DefaultResyncPeriod
	}
	c := &Controller{
		log: log.With("controller", "resourcequota"), client: client, meta: meta, resolve: resolve,
		quotas: quotas.Lister(), pods: pods.Lister(), services: services.Lister(), claims: claims.Lister(),
		synced: []toolscache.InformerSynced{quotas.Informer().HasSynced, pods.Informer().HasSynced, services.Informer().HasSynced, claims.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "resourcequota"}),
		resync: resync, metaInformers: metadatainformer.NewSharedInformerFactoryWithOptions(meta, 0, metadatainformer.WithTransform(trim.ManagedFields)),
	}
	c.registry = quota.NewRegistry(c.listFunc, time.Now)
	if _, err := quotas.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueueQuota,
		UpdateFunc: func(old, cur any) {
			o, n := old.(*corev1.ResourceQuota), cur.(*corev1.ResourceQuota)
			if !equality.Semantic.DeepEqual(o.Spec, n.Spec) || !equality.Semantic.DeepEqual(n.Spec.Hard, n.Status.Hard) {
				c.enqueueQuota(cur)
			}
		},
	}); err != nil {
		return nil, err
	}
	replenish := toolscache.ResourceEventHandlerFuncs{DeleteFunc: c.replenish}
	if _, err := pods.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		DeleteFunc: c.replenish,
		UpdateFunc: func(old, cur any) {
			o, n := old.(*corev1.Pod), cur.(*corev1.Pod)
			if terminal(n) && !terminal(o) {
				c.replenish(cur)
			}
		},
	}); err != nil {
		return nil, err
	}
	for _, inf := range []toolscache.SharedIndexInformer{services.Informer(), claims.Informer()} {
		if _, err := inf.AddEventHandler(replenish); err != nil {
			return nil, err
		}
	}
	if err := c.watchCountedDeletes(); err != nil {
		return nil, err
	}
	return c, nil
}

// watchedCounts are the kinds besides pods, Services and claims whose
// deletes recompute the quotas of their namespace at once (others wait
// for the resync), watched through metadata informers.
var watchedCounts = []schema.GroupVersionResource{
	{Version: "v1", Resource: "configmaps"},
	{Version: "v1", Resource: "secrets"},
}

func (c *Controller) watchCountedDeletes() error {
	for _, gvr := range watchedCounts {
		inf := c.metaInformers.ForResource(gvr).Informer()
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{DeleteFunc: c.replenish}); err != nil {
			return err
		}
		c.synced = append(c.synced, inf.HasSynced)
	}
	return nil
}

func terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func (c *Controller) enqueueQuota(obj any) {
	key, err := toolscache.MetaNamespaceKeyFunc(obj)
	if err == nil {
		c.queue.Add(key)
	}
}

// replenish enqueues every quota of the namespace obj was in.
func (c *Controller) replenish(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok || m.GetNamespace() == "" {
		return
	}
	quotas, err := c.quotas.ResourceQuotas(m.GetNamespace()).List(labels.Everything())
	if err != nil {
		return
	}
	for _, q := range quotas {
		c.enqueueQuota(q)
	}
}

// listFunc lists what an evaluator of gr counts in a namespace: pods,
// Services and claims from the informers, anything else through the
// metadata client.
func (c *Controller) listFunc(gr schema.GroupResource) generic.ListFuncByNamespace {
	switch gr {
	case schema.GroupResource{Resource: "pods"}:
		return func(ns string) ([]runtime.Object, error) {
			items, err := c.pods.Pods(ns).List(labels.Everything())
			return toObjects(items, err)
		}
	case schema.GroupResource{Resource: "services"}:
		return func(ns string) ([]runtime.Object, error) {
			items, err := c.services.Services(ns).List(labels.Everything())
			return toObjects(items, err)
		}
	case schema.GroupResource{Resource: "persistentvolumeclaims"}:
		return func(ns string) ([]runtime.Object, error) {
			items, err := c.claims.PersistentVolumeClaims(ns).List(labels.Everything())
			return toObjects(items, err)
		}
	}
	return func(ns string) ([]runtime.Object, error) {
		gvr, err := c.resolve(gr)
		if err != nil {
			return nil, err
		}
		list, err := c.meta.Resource(gvr).Namespace(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		out := make([]runtime.Object, 0, len(list.Items))
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
		return out, nil
	}
}

func toObjects[T runtime.Object](items []T, err error) ([]runtime.Object, error) {
	if err != nil {
		return nil, err
	}
	out := make([]runtime.Object, 0, len(items))
	for _, it := range items {
		out = append(out, it)
	}
	return out, nil
}

// Run waits for the caches, then syncs quotas with workers goroutines and
// enqueues every quota each resync period, until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	c.metaInformers.Start(ctx.Done())
	defer c.metaInformers.Shutdown()
	if !toolscache.WaitForNamedCacheSync("resourcequota", ctx.Done(), c.synced...) {
		return nil
	}
	for range workers {
		go wait.UntilWithContext(ctx, c.worker, time.Second)
	}
	wait.UntilWithContext(ctx, c.enqueueAll, c.resync)
	return nil
}

func (c *Controller) enqueueAll(context.Context) {
	quotas, err := c.quotas.List(labels.Everything())
	if err != nil {
		return
	}
	for _, q := range quotas {
		c.enqueueQuota(q)
	}
}

func (c *Controller) worker(ctx context.Context) {
	for {
		key, quit := c.queue.Get()
		if quit {
			return
		}
		err := c.sync(ctx, key)
		if err == nil {
			c.queue.Forget(key)
		} else {
			c.log.Debug("failed to sync quota; will retry", "quota", key, "err", err)
			c.queue.AddRateLimited(key)
		}
		c.queue.Done(key)
	}
}

// sync is syncResourceQuota: status.hard from spec.hard, status.used
// recomputed for every tracked resource, written only when it changed.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	q, err := c.quotas.ResourceQuotas(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	hard := quotav1.Add(corev1.ResourceList{}, q.Spec.Hard)
	for name := range hard {
		if gr, ok := countedResource(name); ok {
			quota.Evaluator(c.registry, gr, c.listFunc)
		}
	}
	newUsage, calcErr := quotav1.CalculateUsage(ns, q.Spec.Scopes, hard, c.registry, q.Spec.ScopeSelector)
	used := quotav1.Add(corev1.ResourceList{}, q.Status.Used)
	for k, v := range newUsage {
		used[k] = v
	}
	used = quotav1.Mask(used, quotav1.ResourceNames(hard))
	dirty := q.Status.Hard == nil || q.Status.Used == nil || !equality.Semantic.DeepEqual(q.Spec.Hard, q.Status.Hard) || !quotav1.Equals(used, q.Status.Used)
	if dirty {
		next := q.DeepCopy()
		next.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: used}
		if _, err := c.client.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("failed to update the status of quota %q: %w", key, err)
		}
	}
	return calcErr
}

// countedResource parses count/<resource>[.<group>].
func countedResource(name corev1.ResourceName) (schema.GroupResource, bool) {
	rest, ok := strings.CutPrefix(string(name), "count/")
	if !ok || rest == "" {
		return schema.GroupResource{}, false
	}
	return schema.ParseGroupResource(rest), true
}
