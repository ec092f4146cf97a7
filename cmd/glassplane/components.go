package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/glassplane/glassplane/controlplane/dns"
	"github.com/glassplane/glassplane/controlplane/node"
	"github.com/glassplane/glassplane/controlplane/node/runtime"
	"github.com/glassplane/glassplane/controlplane/proxy"
	"github.com/glassplane/glassplane/controlplane/scheduler"
	"github.com/glassplane/glassplane/controlplane/tempo"
	"github.com/glassplane/glassplane/controlplane/usage"
)

// newSchedulerCommand runs the scheduler as its own process against any API
// server it has a kubeconfig for.
func newSchedulerCommand() *cobra.Command {
	var kubeconfig, name, configPath string
	var leaderElect bool
	cmd := &cobra.Command{
		Use:   "scheduler",
		Short: "Run the scheduler as its own process",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("failed to load kubeconfig %q: %w", kubeconfig, err)
			}
			client, err := newClient(cfg)
			if err != nil {
				return err
			}
			sc, err := schedulerConfig(configPath, slog.Default())
			if err != nil {
				return err
			}
			sc.SchedulerName = name
			if cmd.Flags().Changed("leader-elect") || configPath == "" {
				sc.LeaderElection.LeaderElect = leaderElect
			}
			s, err := scheduler.New(sc, client)
			if err != nil {
				return err
			}
			return tempo.Gated(client, "scheduler", s.Run)(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the scheduler's identity")
	cmd.Flags().StringVar(&name, "scheduler-name", "default-scheduler", "the spec.schedulerName this scheduler serves (without --config)")
	cmd.Flags().StringVar(&configPath, "config", "", "KubeSchedulerConfiguration file (kubescheduler.config.k8s.io/v1): profiles, plugins, weights, args, leader election")
	cmd.Flags().BoolVar(&leaderElect, "leader-elect", true, "schedule only while holding the Lease kube-system/kube-scheduler")
	return cmd
}

// newNodeCommand runs one node agent as its own process.
func newNodeCommand() *cobra.Command {
	var (
		kubeconfig, nodeName, runtimeName, containerdAddress, dataDir string
		proxyKubeconfig                                               string
		startDelay, completeAfter                                     time.Duration
		capacity                                                      map[string]string
		systemReserved                                                string
		simulatedUsage                                                string
		insecureRegistries                                            []string
		clusterDNS                                                    []string
		clusterDomain, resolvConf                                     string
		podCIDR                                                       string
	)
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Run a node agent as its own process",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("failed to load kubeconfig %q: %w", kubeconfig, err)
			}
			client, err := newClient(cfg)
			if err != nil {
				return err
			}
			if nodeName == "" {
				h, err := os.Hostname()
				if err != nil {
					return err
				}
				nodeName = strings.ToLower(h)
			}
			nc := node.Config{NodeName: nodeName, DataDir: dataDir, Capacity: corev1.ResourceList{},
				ClusterDNS: clusterDNS, ClusterDomain: clusterDomain, ResolvConf: resolvConf}
			if nc.SystemReserved, err = node.ParseResourceList(systemReserved); err != nil {
				return fmt.Errorf("invalid --system-reserved: %w", err)
			}
			for name, value := range capacity {
				q, err := resource.ParseQuantity(value)
				if err != nil {
					return fmt.Errorf("failed to parse --capacity %s=%q: %w", name, value, err)
				}
				nc.Capacity[corev1.ResourceName(name)] = q
			}
			switch runtimeName {
			case "simulated":
				nc.Runtime = runtime.NewSimulated(runtime.SimulatedConfig{StartDelay: startDelay, CompleteAfter: completeAfter})
				nc.Simulated = true
				if _, err := usage.ParseSimulated(simulatedUsage); err != nil {
					return fmt.Errorf("invalid --simulated-usage: %w", err)
				}
				nc.SimulatedUsage = simulatedUsage
			case "containerd":
				if containerdAddress == "" {
					return fmt.Errorf("--containerd-address is required with --runtime containerd")
				}
				// The pod network (CNI bridge), as glassplane up's node has.
				network, err := runtime.NewNetwork(runtime.NetworkConfig{PodCIDR: podCIDR})
				if err != nil {
					slog.Warn("no pod network, pods share the host's network", "err", err)
					nc.PodNetworkProblem = err.Error()
				} else {
					nc.PodCIDR = network.PodCIDR()
				}
				rt, err := runtime.NewContainerd(ctx, runtime.ContainerdConfig{Address: containerdAddress, StateDir: dataDir + "/pods", Network: network, InsecureRegistries: insecureRegistries})
				if err != nil {
					return err
				}
				nc.Runtime = rt
				if proxyKubeconfig != "" {
					pcfg, err := clientcmd.BuildConfigFromFlags("", proxyKubeconfig)
					if err != nil {
						return fmt.Errorf("failed to load kubeconfig %q: %w", proxyKubeconfig, err)
					}
					pclient, err := newClient(pcfg)
					if err != nil {
						return err
					}
					if nc.Proxy, err = proxy.New(proxy.Config{NodeName: nodeName, PodCIDR: nc.PodCIDR}, pclient); err != nil {
						return err
					}
				}
			default:
				return fmt.Errorf("--runtime must be containerd or simulated, got %q", runtimeName)
			}
			agent, err := node.New(nc, client)
			if err != nil {
				return err
			}
			return tempo.Gated(client, "node/"+nodeName, agent.Run)(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the node's identity (system:node:<name>)")
	f.StringVar(&nodeName, "node-name", "", "the node's name (default: the host name)")
	f.StringVar(&runtimeName, "runtime", "simulated", "containerd or simulated")
	f.StringVar(&proxyKubeconfig, "proxy-kubeconfig", "", "kubeconfig of the service proxy's identity (system:kube-proxy); with --runtime containerd the node runs the service proxy (nftables)")
	f.StringVar(&containerdAddress, "containerd-address", "", "containerd socket for --runtime containerd")
	f.StringVar(&podCIDR, "pod-cidr", runtime.DefaultPodCIDR, "with --runtime containerd, the node's pod subnet (CNI bridge gp0)")
	addDataDirFlag(f, &dataDir, "where the node keeps pod logs and state")
	f.DurationVar(&startDelay, "simulated-start-delay", runtime.DefaultSimulatedStartDelay, "how long simulated containers take to start")
	f.DurationVar(&completeAfter, "simulated-complete-after", runtime.DefaultSimulatedCompleteAfter, "how long simulated containers of restartPolicy Never/OnFailure pods run before they exit")
	f.StringVar(&simulatedUsage, "simulated-usage", usage.DefaultSimulatedUsage, "the CPU and memory each container of a simulated node reports to metrics.k8s.io, unless its pod's "+usage.AnnotationSimulatedUsage+" annotation says otherwise")
	f.StringToStringVar(&capacity, "capacity", nil, "override the node's capacity and allocatable, e.g. cpu=16,memory=64Gi,pods=250")
	f.StringVar(&systemReserved, "system-reserved", "", "resources held back from the node's allocatable, e.g. cpu=100m,memory=256Mi")
	f.StringSliceVar(&insecureRegistries, "insecure-registry", nil, "registries (host:port) pulled from over plain HTTP (loopback ones always are)")
	f.StringSliceVar(&clusterDNS, "cluster-dns", nil, "DNS server IPs of ClusterFirst pods (the kube-dns Service's), as the kubelet's flag; without it they fall back to the Default policy")
	f.StringVar(&clusterDomain, "cluster-domain", dns.DefaultClusterDomain, "the cluster's DNS domain that pods search, as the kubelet's flag")
	f.StringVar(&resolvConf, "resolv-conf", node.DefaultResolvConf, "the resolv.conf that pods of dnsPolicy Default get, as the kubelet's flag")
	return cmd
}

// newImageCommand holds image helpers for the node's containerd.
func newImageCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "image", Short: "Manage images in the node's containerd"}
	var dataDir, address string
	imp := &cobra.Command{
		Use:   "import FILE.tar",
		Short: "Import an OCI or docker image archive into the node's containerd",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if address == "" {
				dir, err := existingDataDir(dataDir)
				if err != nil {
					return err
				}
				address = runtime.ManagedContainerdAddress(dir)
			}
			f, err := os.Open(args[0])
			if err != nil {
				return fmt.Errorf("failed to open %q: %w", args[0], err)
			}
			defer f.Close()
			names, err := runtime.ImportImage(cmd.Context(), address, f)
			if err != nil {
				return err
			}
			for _, n := range names {
				fmt.Fprintf(cmd.OutOrStdout(), "imported %s\n", n)
			}
			return nil
		},
	}
	addDataDirFlag(imp.Flags(), &dataDir, "the data directory of \"glassplane up\", whose managed containerd imports the image")
	imp.Flags().StringVar(&address, "containerd-address", "", "containerd socket (default: the managed one in --data-dir)")
	cmd.AddCommand(imp)
	return cmd
}
