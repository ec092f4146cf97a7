package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/glassplane/glassplane/controlplane/node"
	"github.com/glassplane/glassplane/controlplane/node/runtime"
	"github.com/glassplane/glassplane/controlplane/pki"
)

// startNodes starts the local node (containerd or simulated, unless mode is
// "none") and o.simulatedNodes simulated nodes, each with its own identity.
// The returned function stops them all, then the managed containerd.
func startNodes(ctx context.Context, g *errgroup.Group, o upOptions, mode, dataDir string, ca *pki.CA, apiURL string) (func(), error) {
	var stops []func()
	stopAll := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	localName := o.nodeName
	if localName == "" {
		h, err := os.Hostname()
		if err != nil {
			return stopAll, fmt.Errorf("failed to read the host name (set --node-name): %w", err)
		}
		localName = strings.ToLower(h)
	}

	switch mode {
	case "containerd":
		address := o.containerdAddress
		if address == "" {
			managed, err := runtime.StartManagedContainerd(ctx, dataDir)
			if err != nil {
				return stopAll, err
			}
			stops = append(stops, func() { managed.Stop() })
			address = managed.Address()
			slog.Info("managed containerd ready", "address", address)
		}
		cfg := node.Config{NodeName: localName, DataDir: dataDir}
		network, err := runtime.NewNetwork(runtime.NetworkConfig{})
		if err != nil {
			slog.Warn("no pod network, pods share the host's network", "err", err)
			cfg.PodNetworkProblem = err.Error()
		} else {
			cfg.PodCIDR = network.PodCIDR()
		}
		rt, err := runtime.NewContainerd(ctx, runtime.ContainerdConfig{Address: address, StateDir: filepath.Join(dataDir, "pods"), Network: network})
		if err != nil {
			stopAll()
			return func() {}, err
		}
		cfg.Runtime = rt
		stop, err := startNode(ctx, g, ca, apiURL, cfg)
		if err != nil {
			stopAll()
			return func() {}, err
		}
		stops = append(stops, stop)
	case "simulated":
		stop, err := startNode(ctx, g, ca, apiURL, simulatedNode(localName, o))
		if err != nil {
			stopAll()
			return func() {}, err
		}
		stops = append(stops, stop)
	}
	for i := 1; i <= o.simulatedNodes; i++ {
		stop, err := startNode(ctx, g, ca, apiURL, simulatedNode(fmt.Sprintf("sim-%d", i), o))
		if err != nil {
			stopAll()
			return func() {}, err
		}
		stops = append(stops, stop)
	}
	return stopAll, nil
}

func simulatedNode(name string, o upOptions) node.Config {
	return node.Config{
		NodeName:  name,
		Runtime:   runtime.NewSimulated(runtime.SimulatedConfig{StartDelay: o.simulatedStartDelay}),
		Simulated: true,
	}
}

func startNode(ctx context.Context, g *errgroup.Group, ca *pki.CA, apiURL string, cfg node.Config) (func(), error) {
	client, err := clientFor(ca, apiURL, "system:node:"+cfg.NodeName, "system:nodes")
	if err != nil {
		return nil, err
	}
	agent, err := node.New(cfg, client)
	if err != nil {
		return nil, err
	}
	return runPart(ctx, g, "node "+cfg.NodeName, agent.Run), nil
}
