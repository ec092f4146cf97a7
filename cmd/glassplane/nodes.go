package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/glassplane/glassplane/controlplane/apiserver"
	"github.com/glassplane/glassplane/controlplane/node"
	"github.com/glassplane/glassplane/controlplane/node/runtime"
	"github.com/glassplane/glassplane/controlplane/pki"
	"github.com/glassplane/glassplane/controlplane/proxy"
	"github.com/glassplane/glassplane/controlplane/tempo"
)

// startNodes starts the local node (containerd or simulated, unless mode is
// "none") and o.simulatedNodes simulated nodes, each with its own identity.
// The returned function stops them all, then the managed containerd.
func startNodes(ctx context.Context, g *errgroup.Group, o upOptions, mode, dataDir string, api apiEndpoint, clusterDNS netip.Addr) (func(), error) {
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

	reserved, err := node.ParseResourceList(o.systemReserved)
	if err != nil {
		return stopAll, fmt.Errorf("invalid --system-reserved: %w", err)
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
		cfg := node.Config{NodeName: localName, DataDir: dataDir, SystemReserved: reserved,
			ClusterDNS: []string{clusterDNS.String()}, ClusterDomain: o.clusterDomain}
		network, err := runtime.NewNetwork(runtime.NetworkConfig{PodCIDR: o.podCIDR})
		if err != nil {
			slog.Warn("no pod network, pods share the host's network", "err", err)
			cfg.PodNetworkProblem = err.Error()
		} else {
			cfg.PodCIDR = network.PodCIDR()
		}
		rt, err := runtime.NewContainerd(ctx, runtime.ContainerdConfig{Address: address, StateDir: filepath.Join(dataDir, "pods"), Network: network, InsecureRegistries: o.insecureRegistries})
		if err != nil {
			stopAll()
			return func() {}, err
		}
		cfg.Runtime = rt
		if cfg.Server, err = nodeServer(api.ca, localName, o.nodePort); err != nil {
			stopAll()
			return func() {}, err
		}
		if cfg.Proxy, err = serviceProxy(api, localName, cfg.PodCIDR); err != nil {
			stopAll()
			return func() {}, err
		}
		stop, err := startNode(ctx, g, api, cfg)
		if err != nil {
			stopAll()
			return func() {}, err
		}
		stops = append(stops, stop)
	case "simulated":
		cfg := simulatedNode(localName, o, clusterDNS)
		cfg.SystemReserved = reserved
		stop, err := startNode(ctx, g, api, cfg)
		if err != nil {
			stopAll()
			return func() {}, err
		}
		stops = append(stops, stop)
	}
	for i := 1; i <= o.simulatedNodes; i++ {
		stop, err := startNode(ctx, g, api, simulatedNode(fmt.Sprintf("sim-%d", i), o, clusterDNS))
		if err != nil {
			stopAll()
			return func() {}, err
		}
		stops = append(stops, stop)
	}
	return stopAll, nil
}

// nodeServer is the local node agent's HTTPS endpoint for logs and exec,
// with a serving certificate for every address of the host. The port falls
// back to a free one when taken (another cluster on this host).
func nodeServer(ca *pki.CA, nodeName string, port int) (*node.ServerConfig, error) {
	hosts := []string{nodeName}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				hosts = append(hosts, n.IP.String())
			}
		}
	}
	cert, err := ca.Serving(hosts...)
	if err != nil {
		return nil, fmt.Errorf("failed to issue the node's serving certificate: %w", err)
	}
	if ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(port))); err != nil {
		slog.Warn("node port taken, using a free one", "port", port, "err", err)
		port = 0
	} else {
		ln.Close()
	}
	return &node.ServerConfig{Port: port, Certificate: cert, ClientCAs: ca.Pool()}, nil
}

// serviceProxy is the containerd node's service proxy, as its own
// identity (system:kube-proxy). Without nftables the node runs without
// one, saying so.
func serviceProxy(api apiEndpoint, nodeName, podCIDR string) (node.ServiceProxy, error) {
	client, err := api.client(proxy.User)
	if err != nil {
		return nil, err
	}
	p, err := proxy.New(proxy.Config{NodeName: nodeName, PodCIDR: podCIDR}, client)
	if err != nil {
		slog.Warn("no service proxy, Services are not reachable from this node", "err", err)
		return nil, nil
	}
	return p, nil
}

// connectNodes gives the API server its client identity towards node
// agents (system:kube-apiserver-kubelet-client) for pods/log and pods/exec.
func connectNodes(api *apiserver.Server, ca *pki.CA) error {
	certPEM, keyPEM, err := ca.Client(node.APIServerClientUser)
	if err != nil {
		return fmt.Errorf("failed to issue the API server's node client certificate: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("failed to load the API server's node client certificate: %w", err)
	}
	api.SetKubeletClient(&apiserver.KubeletClient{TLS: &tls.Config{
		Certificates: []tls.Certificate{cert},
		RootCAs:      ca.Pool(),
		MinVersion:   tls.VersionTLS12,
	}})
	return nil
}

func simulatedNode(name string, o upOptions, clusterDNS netip.Addr) node.Config {
	return node.Config{
		NodeName:       name,
		ClusterDNS:     []string{clusterDNS.String()},
		ClusterDomain:  o.clusterDomain,
		Runtime:        runtime.NewSimulated(runtime.SimulatedConfig{StartDelay: o.simulatedStartDelay, CompleteAfter: o.simulatedCompleteAfter}),
		Simulated:      true,
		SimulatedUsage: o.simulatedUsage,
	}
}

func startNode(ctx context.Context, g *errgroup.Group, api apiEndpoint, cfg node.Config) (func(), error) {
	client, err := api.client("system:node:"+cfg.NodeName, "system:nodes")
	if err != nil {
		return nil, err
	}
	agent, err := node.New(cfg, client)
	if err != nil {
		return nil, err
	}
	return runPart(ctx, g, "node "+cfg.NodeName, tempo.Gated(client, "node/"+cfg.NodeName, agent.Run)), nil
}
