package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/glassplane/glassplane/controlplane/controllers"
	"github.com/glassplane/glassplane/controlplane/controllers/nodelifecycle"
	"github.com/glassplane/glassplane/controlplane/tempo"
)

// controllerManagerLease is the Lease the controller managers elect a
// leader on, as kube-controller-manager does.
const controllerManagerLease = "kube-controller-manager"

// newControllerManagerCommand runs the controllers against the API server
// in --kubeconfig; several may run, one leads at a time.
func newControllerManagerCommand() *cobra.Command {
	var kubeconfig string
	var workers int
	var leaderElect bool
	var grace time.Duration
	var names []string
	cmd := &cobra.Command{
		Use:   "controller-manager",
		Short: "Run the controllers (kube-controller-manager's: deployment, replicaset, statefulset, cronjob, garbage collector, ...) against an API server",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := controllers.CheckControllers(names); err != nil {
				return fmt.Errorf("invalid --controllers: %w", err)
			}
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("failed to load kubeconfig %q: %w", kubeconfig, err)
			}
			ctx := cmd.Context()
			if !leaderElect {
				return runControllerManager(ctx, cfg, controllers.Config{Workers: workers, NodeMonitorGracePeriod: grace, Controllers: names})
			}
			return runLeaderElected(ctx, cfg, func(ctx context.Context) error {
				return runControllerManager(ctx, cfg, controllers.Config{Workers: workers, NodeMonitorGracePeriod: grace, Controllers: names})
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the controller manager's identity (system:kube-controller-manager)")
	f.IntVar(&workers, "workers", controllers.DefaultWorkers, "sync goroutines per controller")
	f.DurationVar(&grace, "node-monitor-grace-period", nodelifecycle.DefaultGracePeriod, "how long a node may go without a heartbeat before it is marked unreachable")
	f.StringSliceVar(&names, "controllers", []string{"*"}, "the controllers to run: '*' is all, 'name' adds one, '-name' leaves one out; known: "+strings.Join(controllers.KnownControllers(), ", "))
	f.BoolVar(&leaderElect, "leader-elect", true, "elect a leader on the Lease kube-system/kube-controller-manager before running the controllers")
	return cmd
}

// runControllerManager builds the manager's clients from cfg and runs it
// until ctx ends.
func runControllerManager(ctx context.Context, cfg *rest.Config, mcfg controllers.Config) error {
	cfg, err := tempo.GateConfig(ctx, componentConfig(rest.CopyConfig(cfg)), "controller-manager")
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("failed to create controller manager client: %w", err)
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("failed to create controller manager metadata client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("failed to create controller manager dynamic client: %w", err)
	}
	m, err := controllers.New(mcfg, client, meta, dyn)
	if err != nil {
		return err
	}
	return m.Run(ctx)
}

// runLeaderElected runs run while this process holds the controller
// manager Lease, and returns when ctx ends or the lease is lost.
func runLeaderElected(ctx context.Context, cfg *rest.Config, run func(context.Context) error) error {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("failed to create leader election client: %w", err)
	}
	host, _ := os.Hostname()
	id := host + "_" + uuid.NewString()
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, "kube-system", controllerManagerLease,
		client.CoreV1(), client.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		return fmt.Errorf("failed to create lease lock: %w", err)
	}
	var mu sync.Mutex // guards leading
	leading := false
	done := make(chan error, 1)
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   15 * time.Second,
		RenewDeadline:   10 * time.Second,
		RetryPeriod:     2 * time.Second,
		ReleaseOnCancel: true,
		Name:            controllerManagerLease,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				mu.Lock()
				leading = true
				mu.Unlock()
				done <- run(ctx)
			},
			OnStoppedLeading: func() {},
		},
	})
	mu.Lock()
	wasLeading := leading
	mu.Unlock()
	if !wasLeading {
		return nil
	}
	if err := <-done; err != nil {
		return err
	}
	if ctx.Err() == nil {
		return fmt.Errorf("lost the %s lease", controllerManagerLease)
	}
	return nil
}
