package scheduler

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// kube-scheduler's leader election defaults.
const (
	DefaultLeaseDuration  = 15 * time.Second
	DefaultRenewDeadline  = 10 * time.Second
	DefaultRetryPeriod    = 2 * time.Second
	DefaultLeaseNamespace = "kube-system"
	DefaultLeaseName      = "kube-scheduler"
)

// LeaderElection configures leader election on a Lease, so that of several
// scheduler processes only one schedules.
type LeaderElection struct {
	// LeaderElect turns leader election on.
	LeaderElect bool
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's
	// (defaults 15 s, 10 s, 2 s).
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// ResourceNamespace and ResourceName name the Lease (default
	// kube-system/kube-scheduler).
	ResourceNamespace string
	ResourceName      string
	// Identity is this process's holder identity (default
	// "<hostname>_<uuid>", as kube-scheduler).
	Identity string
}

func (l LeaderElection) withDefaults() LeaderElection {
	if l.LeaseDuration <= 0 {
		l.LeaseDuration = DefaultLeaseDuration
	}
	if l.RenewDeadline <= 0 {
		l.RenewDeadline = DefaultRenewDeadline
	}
	if l.RetryPeriod <= 0 {
		l.RetryPeriod = DefaultRetryPeriod
	}
	if l.ResourceNamespace == "" {
		l.ResourceNamespace = DefaultLeaseNamespace
	}
	if l.ResourceName == "" {
		l.ResourceName = DefaultLeaseName
	}
	if l.Identity == "" {
		host, _ := os.Hostname()
		l.Identity = host + "_" + string(uuid.NewUUID())
	}
	return l
}

// ErrLeaderElectionLost is returned by Run when the scheduler lost its
// Lease; like kube-scheduler, it then stops rather than risk binding pods
// another leader also binds.
var ErrLeaderElectionLost = errors.New("leader election lost")

// runWithLeaderElection runs schedule only while this process holds the
// Lease. It returns nil when ctx ends and ErrLeaderElectionLost when the
// lease could not be renewed.
func (s *Scheduler) runWithLeaderElection(ctx context.Context, schedule func(context.Context)) error {
	le := s.cfg.LeaderElection
	var recorder resourcelock.EventRecorder
	for _, p := range s.profiles {
		recorder = p.recorder
		break
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metaFor(le),
		Client:     s.client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: le.Identity, EventRecorder: recorder},
	}
	done := make(chan struct{})
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   le.LeaseDuration,
		RenewDeadline:   le.RenewDeadline,
		RetryPeriod:     le.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            le.ResourceName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				defer close(done)
				s.log.Info("became leader, scheduling", "lease", le.ResourceNamespace+"/"+le.ResourceName, "identity", le.Identity)
				schedule(lctx)
			},
			OnStoppedLeading: func() {
				s.log.Info("stopped leading", "lease", le.ResourceNamespace+"/"+le.ResourceName, "identity", le.Identity)
			},
			OnNewLeader: func(identity string) {
				if identity != le.Identity {
					s.log.Info("another scheduler leads", "leader", identity)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("failed to set up leader election on %q: %w", le.ResourceNamespace+"/"+le.ResourceName, err)
	}
	s.log.Info("waiting to acquire the lease", "lease", le.ResourceNamespace+"/"+le.ResourceName, "identity", le.Identity)
	elector.Run(ctx)
	select {
	case <-done:
	default:
		if elector.IsLeader() {
			<-done
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("failed to keep lease %q: %w", le.ResourceNamespace+"/"+le.ResourceName, ErrLeaderElectionLost)
}

func metaFor(le LeaderElection) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: le.ResourceNamespace, Name: le.ResourceName}
}
