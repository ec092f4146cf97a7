package controllers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/glassplane/glassplane/controlplane/controllers/admissionpolicystatus"
	"github.com/glassplane/glassplane/controlplane/controllers/cronjob"
	"github.com/glassplane/glassplane/controlplane/controllers/daemonset"
	"github.com/glassplane/glassplane/controlplane/controllers/deployment"
	"github.com/glassplane/glassplane/controlplane/controllers/disruption"
	"github.com/glassplane/glassplane/controlplane/controllers/endpoint"
	"github.com/glassplane/glassplane/controlplane/controllers/endpointslice"
	"github.com/glassplane/glassplane/controlplane/controllers/endpointslicemirroring"
	"github.com/glassplane/glassplane/controlplane/controllers/garbagecollector"
	"github.com/glassplane/glassplane/controlplane/controllers/job"
	"github.com/glassplane/glassplane/controlplane/controllers/namespace"
	"github.com/glassplane/glassplane/controlplane/controllers/nodelifecycle"
	"github.com/glassplane/glassplane/controlplane/controllers/podautoscaler"
	"github.com/glassplane/glassplane/controlplane/controllers/replicaset"
	"github.com/glassplane/glassplane/controlplane/controllers/replicationcontroller"
	"github.com/glassplane/glassplane/controlplane/controllers/resourcequota"
	"github.com/glassplane/glassplane/controlplane/controllers/statefulset"
	"github.com/glassplane/glassplane/controlplane/controllers/storageversionmigration"
	"github.com/glassplane/glassplane/controlplane/controllers/volume"
	"github.com/glassplane/glassplane/controlplane/localpath"
	"github.com/glassplane/glassplane/controlplane/trim"
)

// DefaultWorkers is how many keys each controller syncs at once.
const DefaultWorkers = 5

// Config is what the user sets on the controller manager.
type Config struct {
	// Workers is each controller's number of sync goroutines
	// (DefaultWorkers when zero).
	Workers int
	// NodeMonitorGracePeriod is how long a node may go without a
	// heartbeat before it is unreachable (40s when zero).
	NodeMonitorGracePeriod time.Duration
	// Controllers selects the controllers to run, as
	// kube-controller-manager's --controllers: "*" is every one, "name"
	// adds one, "-name" leaves one out (every one when empty).
	Controllers []string
	Logger      *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// runner is one controller as the manager starts it.
type runner struct {
	name string
	run  func(ctx context.Context, workers int) error
}

// Manager runs the controllers on one shared informer factory.
type Manager struct {
	cfg         Config
	log         *slog.Logger
	client      kubernetes.Interface
	informers   informers.SharedInformerFactory
	broadcaster record.EventBroadcaster
	runners     []runner
	started     atomic.Bool
	ready       chan struct{}
}

// New builds the controllers as clients of the API: client for typed
// objects, meta and dyn for the garbage collector's and namespace
// controller's view of every resource. Nothing runs until Run.
func New(cfg Config, client kubernetes.Interface, meta metadata.Interface, dyn dynamic.Interface) (*Manager, error) {
	if client == nil || meta == nil || dyn == nil {
		return nil, errors.New("failed to create controller manager: missing API client")
	}
	cfg = cfg.withDefaults()
	m := &Manager{
		cfg:         cfg,
		log:         cfg.Logger.With("component", "controller-manager"),
		client:      client,
		informers:   informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(trim.ManagedFields)),
		broadcaster: record.NewBroadcaster(),
		ready:       make(chan struct{}),
	}
	recorder := func(component string) record.EventRecorder {
		return m.broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: component})
	}
	enabled, err := enabledControllers(cfg.Controllers)
	if err != nil {
		return nil, err
	}
	for _, c := range m.constructors(recorder, meta, dyn) {
		if !enabled(c.name) {
			continue
		}
		run, err := c.build()
		if err != nil {
			return nil, fmt.Errorf("failed to create %s: %w", c.name, err)
		}
		m.runners = append(m.runners, runner{c.name, run})
	}
	return m, nil
}

// constructor builds one controller (registering the informers it needs
// in m.informers) and returns its Run.
type constructor struct {
	name  string
	build func() (func(ctx context.Context, workers int) error, error)
}

// constructors lists the controllers New can build, named as
// kube-controller-manager's --controllers names them.
func (m *Manager) constructors(recorder func(string) record.EventRecorder, meta metadata.Interface, dyn dynamic.Interface) []constructor {
	f, client, log := m.informers, m.client, m.log
	return []constructor{
		{"replicaset-controller", func() (func(context.Context, int) error, error) {
			c, err := replicaset.New(log, client, recorder("replicaset-controller"), f.Apps().V1().ReplicaSets(), f.Core().V1().Pods())
			return runOf(c, err)
		}},
		{"replicationcontroller-controller", func() (func(context.Context, int) error, error) {
			c, err := replicationcontroller.New(log, client, recorder("replication-controller"), f.Core().V1().ReplicationControllers(), f.Core().V1().Pods())
			return runOf(c, err)
		}},
		{"deployment-controller", func() (func(context.Context, int) error, error) {
			c, err := deployment.New(log, client, recorder("deployment-controller"), f.Apps().V1().Deployments(), f.Apps().V1().ReplicaSets(), f.Core().V1().Pods())
			return runOf(c, err)
		}},
		{"job-controller", func() (func(context.Context, int) error, error) {
			c, err := job.New(log, client, recorder("job-controller"), f.Batch().V1().Jobs(), f.Core().V1().Pods())
			return runOf(c, err)
		}},
		{"cronjob-controller", func() (func(context.Context, int) error, error) {
			c, err := cronjob.New(log, client, recorder("cronjob-controller"), f.Batch().V1().CronJobs(), f.Batch().V1().Jobs(), clock.RealClock{})
			return runOf(c, err)
		}},
		{"daemonset-controller", func() (func(context.Context, int) error, error) {
			c, err := daemonset.New(log, client, recorder("daemonset-controller"), f.Apps().V1().DaemonSets(), f.Apps().V1().ControllerRevisions(),
				f.Core().V1().Pods(), f.Core().V1().Nodes())
			return runOf(c, err)
		}},
		{"statefulset-controller", func() (func(context.Context, int) error, error) {
			c, err := statefulset.New(log, client, recorder("statefulset-controller"), f.Apps().V1().StatefulSets(), f.Apps().V1().ControllerRevisions(),
				f.Core().V1().Pods())
			return runOf(c, err)
		}},
		{"disruption-controller", func() (func(context.Context, int) error, error) {
			c, err := disruption.New(log, client, recorder("disruption-controller"), f.Policy().V1().PodDisruptionBudgets(), f.Core().V1().Pods(),
				f.Apps().V1().ReplicaSets(), f.Apps().V1().Deployments())
			if err != nil {
				return nil, err
			}
			c.AddStatefulSets(f.Apps().V1().StatefulSets())
			c.AddReplicationControllers(f.Core().V1().ReplicationControllers())
			return c.Run, nil
		}},
		{"horizontal-pod-autoscaler-controller", func() (func(context.Context, int) error, error) {
			c, err := podautoscaler.NewForClient(log, client, recorder("horizontal-pod-autoscaler"), f.Autoscaling().V2().HorizontalPodAutoscalers(), f.Core().V1().Pods())
			return runOf(c, err)
		}},
		{"endpoints-controller", func() (func(context.Context, int) error, error) {
			c, err := endpoint.New(log, client, recorder("endpoint-controller"), f.Core().V1().Services(), f.Core().V1().Pods(), f.Core().V1().Endpoints())
			return runOf(c, err)
		}},
		{"endpointslice-controller", func() (func(context.Context, int) error, error) {
			c, err := endpointslice.New(log, client, recorder("endpoint-slice-controller"), f.Core().V1().Services(), f.Core().V1().Pods(), f.Discovery().V1().EndpointSlices())
			return runOf(c, err)
		}},
		{"endpointslice-mirroring-controller", func() (func(context.Context, int) error, error) {
			c, err := endpointslicemirroring.New(log, client, recorder("endpoint-slice-mirroring-controller"), f.Core().V1().Endpoints(), f.Core().V1().Services(), f.Discovery().V1().EndpointSlices())
			return runOf(c, err)
		}},
		{"node-lifecycle-controller", func() (func(context.Context, int) error, error) {
			c, err := nodelifecycle.New(nodelifecycle.Config{GracePeriod: m.cfg.NodeMonitorGracePeriod}, log, client, recorder("node-controller"),
				f.Core().V1().Nodes(), f.Coordination().V1().Leases(), f.Core().V1().Pods())
			return runOf(c, err)
		}},
		{"garbage-collector-controller", func() (func(context.Context, int) error, error) {
			return garbagecollector.New(log, client.Discovery(), meta, dyn).Run, nil
		}},
		{"namespace-controller", func() (func(context.Context, int) error, error) {
			c, err := namespace.New(log, client, meta, f.Core().V1().Namespaces())
			return runOf(c, err)
		}},
		{"persistentvolume-binder-controller", func() (func(context.Context, int) error, error) {
			c, err := volume.NewBinder(log, client, recorder("persistentvolume-controller"), recorder(localpath.Provisioner),
				f.Core().V1().PersistentVolumes(), f.Core().V1().PersistentVolumeClaims(), f.Storage().V1().StorageClasses(), f.Core().V1().Nodes())
			return runOf(c, err)
		}},
		{"persistentvolumeclaim-protection-controller", func() (func(context.Context, int) error, error) {
			c, err := volume.NewClaimProtection(log, client, f.Core().V1().PersistentVolumeClaims(), f.Core().V1().Pods())
			return runOf(c, err)
		}},
		{"persistentvolume-protection-controller", func() (func(context.Context, int) error, error) {
			c, err := volume.NewVolumeProtection(log, client, f.Core().V1().PersistentVolumes())
			return runOf(c, err)
		}},
		{"storage-version-migrator-controller", func() (func(context.Context, int) error, error) {
			mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery()))
			c, err := storageversionmigration.New(log, client, dyn, func(gr schema.GroupResource) (schema.GroupVersionResource, error) {
				// A CRD made a moment ago is not in the cached discovery yet.
				gvr, err := mapper.ResourceFor(gr.WithVersion(""))
				if err != nil {
					mapper.Reset()
					gvr, err = mapper.ResourceFor(gr.WithVersion(""))
				}
				return gvr, err
			}, f.Storagemigration().V1().StorageVersionMigrations())
			return runOf(c, err)
		}},
		{"resourcequota-controller", func() (func(context.Context, int) error, error) {
			mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery()))
			c, err := resourcequota.New(log, client, meta, func(gr schema.GroupResource) (schema.GroupVersionResource, error) {
				gvr, err := mapper.ResourceFor(gr.WithVersion(""))
				if err != nil {
					mapper.Reset()
					gvr, err = mapper.ResourceFor(gr.WithVersion(""))
				}
				return gvr, err
			}, f.Core().V1().ResourceQuotas(), f.Core().V1().Pods(), f.Core().V1().Services(), f.Core().V1().PersistentVolumeClaims(), 0)
			return runOf(c, err)
		}},
		{"validatingadmissionpolicy-status-controller", func() (func(context.Context, int) error, error) {
			c, err := admissionpolicystatus.New(log, client, f.Admissionregistration().V1().ValidatingAdmissionPolicies())
			return runOf(c, err)
		}},
	}
}

// runOf returns c's Run, or err.
func runOf[C interface {
	Run(ctx context.Context, workers int) error
}](c C, err error) (func(context.Context, int) error, error) {
	if err != nil {
		return nil, err
	}
	return c.Run, nil
}

// Ready is closed once the shared informer caches have synced and the
// controllers are running.
func (m *Manager) Ready() <-chan struct{} { return m.ready }

// Run starts the informers and every controller, and blocks until ctx
// ends. It returns the first controller error, nil on a clean stop.
func (m *Manager) Run(ctx context.Context) error {
	if !m.started.CompareAndSwap(false, true) {
		return errors.New("failed to run controller manager: already running")
	}
	m.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: m.client.CoreV1().Events("")})
	defer m.broadcaster.Shutdown()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errCh := make(chan error, len(m.runners))
	for _, r := range m.runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.run(ctx, m.cfg.Workers); err != nil && ctx.Err() == nil {
				errCh <- fmt.Errorf("%s controller: %w", r.name, err)
				cancel()
			}
		}()
	}
	m.informers.Start(ctx.Done())
	defer m.informers.Shutdown()
	m.log.Info("waiting for informer caches to sync")
	for typ, ok := range m.informers.WaitForCacheSync(ctx.Done()) {
		if !ok && ctx.Err() == nil {
			cancel()
			wg.Wait()
			return fmt.Errorf("failed to sync informer cache for %v", typ)
		}
	}
	if ctx.Err() == nil {
		close(m.ready)
		m.log.Info("controller manager started", "controllers", len(m.runners))
	}
	wg.Wait()
	close(errCh)
	return <-errCh
}
