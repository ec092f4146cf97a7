package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/glassplane/glassplane/controlplane/kubeversion"
	"github.com/glassplane/glassplane/controlplane/node/runtime"
	"github.com/glassplane/glassplane/controlplane/trim"
	"github.com/glassplane/glassplane/controlplane/usage"
)

// Defaults for Config.
const (
	DefaultLeaseDuration      = 40 * time.Second
	DefaultLeaseRenewInterval = 10 * time.Second
	DefaultNodeStatusInterval = time.Minute
	// DefaultNodeStatusReportInterval is kubelet's nodeStatusReportFrequency.
	DefaultNodeStatusReportInterval = 5 * time.Minute
	DefaultPodResyncInterval        = time.Second
	DefaultKubeletVersion           = kubeversion.GitVersion
	DefaultTerminationGrace         = 30 * time.Second
	LeaseNamespace                  = "kube-node-lease"
	LabelRuntime                    = "node.glassplane.io/runtime"
	// AnnotationPodNetwork says how the node's pods are networked: "cni"
	// or why they share the host's network.
	AnnotationPodNetwork        = "node.glassplane.io/pod-network"
	initialRestartBackoff       = 10 * time.Second
	maxRestartBackoff           = 5 * time.Minute
	initialImagePullBackoff     = 10 * time.Second
	maxImagePullBackoff         = 5 * time.Minute
	registerRetryInitialBackoff = 200 * time.Millisecond
	registerRetryMaxBackoff     = 7 * time.Second
)

// Config is what the user sets for one node agent.
type Config struct {
	// NodeName is the Node object's name. Required.
	NodeName string
	// Runtime runs the pods' containers. Required.
	Runtime runtime.Runtime
	// Simulated marks a node whose runtime runs no real processes: it gets
	// the simulated default capacity and pod IPs from a made-up range.
	Simulated bool
	// SimulatedUsage is the CPU and memory each container of a simulated
	// node reports ("cpu=250m,memory=64Mi"; usage.DefaultSimulatedUsage
	// when empty) unless its pod's usage.AnnotationSimulatedUsage says
	// otherwise; it is published on the Node under that annotation.
	SimulatedUsage string
	// DataDir is the node's data directory (used to measure
	// ephemeral-storage capacity); "/" when empty.
	DataDir string
	// Labels are added to the labels the agent sets on its Node.
	Labels map[string]string
	// Capacity overrides resources of the node's capacity (and allocatable).
	// A simulated node defaults to 4 cpu, 16Gi memory, 110 pods, 100Gi
	// ephemeral-storage; a containerd node reads the host.
	Capacity corev1.ResourceList
	// SystemReserved is held back from the node's capacity for the system
	// and the agent: allocatable is capacity minus it (never below zero),
	// like kubelet's --system-reserved.
	SystemReserved corev1.ResourceList
	// NodeIP is the node's InternalIP; the host's first non-loopback IPv4
	// address when empty.
	NodeIP string
	// LeaseDuration is the Lease's leaseDurationSeconds (DefaultLeaseDuration).
	LeaseDuration time.Duration
	// LeaseRenewInterval is how often the Lease is renewed (DefaultLeaseRenewInterval).
	LeaseRenewInterval time.Duration
	// NodeStatusInterval is how often the node status is computed and,
	// when it changed, posted (DefaultNodeStatusInterval); the Lease is
	// the frequent heartbeat.
	NodeStatusInterval time.Duration
	// NodeStatusReportInterval is how long an unchanged status goes
	// without being posted (DefaultNodeStatusReportInterval).
	NodeStatusReportInterval time.Duration
	// PodResyncInterval is how often each pod worker checks its containers
	// (DefaultPodResyncInterval).
	PodResyncInterval time.Duration
	// PodCIDR is the node's pod subnet, reported in spec.podCIDR.
	PodCIDR string
	// PodNetworkProblem, when set, says why the node has no pod network
	// (its pods then share the host's); it is shown on the Node.
	PodNetworkProblem string
	// ClusterDNS are the DNS servers of ClusterFirst pods (the kubelet's
	// --cluster-dns): the kube-dns Service's IP.
	ClusterDNS []string
	// ClusterDomain is the cluster's DNS domain that ClusterFirst pods
	// search (the kubelet's --cluster-domain).
	ClusterDomain string
	// ResolvConf is the host's resolv.conf that Default pods get and
	// ClusterFirst pods take search domains from (DefaultResolvConf).
	ResolvConf string
	// Server, when set, serves container logs and exec to the API server.
	Server *ServerConfig
	// KubeletVersion is reported in nodeInfo.kubeletVersion (DefaultKubeletVersion).
	KubeletVersion string
	// Proxy, when set, is the node's service proxy: the agent runs it once
	// the Node is registered, for as long as it runs, and its server
	// answers /glassplane/proxy-rules from it.
	Proxy ServiceProxy
	// Logger receives the agent's logs (slog.Default() when nil).
	Logger *slog.Logger
}

// ServiceProxy is the node's service proxy (controlplane/proxy).
type ServiceProxy interface {
	// Run programs the node until ctx ends.
	Run(ctx context.Context) error
	// Rules lists what the kernel holds for the Service namespace/name (the
	// whole table when name is empty), as text.
	Rules(ctx context.Context, namespace, name string) (string, error)
}

// Agent is one node agent. Create it with New and start it with Run.
type Agent struct {
	cfg         Config
	client      kubernetes.Interface
	log         *slog.Logger
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
	nodeIP      string
	ready       chan struct{}
	podIPs      *podIPAllocator
	// statusKick asks the node status loop to post the status now (after
	// an image pull changed the node's image list).
	statusKick chan struct{}
	// lastReport is when the node status loop last posted the status
	// (only that loop uses it).
	lastReport time.Time

	podLister corelisters.PodLister
	// serviceLister reads every Service, for the pods' service variables.
	serviceLister corelisters.ServiceLister

	// listener and serverPort are set by listenServer before Run registers
	// the node.
	listener   net.Listener
	serverPort int32

	// exitEvents is set while the runtime reports container exits as
	// they happen (exitWatcher): pod workers then need not poll for them.
	exitEvents atomic.Bool

	mu      sync.Mutex // guards workers and wg adds
	workers map[types.UID]*podWorker
	wg      sync.WaitGroup
}

// exitWatcher is a runtime that reports container exits as they happen.
// WatchExits calls exited with the pod UID of each container that exits
// and blocks until ctx ends (nil) or it can no longer watch (the error).
type exitWatcher interface {
	WatchExits(ctx context.Context, exited func(podUID string)) error
}

// New checks cfg, fills in defaults and returns an agent that will talk to
// the API through client.
func New(cfg Config, client kubernetes.Interface) (*Agent, error) {
	if cfg.NodeName == "" {
		return nil, errors.New("failed to create node agent: no node name")
	}
	if cfg.Runtime == nil {
		return nil, fmt.Errorf("failed to create node agent %q: no runtime", cfg.NodeName)
	}
	if client == nil {
		return nil, fmt.Errorf("failed to create node agent %q: no API client", cfg.NodeName)
	}
	if cfg.DataDir == "" {
		cfg.DataDir = "/"
	}
	if _, err := usage.ParseSimulated(cfg.SimulatedUsage); err != nil {
		return nil, fmt.Errorf("failed to create node agent %q: invalid simulated usage: %w", cfg.NodeName, err)
	}
	if cfg.LeaseDuration <= 0 {
		cfg.LeaseDuration = DefaultLeaseDuration
	}
	if cfg.LeaseRenewInterval <= 0 {
		cfg.LeaseRenewInterval = DefaultLeaseRenewInterval
	}
	if cfg.NodeStatusInterval <= 0 {
		cfg.NodeStatusInterval = DefaultNodeStatusInterval
	}
	if cfg.NodeStatusReportInterval <= 0 {
		cfg.NodeStatusReportInterval = DefaultNodeStatusReportInterval
	}
	if cfg.PodResyncInterval <= 0 {
		cfg.PodResyncInterval = DefaultPodResyncInterval
	}
	if cfg.ResolvConf == "" {
		cfg.ResolvConf = DefaultResolvConf
	}
	cfg.ClusterDNS = slices.Clone(cfg.ClusterDNS)
	if cfg.KubeletVersion == "" {
		cfg.KubeletVersion = DefaultKubeletVersion
	}
	cfg.Labels = maps.Clone(cfg.Labels)
	cfg.Capacity = cfg.Capacity.DeepCopy()
	cfg.SystemReserved = cfg.SystemReserved.DeepCopy()
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "node", "node", cfg.NodeName)
	nodeIP := cfg.NodeIP
	if nodeIP == "" {
		nodeIP = hostIPv4()
	}
	var opts []record.BroadcasterOption
	if cfg.Simulated {
		const simulatedEventCache = 512
		// The kubelet's event correlator remembers 4,096 events' keys in
		// each of its three caches, for a node that may run thousands of
		// pods in its life. A simulated node is one of up to hundreds in
		// one process: its caches stay at the size of the pods it can run
		// (110, a handful of events each), so a long class does not keep
		// a million remembered events.
		opts = append(opts, record.WithCorrelatorOptions(record.CorrelatorOptions{LRUCacheSize: simulatedEventCache}))
	}
	broadcaster := record.NewBroadcaster(opts...)
	a := &Agent{
		cfg:         cfg,
		client:      client,
		log:         log,
		broadcaster: broadcaster,
		recorder:    broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: cfg.NodeName}),
		nodeIP:      nodeIP,
		ready:       make(chan struct{}),
		statusKick:  make(chan struct{}, 1),
		workers:     map[types.UID]*podWorker{},
	}
	if cfg.Simulated {
		a.podIPs = newPodIPAllocator(cfg.NodeName)
	}
	return a, nil
}

// Ready is closed once the Node is registered and the pod cache is synced.
func (a *Agent) Ready() <-chan struct{} { return a.ready }

// Run registers the node, then keeps its Lease and status fresh and runs
// the pods bound to it until ctx ends. Containers keep running when Run
// returns; a restarted agent re-adopts them.
func (a *Agent) Run(ctx context.Context) error {
	if ensurer, ok := a.cfg.Runtime.(interface{ EnsureDemoImage(context.Context) error }); ok {
		if err := ensurer.EnsureDemoImage(ctx); err != nil {
			a.log.Warn("demo image unavailable", "image", runtime.DemoImage, "err", err)
		} else {
			a.log.Info("demo image ready", "image", runtime.DemoImage)
		}
	}
	if err := a.listenServer(); err != nil {
		return err
	}
	if a.listener != nil {
		defer a.listener.Close()
	}
	a.log.Info("registering node", "runtime", a.cfg.Runtime.Name())
	node, err := a.registerWithRetry(ctx)
	if err != nil {
		return err
	}
	a.log.Info("node registered", "internalIP", a.nodeIP)
	if a.cfg.Proxy != nil {
		pctx, stopProxy := context.WithCancel(ctx)
		proxyDone := make(chan struct{})
		go func() {
			defer close(proxyDone)
			if err := a.cfg.Proxy.Run(pctx); err != nil {
				a.log.Error("service proxy stopped", "err", err)
			}
		}()
		defer func() { stopProxy(); <-proxyDone }()
	}

	sink := a.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: a.client.CoreV1().Events("")})
	defer a.broadcaster.Shutdown()
	defer sink.Stop()
	nodeRef := &corev1.ObjectReference{Kind: "Node", Name: a.cfg.NodeName, UID: types.UID(a.cfg.NodeName)}
	a.recorder.Event(nodeRef, corev1.EventTypeNormal, "Starting", "Starting kubelet.")
	a.recorder.Eventf(nodeRef, corev1.EventTypeNormal, "NodeReady", "Node %s status is now: NodeReady", a.cfg.NodeName)
	if a.cfg.PodNetworkProblem != "" {
		a.recorder.Eventf(nodeRef, corev1.EventTypeWarning, "NetworkNotReady", "No pod network, pods share the host's network: %s", a.cfg.PodNetworkProblem)
	}

	// Pods start with the variables of the Services that exist, so the
	// Service cache is read once before any pod is (kubelet waits for it
	// before it builds a pod's environment).
	serviceFactory := informers.NewSharedInformerFactoryWithOptions(a.client, 0, informers.WithTransform(trim.ManagedFields))
	serviceInformer := serviceFactory.Core().V1().Services()
	a.serviceLister = serviceInformer.Lister()
	serviceFactory.Start(ctx.Done())
	defer serviceFactory.Shutdown()
	a.log.Info("waiting for service cache to sync")
	if !cache.WaitForCacheSync(ctx.Done(), serviceInformer.Informer().HasSynced) {
		return fmt.Errorf("failed to sync service cache of node %q: %w", a.cfg.NodeName, ctx.Err())
	}

	factory := informers.NewSharedInformerFactoryWithOptions(a.client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", a.cfg.NodeName).String()
		}),
		informers.WithTransform(trim.ManagedFields))
	podInformer := factory.Core().V1().Pods()
	a.podLister = podInformer.Lister()
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { a.dispatch(ctx, obj) },
		UpdateFunc: func(_, obj any) { a.dispatch(ctx, obj) },
		DeleteFunc: func(obj any) { a.dispatch(ctx, obj) },
	}); err != nil {
		return fmt.Errorf("failed to watch pods of node %q: %w", a.cfg.NodeName, err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	a.log.Info("waiting for pod cache to sync")
	if !cache.WaitForCacheSync(ctx.Done(), podInformer.Informer().HasSynced) {
		return fmt.Errorf("failed to sync pod cache of node %q: %w", a.cfg.NodeName, ctx.Err())
	}
	a.cleanupOrphans(ctx)

	var loops sync.WaitGroup
	if a.listener != nil {
		loops.Add(1)
		go func() { defer loops.Done(); a.serve(ctx) }()
	}
	if ew, ok := a.cfg.Runtime.(exitWatcher); ok {
		loops.Add(1)
		go func() { defer loops.Done(); a.watchExits(ctx, ew) }()
	}
	loops.Add(3)
	go func() { defer loops.Done(); a.runVolumeCleanup(ctx) }()
	go func() { defer loops.Done(); a.leaseLoop(ctx, node) }()
	go func() { defer loops.Done(); a.nodeStatusLoop(ctx) }()
	close(a.ready)
	a.log.Info("node agent ready")

	<-ctx.Done()
	loops.Wait()
	// dispatch adds workers only under mu while ctx is live, so once mu
	// has been taken here no worker can be added and wg.Wait is safe.
	a.mu.Lock()
	a.mu.Unlock() //nolint:staticcheck // barrier, see above
	a.wg.Wait()
	a.log.Info("node agent stopped")
	return nil
}

// cleanupOrphans removes the containers and sandboxes of pods that no
// longer exist (deleted while the agent was away).
func (a *Agent) cleanupOrphans(ctx context.Context) {
	uids, err := a.cfg.Runtime.ListPods(ctx)
	if err != nil {
		a.log.Warn("failed to list pods on the node for cleanup", "err", err)
		return
	}
	pods, err := a.podLister.List(labels.Everything())
	if err != nil {
		a.log.Warn("failed to list pods for cleanup", "err", err)
		return
	}
	known := map[string]bool{}
	for _, p := range pods {
		known[string(p.UID)] = true
	}
	for _, uid := range uids {
		if known[uid] {
			continue
		}
		a.log.Info("removing containers of deleted pod", "uid", uid)
		if err := a.cfg.Runtime.RemovePod(ctx, uid); err != nil {
			a.log.Warn("failed to remove containers of deleted pod", "uid", uid, "err", err)
		}
	}
}

// exitWatchRetry is how long the agent waits before watching container
// exits again after the runtime's event stream failed.
const exitWatchRetry = 2 * time.Second

// watchExits wakes a pod's worker when one of its containers exits, so
// that workers need not list their containers every PodResyncInterval
// (each list is a call to containerd and one to each container's shim).
// While the runtime cannot report exits, workers poll as before; every
// worker syncs in full when watching starts or stops, for the exits
// nobody saw.
func (a *Agent) watchExits(ctx context.Context, ew exitWatcher) {
	for {
		a.exitEvents.Store(true)
		a.wakeAll()
		err := ew.WatchExits(ctx, a.wakePod)
		a.exitEvents.Store(false)
		if ctx.Err() != nil {
			return
		}
		a.wakeAll()
		a.log.Warn("failed to watch container exits; pod workers poll their containers until it works again", "err", err)
		t := time.NewTimer(exitWatchRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// wakePod wakes the worker of the pod with this UID, if it has one.
func (a *Agent) wakePod(uid string) {
	a.mu.Lock()
	w := a.workers[types.UID(uid)]
	a.mu.Unlock()
	if w != nil {
		w.wake()
	}
}

// wakeAll wakes every pod worker.
func (a *Agent) wakeAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, w := range a.workers {
		w.wake()
	}
}

// dispatch hands a pod change to the pod's worker, starting one if needed.
func (a *Agent) dispatch(ctx context.Context, obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName != a.cfg.NodeName {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if ctx.Err() != nil {
		return
	}
	w, ok := a.workers[pod.UID]
	if !ok {
		w = newPodWorker(pod)
		a.log.Debug("pod worker started", "pod", pod.Namespace+"/"+pod.Name)
		a.workers[pod.UID] = w
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			a.runWorker(ctx, w)
			a.mu.Lock()
			delete(a.workers, w.uid)
			a.mu.Unlock()
		}()
	}
	w.wake()
}
