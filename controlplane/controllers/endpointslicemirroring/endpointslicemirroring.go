package endpointslicemirroring

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllerutil"
)

const (
	// ControllerName is the managed-by label value of mirrored slices, as
	// Kubernetes' controller sets it.
	ControllerName = "endpointslicemirroring-controller.k8s.io"
	// MaxEndpointsPerSubset is how many addresses of one Endpoints subset
	// are mirrored: kube-controller-manager's default
	// --mirroring-max-endpoints-per-subset.
	MaxEndpointsPerSubset = 1000
)

// errStaleCache asks for a later sync: the slice informer has not yet seen
// the controller's own writes.
var errStaleCache = errors.New("EndpointSlice informer cache is out of date")

// Controller is the EndpointSlice mirroring controller.
type Controller struct {
	log         *slog.Logger
	client      kubernetes.Interface
	recorder    record.EventRecorder
	epLister    corelisters.EndpointsLister
	svcLister   corelisters.ServiceLister
	sliceLister discoverylisters.EndpointSliceLister
	synced      []toolscache.InformerSynced
	queue       workqueue.TypedRateLimitingInterface[string]
	tracker     *tracker
}

// New builds the controller on the given informers. Nothing runs until Run.
func New(log *slog.Logger, client kubernetes.Interface, recorder record.EventRecorder, epInformer coreinformers.EndpointsInformer, svcInformer coreinformers.ServiceInformer, sliceInformer discoveryinformers.EndpointSliceInformer) (*Controller, error) {
	c := &Controller{
		log:         log.With("controller", "endpointslicemirroring"),
		client:      client,
		recorder:    recorder,
		epLister:    epInformer.Lister(),
		svcLister:   svcInformer.Lister(),
		sliceLister: sliceInformer.Lister(),
		synced:      []toolscache.InformerSynced{epInformer.Informer().HasSynced, svcInformer.Informer().HasSynced, sliceInformer.Informer().HasSynced},
		queue:       controllerutil.NewQueue("endpoint_slice_mirroring"),
		tracker:     newTracker(),
	}
	if _, err := epInformer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: c.endpointsChanged,
		UpdateFunc: func(old, cur any) {
			if shouldMirror(endpointsOf(old)) {
				c.enqueue(cur)
				return
			}
			c.endpointsChanged(cur)
		},
		DeleteFunc: c.endpointsChanged,
	}); err != nil {
		return nil, fmt.Errorf("failed to add endpoints handler: %w", err)
	}
	if _, err := svcInformer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: c.serviceChanged, UpdateFunc: c.serviceUpdated, DeleteFunc: c.serviceChanged,
	}); err != nil {
		return nil, fmt.Errorf("failed to add service handler: %w", err)
	}
	if _, err := sliceInformer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if s := sliceOf(obj); s != nil && managed(s) && c.tracker.shouldSync(s) {
				c.enqueueFor(s)
			}
		},
		UpdateFunc: c.sliceUpdated,
		DeleteFunc: func(obj any) {
			if s := sliceOf(obj); s != nil && managed(s) && c.tracker.has(s) && !c.tracker.gone(s) {
				c.enqueueFor(s)
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("failed to add endpointslice handler: %w", err)
	}
	return c, nil
}

// Run waits for the caches, then syncs Endpoints until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	if !toolscache.WaitForNamedCacheSync("endpoint_slice_mirroring", ctx.Done(), c.synced...) {
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

// enqueueFor queues the Endpoints a slice mirrors.
func (c *Controller) enqueueFor(s *discoveryv1.EndpointSlice) {
	if s.Labels[discoveryv1.LabelServiceName] != "" {
		c.queue.Add(keyOf(s))
	}
}

func (c *Controller) endpointsChanged(obj any) {
	if shouldMirror(endpointsOf(obj)) {
		c.enqueue(obj)
	}
}

// serviceChanged queues the Endpoints of a Service without a selector: a
// Service with one has its slices from the EndpointSlice controller.
func (c *Controller) serviceChanged(obj any) {
	if svc := serviceOf(obj); svc != nil && svc.Spec.Selector == nil {
		c.enqueue(svc)
	}
}

// serviceUpdated queues the Endpoints of a Service that gained or lost its
// selector.
func (c *Controller) serviceUpdated(old, cur any) {
	o, n := serviceOf(old), serviceOf(cur)
	if o != nil && n != nil && (o.Spec.Selector == nil) != (n.Spec.Selector == nil) {
		c.enqueue(n)
	}
}

// sliceUpdated queues the Endpoints of a slice that someone else changed,
// that changed hands, or that moved to another service-name.
func (c *Controller) sliceUpdated(old, cur any) {
	o, n := sliceOf(old), sliceOf(cur)
	if o == nil || n == nil {
		return
	}
	if o.Labels[discoveryv1.LabelServiceName] != n.Labels[discoveryv1.LabelServiceName] {
		c.enqueueFor(o)
		c.enqueueFor(n)
		return
	}
	if managed(o) != managed(n) || (managed(n) && c.tracker.shouldSync(n)) {
		c.enqueueFor(n)
	}
}

// sync makes the mirrored slices of the Endpoints key match it, or deletes
// them when it is not to be mirrored.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	ep, err := c.epLister.Endpoints(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return c.deleteMirrored(ctx, key, "endpoints gone")
	}
	if err != nil {
		return err
	}
	if !shouldMirror(ep) {
		return c.deleteMirrored(ctx, key, "endpoints not to be mirrored")
	}
	svc, err := c.svcLister.Services(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return c.deleteMirrored(ctx, key, "service gone")
	}
	if err != nil {
		return err
	}
	if svc.Spec.Selector != nil {
		return c.deleteMirrored(ctx, key, "service has a selector")
	}
	existing, err := c.mirrored(namespace, name)
	if err != nil {
		return err
	}
	if c.tracker.stale(key, existing) {
		return errStaleCache
	}
	return c.reconcile(ctx, ep, existing)
}

// mirrored lists the slices the controller keeps for the Endpoints
// namespace/name.
func (c *Controller) mirrored(namespace, name string) ([]*discoveryv1.EndpointSlice, error) {
	return c.sliceLister.EndpointSlices(namespace).List(labels.SelectorFromSet(labels.Set{
		discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: ControllerName,
	}))
}

// deleteMirrored deletes every slice mirrored for the Endpoints key.
func (c *Controller) deleteMirrored(ctx context.Context, key, why string) error {
	c.tracker.forget(key)
	namespace, name, _ := toolscache.SplitMetaNamespaceKey(key)
	existing, err := c.mirrored(namespace, name)
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range existing {
		err := c.client.DiscoveryV1().EndpointSlices(namespace).Delete(ctx, s.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("failed to delete EndpointSlice %q: %w", s.Name, err))
			continue
		}
		c.log.Debug("mirrored endpoint slice deleted", "endpoints", key, "slice", s.Name, "why", why)
	}
	return errors.Join(errs...)
}

// shouldMirror reports whether ep may be mirrored: it is not labelled
// skip-mirror (the API server's kubernetes Endpoints is) and is not a
// leader election record. Whether its Service allows it is for sync.
func shouldMirror(ep *v1.Endpoints) bool {
	if ep == nil || ep.Labels[discoveryv1.LabelSkipMirror] == "true" {
		return false
	}
	_, leader := ep.Annotations[resourcelock.LeaderElectionRecordAnnotationKey]
	return !leader
}

// managed reports whether s is a slice this controller keeps.
func managed(s *discoveryv1.EndpointSlice) bool {
	return s.Labels[discoveryv1.LabelManagedBy] == ControllerName
}

func endpointsOf(obj any) *v1.Endpoints {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	ep, _ := obj.(*v1.Endpoints)
	return ep
}

func serviceOf(obj any) *v1.Service {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	svc, _ := obj.(*v1.Service)
	return svc
}

func sliceOf(obj any) *discoveryv1.EndpointSlice {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	s, _ := obj.(*discoveryv1.EndpointSlice)
	return s
}
