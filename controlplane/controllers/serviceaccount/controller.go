package serviceaccount

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/glassplane/glassplane/controlplane/trim"
)

// Names of what the controller keeps in every namespace.
const (
	// DefaultServiceAccountName is the ServiceAccount pods run as by default.
	DefaultServiceAccountName = "default"
	// RootCAConfigMapName holds the cluster CA under RootCAKey.
	RootCAConfigMapName = "kube-root-ca.crt"
	RootCAKey           = "ca.crt"
	// DescriptionAnnotation and rootCADescription are what Kubernetes'
	// root-ca-cert-publisher puts on the ConfigMap.
	DescriptionAnnotation = "kubernetes.io/description"
	rootCADescription     = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
)

// Controller keeps the default ServiceAccount and the root CA ConfigMap in
// every active namespace.
type Controller struct {
	client kubernetes.Interface
	caPEM  []byte
	log    *slog.Logger

	factories  []informers.SharedInformerFactory
	namespaces corelisters.NamespaceLister
	accounts   corelisters.ServiceAccountLister
	configMaps corelisters.ConfigMapLister
	synced     []cache.InformerSynced
	queue      workqueue.TypedRateLimitingInterface[string]

	ready     chan struct{}
	readyOnce sync.Once
	mu        sync.Mutex // guards pending
	// pending are the namespaces found at start not yet synced once; Ready
	// closes when it empties.
	pending map[string]bool
}

// NewController returns a controller acting through client that publishes
// caPEM as kube-root-ca.crt.
func NewController(client kubernetes.Interface, caPEM []byte, log *slog.Logger) *Controller {
	if log == nil {
		log = slog.Default()
	}
	c := &Controller{
		client: client,
		caPEM:  caPEM,
		log:    log.With("controller", "serviceaccount"),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "serviceaccount"}),
		ready: make(chan struct{}),
	}
	byName := func(name string) informers.SharedInformerOption {
		return informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		})
	}
	trimmed := informers.WithTransform(trim.ManagedFields)
	all := informers.NewSharedInformerFactoryWithOptions(client, 0, trimmed)
	sas := informers.NewSharedInformerFactoryWithOptions(client, 0, byName(DefaultServiceAccountName), trimmed)
	cms := informers.NewSharedInformerFactoryWithOptions(client, 0, byName(RootCAConfigMapName), trimmed)
	c.factories = []informers.SharedInformerFactory{all, sas, cms}

	nsInformer := all.Core().V1().Namespaces()
	saInformer := sas.Core().V1().ServiceAccounts()
	cmInformer := cms.Core().V1().ConfigMaps()
	c.namespaces, c.accounts, c.configMaps = nsInformer.Lister(), saInformer.Lister(), cmInformer.Lister()
	c.synced = []cache.InformerSynced{nsInformer.Informer().HasSynced, saInformer.Informer().HasSynced, cmInformer.Informer().HasSynced}

	nsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueueNamespace(obj) },
		UpdateFunc: func(_, obj any) { c.enqueueNamespace(obj) },
	})
	inNamespace := cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { c.enqueueNamespaceOf(obj) },
		DeleteFunc: func(obj any) { c.enqueueNamespaceOf(obj) },
	}
	saInformer.Informer().AddEventHandler(inNamespace)
	cmInformer.Informer().AddEventHandler(inNamespace)
	return c
}

// Ready is closed once every namespace that existed when Run started has
// its default ServiceAccount and root CA ConfigMap.
func (c *Controller) Ready() <-chan struct{} { return c.ready }

func (c *Controller) enqueueNamespace(obj any) {
	if ns, ok := obj.(*corev1.Namespace); ok {
		c.queue.Add(ns.Name)
	}
}

func (c *Controller) enqueueNamespaceOf(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if m, ok := obj.(metav1.Object); ok {
		c.queue.Add(m.GetNamespace())
	}
}

// Run starts the informers, waits for their caches and runs workers until
// ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	for _, f := range c.factories {
		f.Start(ctx.Done())
	}
	defer func() {
		for _, f := range c.factories {
			f.Shutdown()
		}
	}()
	c.log.Info("waiting for informer caches to sync")
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("failed to wait for the serviceaccount controller's caches: %w", ctx.Err())
	}
	nss, err := c.namespaces.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("failed to list namespaces: %w", err)
	}
	c.mu.Lock()
	c.pending = map[string]bool{}
	for _, ns := range nss {
		if ns.Status.Phase != corev1.NamespaceTerminating {
			c.pending[ns.Name] = true
		}
	}
	c.mu.Unlock()
	c.markSynced("")
	if workers < 1 {
		workers = 1
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.runWorker, time.Second) })
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

// markSynced notes that namespace was synced and closes Ready when no
// namespace found at start is left.
func (c *Controller) markSynced(namespace string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending == nil {
		return
	}
	delete(c.pending, namespace)
	if len(c.pending) == 0 {
		c.readyOnce.Do(func() { close(c.ready) })
	}
}

func (c *Controller) runWorker(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		c.log.Warn("failed to sync namespace, will retry", "namespace", key, "err", err)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	c.markSynced(key)
	return true
}

// sync makes sure an active namespace has its default ServiceAccount and
// root CA ConfigMap. It is idempotent.
func (c *Controller) sync(ctx context.Context, namespace string) error {
	ns, err := c.namespaces.Get(namespace)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.Status.Phase == corev1.NamespaceTerminating || ns.DeletionTimestamp != nil {
		return nil
	}
	if err := c.syncServiceAccount(ctx, namespace); err != nil {
		return err
	}
	return c.syncRootCA(ctx, namespace)
}

func (c *Controller) syncServiceAccount(ctx context.Context, namespace string) error {
	if _, err := c.accounts.ServiceAccounts(namespace).Get(DefaultServiceAccountName); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DefaultServiceAccountName}}
	_, err := c.client.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{})
	switch {
	case err == nil:
		c.log.Debug("created the default service account", "namespace", namespace)
		return nil
	case apierrors.IsAlreadyExists(err), isTerminating(err):
		return nil
	}
	return fmt.Errorf("failed to create service account %q: %w", namespace+"/"+DefaultServiceAccountName, err)
}

func (c *Controller) syncRootCA(ctx context.Context, namespace string) error {
	data := map[string]string{RootCAKey: string(c.caPEM)}
	cm, err := c.configMaps.ConfigMaps(namespace).Get(RootCAConfigMapName)
	if apierrors.IsNotFound(err) {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: RootCAConfigMapName, Annotations: map[string]string{DescriptionAnnotation: rootCADescription}},
			Data:       data,
		}
		_, err := c.client.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) || isTerminating(err) {
			return nil
		}
		return fmt.Errorf("failed to create configmap %q: %w", namespace+"/"+RootCAConfigMapName, err)
	}
	if err != nil {
		return err
	}
	if cm.Data[RootCAKey] == data[RootCAKey] && len(cm.Data) == 1 && cm.Annotations[DescriptionAnnotation] == rootCADescription {
		return nil
	}
	cm = cm.DeepCopy()
	cm.Data = data
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[DescriptionAnnotation] = rootCADescription
	if _, err := c.client.CoreV1().ConfigMaps(namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to update configmap %q: %w", namespace+"/"+RootCAConfigMapName, err)
	}
	return nil
}

// isTerminating reports whether err refuses a create because the namespace
// is being terminated.
func isTerminating(err error) bool {
	return apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}
