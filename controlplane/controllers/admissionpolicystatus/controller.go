package admissionpolicystatus

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	policyvalidating "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery/cached/memory"
	admissioninformers "k8s.io/client-go/informers/admissionregistration/v1"
	"k8s.io/client-go/kubernetes"
	admissionlisters "k8s.io/client-go/listers/admissionregistration/v1"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// ControllerName is upstream's name of the controller.
const ControllerName = "validatingadmissionpolicy-status"

// Controller reconciles each policy's status.
type Controller struct {
	log      *slog.Logger
	client   kubernetes.Interface
	policies admissionlisters.ValidatingAdmissionPolicyLister
	synced   cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
	checker  *policyvalidating.TypeChecker
}

// New returns the controller over the policies informer; the type checker
// reads schemas and the REST mapping through client's discovery.
func New(log *slog.Logger, client kubernetes.Interface, policies admissioninformers.ValidatingAdmissionPolicyInformer) (*Controller, error) {
	c := &Controller{
		log: log.With("controller", ControllerName), client: client,
		policies: policies.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: ControllerName}),
		checker: &policyvalidating.TypeChecker{
			SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: client.Discovery()},
			RestMapper:     restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery())),
		},
	}
	enqueue := func(obj any) {
		if p, ok := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy); ok {
			c.queue.Add(p.Name)
		}
	}
	reg, err := policies.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("failed to watch validatingadmissionpolicies: %w", err)
	}
	c.synced = reg.HasSynced
	return c, nil
}

// Run type-checks policies with workers goroutines until ctx ends.
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
			c.log.Debug("failed to update the policy's status", "policy", key, "err", err)
			c.queue.AddRateLimited(key)
		} else {
			c.queue.Forget(key)
		}
		c.queue.Done(key)
	}
}

// sync writes the type-checking warnings of a policy whose generation its
// status has not observed yet.
func (c *Controller) sync(ctx context.Context, name string) error {
	policy, err := c.policies.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if policy.Generation <= policy.Status.ObservedGeneration {
		return nil
	}
	warnings := c.checker.Check(policy)
	next := policy.DeepCopy()
	next.Status.ObservedGeneration = policy.Generation
	next.Status.TypeChecking = &admissionregistrationv1.TypeChecking{ExpressionWarnings: warnings}
	_, err = c.client.AdmissionregistrationV1().ValidatingAdmissionPolicies().UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: ControllerName})
	return err
}
