package main

import (
	"log/slog"
	"os"

	"github.com/glassplane/glassplane/controlplane/scheduler"
)

// schedulerConfig builds the `glassplane scheduler` process's Config:
// leader election on the kube-system/kube-scheduler Lease (as
// kube-scheduler: losing the lease ends the process), then the
// KubeSchedulerConfiguration file at path, if any, on top.
func schedulerConfig(path string, log *slog.Logger) (scheduler.Config, error) {
	cfg := scheduler.Config{Logger: log, LeaderElection: scheduler.LeaderElection{LeaderElect: true}}
	if path != "" {
		if err := scheduler.LoadConfigFile(path, &cfg); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// inProcessSchedulerConfig builds the Config of the scheduler inside
// `glassplane up`. It is the only scheduler of its process, so it does not
// elect a leader unless the file asks for it: a lease missed while the
// machine is overloaded would otherwise stop scheduling for good. With
// election on, its identity is stable across restarts, so a restarted
// process takes its own lease back at once.
func inProcessSchedulerConfig(path string, log *slog.Logger) (scheduler.Config, error) {
	host, _ := os.Hostname()
	cfg := scheduler.Config{Logger: log, LeaderElection: scheduler.LeaderElection{Identity: host + "_glassplane-up"}}
	if path != "" {
		if err := scheduler.LoadConfigFile(path, &cfg); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}
