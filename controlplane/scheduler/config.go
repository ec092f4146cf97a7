package scheduler

import (
	"log/slog"
	"time"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/imagelocality"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/interpodaffinity"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/nodeaffinity"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/nodename"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/nodeports"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/noderesources"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/nodeunschedulable"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/podtopologyspread"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/queuesort"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/tainttoleration"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/volumebinding"
)

// Defaults for Config.
const (
	// DefaultSchedulerName is the name pods get when spec.schedulerName is
	// empty, and the reporting component of the events.
	DefaultSchedulerName = "default-scheduler"
	// DefaultParallelism bounds how many nodes are filtered or scored at once.
	DefaultParallelism = 16
	// DefaultDecisionHistory is how many attempts a pod's decision record
	// keeps.
	DefaultDecisionHistory = 10
	// DefaultBindTimeout bounds one binding request.
	DefaultBindTimeout = 30 * time.Second
)

// Config is what the user sets for a scheduler. Zero values mean defaults.
type Config struct {
	// SchedulerName is the spec.schedulerName this scheduler serves and the
	// component its events come from (default "default-scheduler").
	SchedulerName string
	// Parallelism bounds the per-node filter and score pool (default 16).
	Parallelism int
	// Logger receives the scheduler's logs (default slog.Default()).
	Logger *slog.Logger
	// Plugins is the profile's enabled plugins in order (default
	// DefaultPlugins()).
	Plugins []framework.PluginRef
	// Profiles, when set, replace SchedulerName and Plugins: one profile
	// per spec.schedulerName, sharing the queue (sorted by the first
	// profile's queue sort plugin), the cache and the events broadcaster.
	Profiles []Profile
	// LeaderElection makes Run schedule only while it holds the Lease.
	LeaderElection LeaderElection
	// Registry adds out-of-tree plugin factories to the in-tree ones.
	Registry framework.Registry
	// PercentageOfNodesToScore limits how many feasible nodes a cycle looks
	// for in clusters of 100 nodes or more; 0 means kube-scheduler's
	// adaptive default.
	PercentageOfNodesToScore int
	// PodInitialBackoff and PodMaxBackoff bound the retry backoff of
	// unschedulable pods (defaults 1 s and 10 s).
	PodInitialBackoff time.Duration
	PodMaxBackoff     time.Duration
	// DecisionHistory is how many attempts a pod's decision record keeps
	// (default 10).
	DecisionHistory int
	// BindTimeout bounds one binding request (default 30 s).
	BindTimeout time.Duration
}

// DefaultPlugins is kube-scheduler's default profile (multiPoint) as far
// as Glassplane implements it, in kube-scheduler's order and with its
// score weights. Left out: NodeVolumeLimits, VolumeRestrictions,
// VolumeZone, DynamicResources and DefaultBinder (binding is built in);
// DefaultPreemption is the scheduler's PostFilter step.
func DefaultPlugins() []framework.PluginRef {
	return []framework.PluginRef{
		{Name: queuesort.Name},
		{Name: nodeunschedulable.Name},
		{Name: nodename.Name},
		{Name: tainttoleration.Name, Weight: 3},
		{Name: nodeaffinity.Name, Weight: 2},
		{Name: nodeports.Name},
		{Name: noderesources.Name, Weight: 1},
		{Name: volumebinding.Name},
		{Name: podtopologyspread.Name, Weight: 2},
		{Name: interpodaffinity.Name, Weight: 2},
		{Name: noderesources.BalancedAllocationName, Weight: 1},
		{Name: imagelocality.Name, Weight: 1},
	}
}

// Profile is one scheduling profile.
type Profile struct {
	SchedulerName string
	Plugins       []framework.PluginRef
	// DisablePreemption turns the DefaultPreemption PostFilter off.
	DisablePreemption bool
}

func (c Config) withDefaults() Config {
	if c.SchedulerName == "" {
		c.SchedulerName = DefaultSchedulerName
	}
	if c.Parallelism <= 0 {
		c.Parallelism = DefaultParallelism
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Plugins == nil {
		c.Plugins = DefaultPlugins()
	}
	if len(c.Profiles) == 0 {
		c.Profiles = []Profile{{SchedulerName: c.SchedulerName, Plugins: c.Plugins}}
	}
	c.LeaderElection = c.LeaderElection.withDefaults()
	if c.DecisionHistory <= 0 {
		c.DecisionHistory = DefaultDecisionHistory
	}
	if c.BindTimeout <= 0 {
		c.BindTimeout = DefaultBindTimeout
	}
	return c
}
