package namespace

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/metadata"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllerutil"
)

// RecheckInterval is how soon a namespace with content left is looked at
// again.
const RecheckInterval = 2 * time.Second

// Controller empties and finalizes terminating namespaces.
type Controller struct {
	log       *slog.Logger
	client    kubernetes.Interface
	discovery discovery.DiscoveryInterface
	meta      metadata.Interface
	lister    corelisters.NamespaceLister
	synced    toolscache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
}

// New builds the controller. Nothing runs until Run.
func New(log *slog.Logger, client kubernetes.Interface, meta metadata.Interface, nsInformer coreinformers.NamespaceInformer) (*Controller, error) {
	c := &Controller{
		log:       log.With("controller", "namespace"),
		client:    client,
		discovery: client.Discovery(),
		meta:      meta,
		lister:    nsInformer.Lister(),
		synced:    nsInformer.Informer().HasSynced,
		queue:     controllerutil.NewQueue("namespace"),
	}
	enqueue := func(obj any) {
		if ns, ok := obj.(*v1.Namespace); ok && ns.DeletionTimestamp != nil {
			c.queue.Add(ns.Name)
		}
	}
	if _, err := nsInformer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return nil, fmt.Errorf("failed to add namespace handler: %w", err)
	}
	return c, nil
}

// Run waits for the cache, then processes terminating namespaces until
// ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	if !toolscache.WaitForNamedCacheSync("namespace", ctx.Done(), c.synced) {
		return nil
	}
	c.log.Info("controller started", "workers", workers)
	controllerutil.RunWorkers(ctx, c.log, c.queue, workers, c.sync)
	return nil
}

func hasKubernetesFinalizer(ns *v1.Namespace) bool {
	for _, f := range ns.Spec.Finalizers {
		if f == v1.FinalizerKubernetes {
			return true
		}
	}
	return false
}

func (c *Controller) sync(ctx context.Context, name string) error {
	cached, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if cached.DeletionTimestamp == nil || !hasKubernetesFinalizer(cached) {
		return nil
	}
	ns := cached.DeepCopy()
	resources, err := c.namespacedResources()
	if err != nil {
		c.setCondition(ctx, ns, v1.NamespaceDeletionDiscoveryFailure, "DiscoveryFailed", fmt.Sprintf("Discovery failed for some groups: %v", err))
		return err
	}
	// Pods go first, as upstream's ordered namespace deletion does: while
	// any remains (a finalizer holds it, or it is still terminating),
	// nothing else is deleted, so what a pod uses (its Secrets,
	// ConfigMaps, ServiceAccount, claims) outlives it.
	podsGVR := v1.SchemeGroupVersion.WithResource("pods")
	if slices.Contains(resources, podsGVR) {
		n, err := c.deleteAll(ctx, name, podsGVR)
		if err == nil && n > 0 {
			err = fmt.Errorf("unexpected items still remain in namespace: %s for gvr: %v", name, podsGVR)
		}
		if err != nil {
			c.setCondition(ctx, ns, v1.NamespaceContentRemaining, "SomeResourcesRemain", fmt.Sprintf("Some resources are remaining: pods has %d resource instances", n))
			c.setCondition(ctx, ns, v1.NamespaceDeletionContentFailure, "ContentDeletionFailed", "Failed to delete all resource types, 1 errors occurred: "+err.Error())
			c.log.Debug("namespace waits for its pods", "namespace", name, "pods", n)
			c.queue.AddAfter(name, RecheckInterval)
			return nil
		}
	}
	remaining := map[string]int{}
	var failures []string
	for _, gvr := range resources {
		n, err := c.deleteAll(ctx, name, gvr)
		if err != nil {
			failures = append(failures, err.Error())
			continue
		}
		if n > 0 {
			remaining[gvr.GroupResource().String()] = n
		}
	}
	if len(failures) > 0 {
		c.setCondition(ctx, ns, v1.NamespaceDeletionContentFailure, "ContentDeletionFailed", "Failed to delete all resource types, "+strings.Join(failures, ", "))
		return fmt.Errorf("failed to empty namespace %q: %s", name, strings.Join(failures, "; "))
	}
	if len(remaining) > 0 {
		var kinds, counts []string
		for r, n := range remaining {
			kinds = append(kinds, r)
			counts = append(counts, fmt.Sprintf("%s has %d resource instances", r, n))
		}
		sort.Strings(kinds)
		sort.Strings(counts)
		c.setCondition(ctx, ns, v1.NamespaceContentRemaining, "SomeResourcesRemain", fmt.Sprintf("Some resources are remaining: %s", strings.Join(counts, ", ")))
		c.log.Debug("namespace content remains", "namespace", name, "resources", kinds)
		c.queue.AddAfter(name, RecheckInterval)
		return nil
	}
	var finalizers []v1.FinalizerName
	for _, f := range ns.Spec.Finalizers {
		if f != v1.FinalizerKubernetes {
			finalizers = append(finalizers, f)
		}
	}
	ns.Spec.Finalizers = finalizers
	if _, err := c.client.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to finalize namespace %q: %w", name, err)
	}
	c.log.Info("namespace emptied and finalized", "namespace", name)
	return nil
}

// namespacedResources lists the namespaced resources that can be listed
// and deleted.
func (c *Controller) namespacedResources() ([]schema.GroupVersionResource, error) {
	lists, err := c.discovery.ServerPreferredNamespacedResources()
	if err != nil && len(lists) == 0 {
		return nil, err
	}
	var out []schema.GroupVersionResource
	for _, list := range lists {
		gv, perr := schema.ParseGroupVersion(list.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range list.APIResources {
			verbs := "," + strings.Join(r.Verbs, ",") + ","
			if strings.Contains(r.Name, "/") || !strings.Contains(verbs, ",list,") || !strings.Contains(verbs, ",delete,") {
				continue
			}
			out = append(out, gv.WithResource(r.Name))
		}
	}
	return out, err
}

// deleteAll deletes every object of gvr in namespace that is not already
// being deleted, and returns how many remain.
func (c *Controller) deleteAll(ctx context.Context, namespace string, gvr schema.GroupVersionResource) (int, error) {
	client := c.meta.Resource(gvr).Namespace(namespace)
	list, err := client.List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("failed to list %s: %w", gvr.Resource, err)
	}
	background := metav1.DeletePropagationBackground
	for _, item := range list.Items {
		if item.DeletionTimestamp != nil {
			continue
		}
		err := client.Delete(ctx, item.Name, metav1.DeleteOptions{PropagationPolicy: &background})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return 0, fmt.Errorf("failed to delete %s %q: %w", gvr.Resource, item.Name, err)
		}
	}
	return len(list.Items), nil
}

// setCondition records a namespace deletion condition; a failure to write
// it is logged, not returned, since the deletion itself goes on.
func (c *Controller) setCondition(ctx context.Context, ns *v1.Namespace, t v1.NamespaceConditionType, reason, message string) {
	for i := range ns.Status.Conditions {
		cond := &ns.Status.Conditions[i]
		if cond.Type != t {
			continue
		}
		if cond.Status == v1.ConditionTrue && cond.Reason == reason && cond.Message == message {
			return
		}
		ns.Status.Conditions = append(ns.Status.Conditions[:i], ns.Status.Conditions[i+1:]...)
		break
	}
	ns.Status.Conditions = append(ns.Status.Conditions, v1.NamespaceCondition{
		Type: t, Status: v1.ConditionTrue, LastTransitionTime: metav1.Now(), Reason: reason, Message: message,
	})
	updated, err := c.client.CoreV1().Namespaces().UpdateStatus(ctx, ns, metav1.UpdateOptions{})
	if err != nil {
		c.log.Debug("failed to update namespace conditions", "namespace", ns.Name, "err", err)
		return
	}
	*ns = *updated
}
