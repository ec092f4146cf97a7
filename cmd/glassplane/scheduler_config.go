package main

import (
	"log/slog"
	"os"

	"github.com/glassplane/glassplane/controlplane/scheduler"
)

// schedulerConfig builds the scheduler's Config: leader election on the
// kube-system/kube-scheduler Lease, then the KubeSchedulerConfiguration
// file at path, if any, on top. identity names this process in the Lease;
// empty means kube-scheduler's "<hostname>_<uuid>".
func schedulerConfig(path string, log *slog.Logger, identity string) (scheduler.Config, error) {
	cfg := scheduler.Config{
		Logger:         log,
		LeaderElection: scheduler.LeaderElection{LeaderElect: true, Identity: identity},
	}
	if path != "" {
		if err := scheduler.LoadConfigFile(path, &cfg); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// inProcessSchedulerIdentity is the Lease holder identity of the scheduler
// inside `glassplane up`: stable across restarts, so a restarted process
// takes its own lease back at once.
func inProcessSchedulerIdentity() string {
	host, _ := os.Hostname()
	return host + "_glassplane-up"
}
