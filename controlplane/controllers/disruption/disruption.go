package disruption

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	policyinformers "k8s.io/client-go/informers/policy/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllerutil"
)

// DeletionTimeout is how long a pod stays in a PodDisruptionBudget's
// status.disruptedPods, not counted as healthy, after the eviction API
// admitted its eviction: if it is not being deleted by then, the entry is
// dropped. It is Kubernetes' value.
const DeletionTimeout = 2 * time.Minute

// Controller is the disruption controller.
type Controller struct {
	log       *slog.Logger
	client    kubernetes.Interface
	recorder  record.EventRecorder
	pdbLister policylisters.PodDisruptionBudgetLister
	podLister corelisters.PodLister
	rsLister  appslisters.ReplicaSetLister
	dLister   appslisters.DeploymentLister
	ssLister  appslisters.StatefulSetLister           // nil until AddStatefulSets
	rcLister  corelisters.ReplicationControllerLister // nil until AddReplicationControllers
	synced    []toolscache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	// now is the clock, replaced in tests.
	now func() time.Time
}

// New builds the controller on the given informers: PodDisruptionBudgets
// and pods are watched, ReplicaSets and Deployments only read for their
// scale. Nothing runs until Run.
func New(log *slog.Logger, client kubernetes.Interface, recorder record.EventRecorder, pdbInformer policyinformers.PodDisruptionBudgetInformer,
	podInformer coreinformers.PodInformer, rsInformer appsinformers.ReplicaSetInformer, dInformer appsinformers.DeploymentInformer) (*Controller, error) {
	c := &Controller{
		log:       log.With("controller", "disruption"),
		client:    client,
		recorder:  recorder,
		pdbLister: pdbInformer.Lister(),
		podLister: podInformer.Lister(),
		rsLister:  rsInformer.Lister(),
		dLister:   dInformer.Lister(),
		synced: []toolscache.InformerSynced{pdbInformer.Informer().HasSynced, podInformer.Informer().HasSynced,
			rsInformer.Informer().HasSynced, dInformer.Informer().HasSynced},
		queue: controllerutil.NewQueue("disruption"),
		now:   time.Now,
	}
	if _, err := pdbInformer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
		DeleteFunc: c.enqueue,
	}); err != nil {
		return nil, fmt.Errorf("failed to add pod disruption budget handler: %w", err)
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

// Run waits for the caches, then syncs PodDisruptionBudgets with workers
// goroutines until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	if !toolscache.WaitForNamedCacheSync("disruption", ctx.Done(), c.synced...) {
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

// enqueuePodBudgets enqueues every PodDisruptionBudget whose selector
// matches pod. Kubernetes enqueues only the first one; enqueueing all keeps
// each budget's status current when budgets overlap.
func (c *Controller) enqueuePodBudgets(pod *v1.Pod) {
	pdbs, err := c.pdbLister.GetPodPodDisruptionBudgets(pod)
	if err != nil {
		return
	}
	for _, pdb := range pdbs {
		c.enqueue(pdb)
	}
}

func (c *Controller) addPod(obj any) {
	c.enqueuePodBudgets(obj.(*v1.Pod))
}

func (c *Controller) updatePod(oldObj, newObj any) {
	cur, old := newObj.(*v1.Pod), oldObj.(*v1.Pod)
	c.enqueuePodBudgets(cur)
	if !reflect.DeepEqual(cur.Labels, old.Labels) {
		c.enqueuePodBudgets(old)
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
	c.enqueuePodBudgets(pod)
}

// sync recomputes one PodDisruptionBudget's status. When it cannot be
// computed, the budget allows no disruptions (condition SyncFailed) and the
// key is retried with backoff; a conflicting write is only retried.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pdb, err := c.pdbLister.PodDisruptionBudgets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	err = c.trySync(ctx, key, pdb)
	if err == nil || apierrors.IsConflict(err) {
		return err
	}
	if fsErr := c.failSafe(ctx, pdb, err); fsErr != nil {
		return fsErr
	}
	return err
}

// trySync computes and writes pdb's status, and looks again when the
// youngest disruptedPods entry expires.
func (c *Controller) trySync(ctx context.Context, key string, pdb *policyv1.PodDisruptionBudget) error {
	pods, err := c.podsFor(pdb)
	if err != nil {
		c.recorder.Eventf(pdb, v1.EventTypeWarning, "NoPods", "Failed to get pods: %v", err)
		return err
	}
	if len(pods) == 0 {
		c.recorder.Eventf(pdb, v1.EventTypeNormal, "NoPods", "No matching pods found")
	}
	expected, desiredHealthy, unmanaged, err := c.expectedPodCount(pdb, pods)
	if err != nil {
		c.recorder.Eventf(pdb, v1.EventTypeWarning, "CalculateExpectedPodCountFailed", "Failed to calculate the number of expected pods: %v", err)
		return err
	}
	if len(unmanaged) > 0 {
		c.log.Debug("pod disruption budget selects pods without a controller", "pdb", key, "pods", unmanaged)
		c.recorder.Eventf(pdb, v1.EventTypeWarning, "UnmanagedPods", "Pods selected by this PodDisruptionBudget (selector: %v) were found "+
			"to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. "+
			"To account for these pods please set \".spec.minAvailable\" field of the PDB to an integer value.", pdb.Spec.Selector)
	}
	now := c.now()
	disrupted, recheck := c.disruptedPods(pods, pdb, now)
	status := newStatus(pdb, countHealthyPods(pods, disrupted), desiredHealthy, expected, disrupted)
	if err := c.writeStatus(ctx, pdb, status); err != nil {
		return err
	}
	if !recheck.IsZero() {
		c.queue.AddAfter(key, recheck.Sub(now))
	}
	return nil
}

// podsFor returns the pods in pdb's namespace that its selector matches:
// none for a nil selector, all for an empty one (policy/v1).
func (c *Controller) podsFor(pdb *policyv1.PodDisruptionBudget) ([]*v1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return nil, err
	}
	return c.podLister.Pods(pdb.Namespace).List(sel)
}
