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
	"github.com/glassplane/glassplane/controlplane/controllers/garbagecollector"
	"github.com/glassplane/glassplane/controlplane/controllers/job"
	"github.com/glassplane/glassplane/controlplane/controllers/namespace"
	"github.com/glassplane/glassplane/controlplane/controllers/nodelifecycle"
	"github.com/glassplane/glassplane/controlplane/controllers/podautoscaler"
	"github.com/glassplane/glassplane/controlplane/controllers/replicaset"
	"github.com/glassplane/glassplane/controlplane/controllers/replicationcontroller"
	"github.com/glassplane/glassplane/controlplane/controllers/resourcequota"
	"github.com/glassplane/glassplane/controlplane/controllers/statefulset"
	"github.com/glassplane/glassplane/controlplane/controllers/volume"
	"github.com/glassplane/glassplane/controlplane/localpath"
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
	Logger                 *slog.Logger
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
		informers:   informers.NewSharedInformerFactory(client, 0),
		broadcaster: record.NewBroadcaster(),
		ready:       make(chan struct{}),
	}
	recorder := func(component string) record.EventRecorder {
		return m.broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: component})
	}
	f := m.informers

	rs, err := replicaset.New(m.log, client, recorder("replicaset-controller"), f.Apps().V1().ReplicaSets(), f.Core().V1().Pods())
	if err != nil {
		return nil, fmt.Errorf("failed to create replicaset controller: %w", err)
	}
	m.runners = append(m.runners, runner{"replicaset", rs.Run})

	rcc, err := replicationcontroller.New(m.log, client, recorder("replication-controller"), f.Core().V1().ReplicationControllers(), f.Core().V1().Pods())
	if err != nil {
		return nil, fmt.Errorf("failed to create replication controller: %w", err)
	}
	m.runners = append(m.runners, runner{"replicationcontroller", rcc.Run})

	dc, err := deployment.New(m.log, client, recorder("deployment-controller"), f.Apps().V1().Deployments(), f.Apps().V1().ReplicaSets(), f.Core().V1().Pods())
	if err != nil {
		return nil, fmt.Errorf("failed to create deployment controller: %w", err)
	}
	m.runners = append(m.runners, runner{"deployment", dc.Run})

	jc, err := job.New(m.log, client, recorder("job-controller"), f.Batch().V1().Jobs(), f.Core().V1().Pods())
	if err != nil {
		return nil, fmt.Errorf("failed to create job controller: %w", err)
	}
	m.runners = append(m.runners, runner{"job", jc.Run})

	cjc, err := cronjob.New(m.log, client, recorder("cronjob-controller"), f.Batch().V1().CronJobs(), f.Batch().V1().Jobs(), clock.RealClock{})
	if err != nil {
		return nil, fmt.Errorf("failed to create cronjob controller: %w", err)
	}
	m.runners = append(m.runners, runner{"cronjob", cjc.Run})

	dsc, err := daemonset.New(m.log, client, recorder("daemonset-controller"), f.Apps().V1().DaemonSets(), f.Apps().V1().ControllerRevisions(),
		f.Core().V1().Pods(), f.Core().V1().Nodes())
	if err != nil {
		return nil, fmt.Errorf("failed to create daemonset controller: %w", err)
	}
	m.runners = append(m.runners, runner{"daemonset", dsc.Run})

	ssc, err := statefulset.New(m.log, client, recorder("statefulset-controller"), f.Apps().V1().StatefulSets(), f.Apps().V1().ControllerRevisions(),
		f.Core().V1().Pods())
	if err != nil {
		return nil, fmt.Errorf("failed to create statefulset controller: %w", err)
	}
	m.runners = append(m.runners, runner{"statefulset", ssc.Run})

	dpc, err := disruption.New(m.log, client, recorder("disruption-controller"), f.Policy().V1().PodDisruptionBudgets(), f.Core().V1().Pods(),
		f.Apps().V1().ReplicaSets(), f.Apps().V1().Deployments())
	if err != nil {
		return nil, fmt.Errorf("failed to create disruption controller: %w", err)
	}
	dpc.AddStatefulSets(f.Apps().V1().StatefulSets())
	dpc.AddReplicationControllers(f.Core().V1().ReplicationControllers())
	m.runners = append(m.runners, runner{"disruption", dpc.Run})

	hpac, err := podautoscaler.NewForClient(m.log, client, recorder("horizontal-pod-autoscaler"), f.Autoscaling().V2().HorizontalPodAutoscalers(), f.Core().V1().Pods())
	if err != nil {
		return nil, fmt.Errorf("failed to create horizontal pod autoscaler controller: %w", err)
	}
	m.runners = append(m.runners, runner{"horizontalpodautoscaler", hpac.Run})

	ec, err := endpoint.New(m.log, client, recorder("endpoint-controller"), f.Core().V1().Services(), f.Core().V1().Pods(), f.Core().V1().Endpoints())
	if err != nil {
		return nil, fmt.Errorf("failed to create endpoint controller: %w", err)
	}
	m.runners = append(m.runners, runner{"endpoint", ec.Run})

	esc, err := endpointslice.New(m.log, client, recorder("endpoint-slice-controller"), f.Core().V1().Services(), f.Core().V1().Pods(), f.Discovery().V1().EndpointSlices())
	if err != nil {
		return nil, fmt.Errorf("failed to create endpointslice controller: %w", err)
	}
	m.runners = append(m.runners, runner{"endpointslice", esc.Run})

	nlc, err := nodelifecycle.New(nodelifecycle.Config{GracePeriod: cfg.NodeMonitorGracePeriod}, m.log, client, recorder("node-controller"),
		f.Core().V1().Nodes(), f.Coordination().V1().Leases(), f.Core().V1().Pods())
	if err != nil {
		return nil, fmt.Errorf("failed to create node lifecycle controller: %w", err)
	}
	m.runners = append(m.runners, runner{"nodelifecycle", nlc.Run})

	gc := garbagecollector.New(m.log, client.Discovery(), meta, dyn)
	m.runners = append(m.runners, runner{"garbagecollector", gc.Run})

	nc, err := namespace.New(m.log, client, meta, f.Core().V1().Namespaces())
	if err != nil {
		return nil, fmt.Errorf("failed to create namespace controller: %w", err)
	}
	m.runners = append(m.runners, runner{"namespace", nc.Run})

	if err := m.addVolumeControllers(recorder); err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery()))
	rqc, err := resourcequota.New(m.log, client, meta, func(gr schema.GroupResource) (schema.GroupVersionResource, error) {
		gvr, err := mapper.ResourceFor(gr.WithVersion(""))
		if err != nil {
			mapper.Reset()
			gvr, err = mapper.ResourceFor(gr.WithVersion(""))
		}
		return gvr, err
	}, f.Core().V1().ResourceQuotas(), f.Core().V1().Pods(), f.Core().V1().Services(), f.Core().V1().PersistentVolumeClaims(), 0)
	if err != nil {
		return nil, fmt.Errorf("failed to create resourcequota controller: %w", err)
	}
	m.runners = append(m.runners, runner{"resourcequota", rqc.Run})

	vapc, err := admissionpolicystatus.New(m.log, client, f.Admissionregistration().V1().ValidatingAdmissionPolicies())
	if err != nil {
		return nil, fmt.Errorf("failed to create validatingadmissionpolicy-status controller: %w", err)
	}
	m.runners = append(m.runners, runner{"validatingadmissionpolicy-status", vapc.Run})
	return m, nil
}

// addVolumeControllers adds the persistentvolume-binder with the built-in
// local-path provisioner, pvc-protection and pv-protection.
func (m *Manager) addVolumeControllers(recorder func(string) record.EventRecorder) error {
	f := m.informers
	binder, err := volume.NewBinder(m.log, m.client, recorder("persistentvolume-controller"), recorder(localpath.Provisioner),
		f.Core().V1().PersistentVolumes(), f.Core().V1().PersistentVolumeClaims(), f.Storage().V1().StorageClasses(), f.Core().V1().Nodes())
	if err != nil {
		return fmt.Errorf("failed to create persistentvolume-binder: %w", err)
	}
	pvc, err := volume.NewClaimProtection(m.log, m.client, f.Core().V1().PersistentVolumeClaims(), f.Core().V1().Pods())
	if err != nil {
		return fmt.Errorf("failed to create pvc-protection controller: %w", err)
	}
	pv, err := volume.NewVolumeProtection(m.log, m.client, f.Core().V1().PersistentVolumes())
	if err != nil {
		return fmt.Errorf("failed to create pv-protection controller: %w", err)
	}
	m.runners = append(m.runners, runner{"persistentvolume-binder", binder.Run}, runner{"pvc-protection", pvc.Run}, runner{"pv-protection", pv.Run})
	return nil
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
