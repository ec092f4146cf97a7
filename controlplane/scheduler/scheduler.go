package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
	"github.com/glassplane/glassplane/controlplane/scheduler/internal/cache"
	"github.com/glassplane/glassplane/controlplane/scheduler/internal/queue"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins"
	"github.com/glassplane/glassplane/controlplane/trim"
)

// Scheduler assigns pending pods to nodes.
type Scheduler struct {
	cfg    Config
	log    *slog.Logger
	client kubernetes.Interface

	informers   informers.SharedInformerFactory
	podLister   corelisters.PodLister
	profiles    map[string]*profile
	cache       *cache.Cache
	snapshot    *cache.Snapshot
	queue       *queue.PriorityQueue
	broadcaster record.EventBroadcaster
	decisions   *decisionStore

	// pdbInformers serves the PodDisruptionBudgets preemption weighs, apart
	// from informers so that an API without them cannot hold up Run (see
	// addPDBInformer).
	pdbInformers informers.SharedInformerFactory
	pdbLister    policylisters.PodDisruptionBudgetLister
	pdbSynced    toolscache.InformerSynced
	// pdbUnavailable is closed, once, when listing PodDisruptionBudgets
	// failed because the API does not serve them or forbids it.
	pdbUnavailable     chan struct{}
	pdbUnavailableOnce sync.Once

	// rng and nextStartNodeIndex are used by the scheduling loop only.
	rng                *rand.Rand
	nextStartNodeIndex int

	// handlerSyncs report whether each event handler has seen the initial
	// list, so the first cycle sees every node and bound pod.
	handlerSyncs []toolscache.InformerSynced

	started atomic.Bool
	ready   chan struct{}
	binds   sync.WaitGroup
}

// profile is one profile at run time: its framework and the recorder of
// events from its scheduler name.
type profile struct {
	fwk               *framework.Framework
	filterPlugins     []string
	recorder          record.EventRecorder
	disablePreemption bool
}

// frameworkHandle is what plugins get from the scheduler.
type frameworkHandle struct {
	client   kubernetes.Interface
	snapshot *cache.Snapshot
}

func (h *frameworkHandle) ClientSet() kubernetes.Interface                { return h.client }
func (h *frameworkHandle) SnapshotSharedLister() framework.NodeInfoLister { return h.snapshot }

// New builds a scheduler that talks to the API through client. Nothing
// runs until Run.
func New(cfg Config, client kubernetes.Interface) (*Scheduler, error) {
	if client == nil {
		return nil, errors.New("failed to create scheduler: no API client")
	}
	cfg = cfg.withDefaults()
	s := &Scheduler{
		cfg:      cfg,
		log:      cfg.Logger.With("component", "scheduler", "scheduler", cfg.SchedulerName),
		client:   client,
		cache:    cache.New(),
		snapshot: cache.NewSnapshot(),
		rng:      rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		ready:    make(chan struct{}),

		pdbUnavailable: make(chan struct{}),
	}

	s.decisions = newDecisionStore(newDecisionClient(client), s.log, cfg.DecisionHistory)

	registry := plugins.NewInTreeRegistry()
	if err := registry.Merge(cfg.Registry); err != nil {
		return nil, fmt.Errorf("failed to create scheduler %q: %w", cfg.SchedulerName, err)
	}
	s.broadcaster = record.NewBroadcaster()
	s.profiles = map[string]*profile{}
	var queueSort func(a, b *framework.QueuedPodInfo) bool
	for _, p := range cfg.Profiles {
		if _, dup := s.profiles[p.SchedulerName]; dup {
			return nil, fmt.Errorf("failed to create scheduler: profile %q is defined twice", p.SchedulerName)
		}
		fwk, err := framework.NewFramework(context.Background(), registry, framework.Profile{SchedulerName: p.SchedulerName, Plugins: p.Plugins}, &frameworkHandle{client: client, snapshot: s.snapshot}, cfg.Parallelism)
		if err != nil {
			return nil, fmt.Errorf("failed to create scheduler %q: %w", p.SchedulerName, err)
		}
		if queueSort == nil {
			queueSort = fwk.QueueSortLess()
		}
		s.profiles[p.SchedulerName] = &profile{
			fwk:               fwk,
			filterPlugins:     fwk.FilterPluginNames(),
			recorder:          s.broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: p.SchedulerName}),
			disablePreemption: p.DisablePreemption,
		}
	}
	s.queue = queue.New(queueSort, queue.Options{
		PodInitialBackoff: cfg.PodInitialBackoff,
		PodMaxBackoff:     cfg.PodMaxBackoff,
	})

	s.informers = informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(trim.ManagedFields))
	if err := s.addEventHandlers(); err != nil {
		return nil, fmt.Errorf("failed to create scheduler %q: %w", cfg.SchedulerName, err)
	}
	s.pdbInformers = informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(trim.ManagedFields))
	if err := s.addPDBInformer(); err != nil {
		return nil, fmt.Errorf("failed to create scheduler %q: %w", cfg.SchedulerName, err)
	}
	return s, nil
}

// Ready is closed once the informer caches have synced and the scheduler
// starts taking pods off its queue.
func (s *Scheduler) Ready() <-chan struct{} { return s.ready }

// Run starts the informers, waits for their caches and schedules pods
// until ctx ends. It returns nil on a clean stop.
func (s *Scheduler) Run(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return fmt.Errorf("failed to run scheduler %q: already running", s.cfg.SchedulerName)
	}
	s.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: s.client.CoreV1().Events("")})
	defer s.broadcaster.Shutdown()

	s.informers.Start(ctx.Done())
	defer s.informers.Shutdown()
	s.pdbInformers.Start(ctx.Done())
	defer s.pdbInformers.Shutdown()
	recordsDone := make(chan struct{})
	go func() {
		defer close(recordsDone)
		s.decisions.run(ctx)
	}()
	defer func() { <-recordsDone }()
	s.log.Info("waiting for informer caches to sync", "informers", "pods,nodes,poddisruptionbudgets")
	for typ, ok := range s.informers.WaitForCacheSync(ctx.Done()) {
		if !ok {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("failed to sync informer cache for %v", typ)
		}
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), s.handlerSyncs...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("failed to deliver the initial lists to the event handlers")
	}
	if !s.waitForPDBCache(ctx) && ctx.Err() != nil {
		return nil
	}
	close(s.ready)
	for name, p := range s.profiles {
		s.log.Info("scheduler started", "profile", name, "filters", p.fwk.FilterPluginNames(), "parallelism", s.cfg.Parallelism)
	}

	schedule := func(ctx context.Context) {
		go s.queue.Run(ctx)
		for {
			pi := s.queue.Pop()
			if pi == nil {
				break
			}
			s.scheduleOne(ctx, pi)
		}
		s.binds.Wait()
	}
	if !s.cfg.LeaderElection.LeaderElect {
		schedule(ctx)
		s.log.Info("scheduler stopped")
		return nil
	}
	err := s.runWithLeaderElection(ctx, schedule)
	s.log.Info("scheduler stopped")
	return err
}

// profileFor returns the profile the pod names (an empty name means the
// default scheduler), or nil when this scheduler is not responsible.
func (s *Scheduler) profileFor(pod *v1.Pod) *profile {
	name := pod.Spec.SchedulerName
	if name == "" {
		name = DefaultSchedulerName
	}
	return s.profiles[name]
}

func podFromObj(obj interface{}) (*v1.Pod, bool) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*v1.Pod)
	return pod, ok
}

func nodeFromObj(obj interface{}) (*v1.Node, bool) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	node, ok := obj.(*v1.Node)
	return node, ok
}

func isTerminal(pod *v1.Pod) bool {
	return pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
}

// addEventHandlers wires the informers to the cache and the queue, the way
// kube-scheduler does: bound, running pods feed the cache; pending pods
// for this scheduler feed the queue; node changes and pod deletions retry
// the unschedulable pods, and so do newly placed pods (pod affinity).
func (s *Scheduler) addEventHandlers() error {
	podInformer := s.informers.Core().V1().Pods()
	s.podLister = podInformer.Lister()
	nodeInformer := s.informers.Core().V1().Nodes()
	var reg toolscache.ResourceEventHandlerRegistration
	var err error

	reg, err = podInformer.Informer().AddEventHandler(toolscache.FilteringResourceEventHandler{
		FilterFunc: func(obj interface{}) bool {
			pod, ok := podFromObj(obj)
			return ok && pod.Spec.NodeName != "" && !isTerminal(pod)
		},
		Handler: toolscache.ResourceEventHandlerFuncs{
			AddFunc: func(obj interface{}) {
				pod, _ := podFromObj(obj)
				if err := s.cache.AddPod(pod); err != nil {
					s.log.Error("failed to add pod to the scheduler cache", "pod", pod.Namespace+"/"+pod.Name, "err", err)
				}
				// A newly placed pod can satisfy a pending pod's required
				// pod affinity.
				s.queue.MoveAllToActiveOrBackoffQueue()
			},
			UpdateFunc: func(_, newObj interface{}) {
				pod, _ := podFromObj(newObj)
				if err := s.cache.UpdatePod(pod); err != nil {
					s.log.Error("failed to update pod in the scheduler cache", "pod", pod.Namespace+"/"+pod.Name, "err", err)
				}
			},
			DeleteFunc: func(obj interface{}) {
				pod, _ := podFromObj(obj)
				if err := s.cache.RemovePod(pod); err != nil {
					s.log.Error("failed to remove pod from the scheduler cache", "pod", pod.Namespace+"/"+pod.Name, "err", err)
				}
				s.queue.MoveAllToActiveOrBackoffQueue()
			},
		},
	})
	if err != nil {
		return fmt.Errorf("failed to add assigned pod handler: %w", err)
	}
	s.handlerSyncs = append(s.handlerSyncs, reg.HasSynced)

	reg, err = podInformer.Informer().AddEventHandler(toolscache.FilteringResourceEventHandler{
		FilterFunc: func(obj interface{}) bool {
			pod, ok := podFromObj(obj)
			return ok && pod.Spec.NodeName == "" && !isTerminal(pod) && s.profileFor(pod) != nil
		},
		Handler: toolscache.ResourceEventHandlerFuncs{
			AddFunc: func(obj interface{}) {
				pod, _ := podFromObj(obj)
				s.log.Debug("pod queued", "pod", pod.Namespace+"/"+pod.Name)
				s.queue.Add(pod)
			},
			UpdateFunc: func(oldObj, newObj interface{}) {
				oldPod, _ := podFromObj(oldObj)
				newPod, _ := podFromObj(newObj)
				s.queue.Update(oldPod, newPod)
			},
			DeleteFunc: func(obj interface{}) {
				pod, _ := podFromObj(obj)
				s.queue.Delete(pod)
			},
		},
	})
	if err != nil {
		return fmt.Errorf("failed to add pending pod handler: %w", err)
	}
	s.handlerSyncs = append(s.handlerSyncs, reg.HasSynced)

	reg, err = podInformer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj interface{}) {
			if pod, ok := podFromObj(obj); ok {
				s.decisions.forget(pod)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("failed to add pod deletion handler: %w", err)
	}
	s.handlerSyncs = append(s.handlerSyncs, reg.HasSynced)

	reg, err = nodeInformer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			node, _ := nodeFromObj(obj)
			s.cache.AddNode(node)
			s.queue.MoveAllToActiveOrBackoffQueue()
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			oldNode, _ := nodeFromObj(oldObj)
			newNode, _ := nodeFromObj(newObj)
			s.cache.UpdateNode(newNode)
			if nodeSchedulingPropertiesChanged(oldNode, newNode) {
				s.queue.MoveAllToActiveOrBackoffQueue()
			}
		},
		DeleteFunc: func(obj interface{}) {
			if node, ok := nodeFromObj(obj); ok {
				s.cache.RemoveNode(node)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("failed to add node handler: %w", err)
	}
	s.handlerSyncs = append(s.handlerSyncs, reg.HasSynced)
	return nil
}

// addPDBInformer sets up the policy/v1 PodDisruptionBudget lister that
// preemption reads. kube-scheduler requires the budgets; here an API that
// does not serve them (NotFound, MethodNotSupported) or does not let the
// scheduler list them (Forbidden) only costs preemption its budget
// awareness: the failure is logged once, Run stops waiting for that cache,
// and preemption sees no budgets until a later list (the informer keeps
// retrying) succeeds.
func (s *Scheduler) addPDBInformer() error {
	inf := s.pdbInformers.Policy().V1().PodDisruptionBudgets()
	s.pdbLister = inf.Lister()
	informer := inf.Informer()
	s.pdbSynced = informer.HasSynced
	err := informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *toolscache.Reflector, err error) {
		if !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) && !apierrors.IsForbidden(err) {
			toolscache.DefaultWatchErrorHandler(ctx, r, err)
			return
		}
		s.pdbUnavailableOnce.Do(func() {
			s.log.Warn("PodDisruptionBudgets are unavailable; preemption ignores them until they can be listed", "resource", "policy/v1 poddisruptionbudgets", "err", err)
			close(s.pdbUnavailable)
		})
	})
	if err != nil {
		return fmt.Errorf("failed to set the PodDisruptionBudget informer's error handler: %w", err)
	}
	return nil
}

// waitForPDBCache waits until the PodDisruptionBudget cache has synced,
// the budgets turned out to be unavailable, or ctx ends. It reports
// whether the cache synced.
func (s *Scheduler) waitForPDBCache(ctx context.Context) bool {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.pdbUnavailable:
			cancel()
		case <-wctx.Done():
		}
	}()
	return toolscache.WaitForCacheSync(wctx.Done(), s.pdbSynced)
}

// nodeSchedulingPropertiesChanged reports whether a node update could make
// a pending pod fit: cordoning, taints, allocatable, labels or conditions.
// Heartbeats alone don't count.
func nodeSchedulingPropertiesChanged(oldNode, newNode *v1.Node) bool {
	if oldNode == nil || newNode == nil {
		return true
	}
	conditions := func(n *v1.Node) map[v1.NodeConditionType]v1.ConditionStatus {
		m := map[v1.NodeConditionType]v1.ConditionStatus{}
		for _, c := range n.Status.Conditions {
			m[c.Type] = c.Status
		}
		return m
	}
	return oldNode.Spec.Unschedulable != newNode.Spec.Unschedulable ||
		!equality.Semantic.DeepEqual(oldNode.Spec.Taints, newNode.Spec.Taints) ||
		!equality.Semantic.DeepEqual(oldNode.Status.Allocatable, newNode.Status.Allocatable) ||
		!reflect.DeepEqual(oldNode.Labels, newNode.Labels) ||
		!reflect.DeepEqual(conditions(oldNode), conditions(newNode))
}
