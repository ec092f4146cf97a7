package storageversionmigration

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	svmv1 "k8s.io/api/storagemigration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	svminformers "k8s.io/client-go/informers/storagemigration/v1"
	"k8s.io/client-go/kubernetes"
	svmlisters "k8s.io/client-go/listers/storagemigration/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// ControllerName is upstream's name of the controller.
const ControllerName = "storage-version-migrator-controller"

// The reasons of the conditions the controller sets, as upstream's.
const (
	ReasonRunning   = "MigrationRunning"
	ReasonSucceeded = "MigrationSucceeded"
	ReasonFailed    = "MigrationFailed"
)

// Mapper resolves a group and resource to the version the API serves it
// in (a REST mapper's ResourceFor).
type Mapper func(schema.GroupResource) (schema.GroupVersionResource, error)

// Controller carries out StorageVersionMigrations.
type Controller struct {
	log    *slog.Logger
	client kubernetes.Interface
	dyn    dynamic.Interface
	mapper Mapper
	svms   svmlisters.StorageVersionMigrationLister
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
	// UnservedGrace is how long after its creation a migration of a
	// resource that is not served waits for it before it fails
	// (DefaultUnservedGrace): discovery may not have caught up with a CRD
	// made just before, as upstream's controller allows for.
	UnservedGrace time.Duration
}

// DefaultUnservedGrace is upstream's: the migrator fails a migration of a
// resource it cannot find only a minute after the migration was created.
const DefaultUnservedGrace = time.Minute

// New returns the controller over the migrations informer; it reads and
// rewrites the objects through dyn.
func New(log *slog.Logger, client kubernetes.Interface, dyn dynamic.Interface, mapper Mapper, svms svminformers.StorageVersionMigrationInformer) (*Controller, error) {
	c := &Controller{
		log: log.With("controller", ControllerName), client: client, dyn: dyn, mapper: mapper, UnservedGrace: DefaultUnservedGrace,
		svms: svms.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: ControllerName}),
	}
	enqueue := func(obj any) {
		if s, ok := obj.(*svmv1.StorageVersionMigration); ok {
			c.queue.Add(s.Name)
		}
	}
	reg, err := svms.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("failed to watch storageversionmigrations: %w", err)
	}
	c.synced = reg.HasSynced
	return c, nil
}

// Run migrates with workers goroutines until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced) {
		return ctx.Err()
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.work, time.Second) })
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

func (c *Controller) work(ctx context.Context) {
	for {
		key, quit := c.queue.Get()
		if quit {
			return
		}
		if err := c.sync(ctx, key); err != nil {
			c.log.Debug("failed to migrate", "storageversionmigration", key, "err", err)
			c.queue.AddRateLimited(key)
		} else {
			c.queue.Forget(key)
		}
		c.queue.Done(key)
	}
}

// sync carries one migration forward: Failed when its resource is still
// not served UnservedGrace after the migration's creation; else Running with the list's resourceVersion, every object
// rewritten, then Succeeded. A finished migration is left alone.
func (c *Controller) sync(ctx context.Context, name string) error {
	svm, err := c.svms.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	conds := svm.Status.Conditions
	if meta.IsStatusConditionTrue(conds, string(svmv1.MigrationSucceeded)) || meta.IsStatusConditionTrue(conds, string(svmv1.MigrationFailed)) {
		return nil
	}
	gvr, err := c.mapper(schema.GroupResource(svm.Spec.Resource))
	if err != nil {
		if wait := time.Until(svm.CreationTimestamp.Add(c.UnservedGrace)); wait > 0 {
			c.log.Debug("resource not served yet", "storageversionmigration", name, "resource", svm.Spec.Resource.String(), "failing in", wait)
			c.queue.AddAfter(name, wait)
			return nil
		}
		c.log.Info("storage version migration failed: resource not served", "storageversionmigration", name, "resource", svm.Spec.Resource.String(), "err", err)
		return c.setStatus(ctx, svm, "", []metav1.Condition{
			{Type: string(svmv1.MigrationRunning), Status: metav1.ConditionFalse, Reason: ReasonFailed, Message: "the migration failed"},
			{Type: string(svmv1.MigrationFailed), Status: metav1.ConditionTrue, Reason: ReasonFailed, Message: "resource does not exist in discovery"},
		})
	}
	list, err := c.dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("failed to list %s: %w", gvr.GroupResource(), err)
	}
	rv := svm.Status.ResourceVersion
	if rv == "" {
		rv = list.GetResourceVersion()
	}
	if !meta.IsStatusConditionTrue(conds, string(svmv1.MigrationRunning)) || svm.Status.ResourceVersion == "" {
		if err := c.setStatus(ctx, svm, rv, []metav1.Condition{
			{Type: string(svmv1.MigrationRunning), Status: metav1.ConditionTrue, Reason: ReasonRunning, Message: "the migration is running"},
		}); err != nil {
			return err
		}
		// The status update brings the migration back through the
		// queue; it continues there from Running.
		return nil
	}
	for _, item := range list.Items {
		patch := fmt.Appendf(nil, `{"metadata":{"resourceVersion":%q}}`, item.GetResourceVersion())
		ri := c.dyn.Resource(gvr).Namespace(item.GetNamespace())
		_, err := ri.Patch(ctx, item.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: ControllerName})
		// Gone, or written since the list: nothing to migrate.
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("failed to rewrite %s %s: %w", gvr.GroupResource(), item.GetName(), err)
		}
	}
	c.log.Info("storage version migration succeeded", "storageversionmigration", name, "resource", gvr.GroupResource().String(), "objects", len(list.Items))
	return c.setStatus(ctx, svm, rv, []metav1.Condition{
		{Type: string(svmv1.MigrationRunning), Status: metav1.ConditionFalse, Reason: ReasonSucceeded, Message: "the migration has succeeded"},
		{Type: string(svmv1.MigrationSucceeded), Status: metav1.ConditionTrue, Reason: ReasonSucceeded, Message: "the migration has succeeded"},
	})
}

// setStatus writes the migration's resourceVersion and conditions.
func (c *Controller) setStatus(ctx context.Context, svm *svmv1.StorageVersionMigration, rv string, conds []metav1.Condition) error {
	next := svm.DeepCopy()
	next.Status.ResourceVersion = rv
	for _, cond := range conds {
		meta.SetStatusCondition(&next.Status.Conditions, cond)
	}
	_, err := c.client.StoragemigrationV1().StorageVersionMigrations().UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: ControllerName})
	return err
}
