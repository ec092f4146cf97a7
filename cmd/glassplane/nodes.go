package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

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

	var writes *simulatedWriteLimit
	if o.simulatedWritesInflight > 0 {
		writes = newSimulatedWriteLimit(o.simulatedWritesInflight)
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
		stop, err := startNode(ctx, g, api, cfg, nil)
		if err != nil {
			stopAll()
			return func() {}, err
		}
		stops = append(stops, stop)
	case "simulated":
		cfg := simulatedNode(localName, o, clusterDNS)
		cfg.SystemReserved = reserved
		stop, err := startNode(ctx, g, api, cfg, writes)
		if err != nil {
			stopAll()
			return func() {}, err
		}
		stops = append(stops, stop)
	}
	for i := 1; i <= o.simulatedNodes; i++ {
		stop, err := startNode(ctx, g, api, simulatedNode(fmt.Sprintf("sim-%d", i), o, clusterDNS), writes)
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

// startNode runs a node agent as its node's identity; writes, if not nil,
// bounds its writes together with the other simulated nodes'.
func startNode(ctx context.Context, g *errgroup.Group, api apiEndpoint, cfg node.Config, writes *simulatedWriteLimit) (func(), error) {
	rc, err := api.restConfig("system:node:"+cfg.NodeName, "system:nodes")
	if err != nil {
		return nil, err
	}
	if writes != nil {
		rc.Wrap(writes.wrap)
	}
	client, err := newClient(rc)
	if err != nil {
		return nil, err
	}
	agent, err := node.New(cfg, client)
	if err != nil {
		return nil, err
	}
	return runPart(ctx, g, "node "+cfg.NodeName, tempo.Gated(client, "node/"+cfg.NodeName, agent.Run)), nil
}

// defaultSimulatedWritesPerCPU is --simulated-writes-inflight's default
// per CPU. The dashboard benchmark (1,000 pods on 100 simulated nodes, 200
// changes a second; two cores) measured etcd write → render p99 at
// 116–246 ms over 8 runs with 2 per CPU (write → hub 32–195 ms),
// 115–188 ms with 1 (32–48 ms) and 111–225 ms with no bound but 8 flow
// control seats (30–135 ms); BenchmarkDeployment1000 had its pods available in 7.2–8.4 s with
// 2 per CPU, 10.6–11.2 s with 1, 7.2–7.4 s with no bound.
const defaultSimulatedWritesPerCPU = 2

// simulatedWriteLimit holds a seat for each write the simulated nodes have
// in flight: a hundred simulated kubelets answer a burst of pods with
// hundreds of status patches and Events a second, all on the cores the
// control plane runs on, where real kubelets would bring machines of their
// own (kubemark's hollow nodes run within CPU limits for the same reason).
// A freed seat goes to a waiting status write or deletion before a waiting
// Event, so a burst delays the Events more than the pods' progress. Node
// status and Lease heartbeats, and every read, go around it: a burst
// delays how soon pods show Running, never whether a node stays Ready.
type simulatedWriteLimit struct {
	mu   sync.Mutex
	free int
	// waiting holds the writes waiting for a seat, status writes and
	// deletions ([0]) before Events ([1]), each in arrival order.
	waiting [2][]chan struct{}
}

func newSimulatedWriteLimit(seats int) *simulatedWriteLimit {
	return &simulatedWriteLimit{free: seats}
}

func (l *simulatedWriteLimit) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		class, bounded := writeClass(r)
		if !bounded {
			return next.RoundTrip(r)
		}
		if err := l.acquire(r.Context(), class); err != nil {
			return nil, err
		}
		defer l.release()
		return next.RoundTrip(r)
	})
}

// acquire takes a seat for a write of class, waiting its turn, or gives up
// with ctx.
func (l *simulatedWriteLimit) acquire(ctx context.Context, class int) error {
	l.mu.Lock()
	if l.free > 0 {
		l.free--
		l.mu.Unlock()
		return nil
	}
	turn := make(chan struct{})
	l.waiting[class] = append(l.waiting[class], turn)
	l.mu.Unlock()
	select {
	case <-turn:
		return nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	queue := l.waiting[class]
	for i, c := range queue {
		if c == turn {
			l.waiting[class] = append(queue[:i:i], queue[i+1:]...)
			l.mu.Unlock()
			return ctx.Err()
		}
	}
	l.mu.Unlock()
	// The seat was handed over as ctx ended: pass it on.
	l.release()
	return ctx.Err()
}

// release hands the seat to the first waiting write of the first class
// that has one, or frees it.
func (l *simulatedWriteLimit) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for class, queue := range l.waiting {
		if len(queue) > 0 {
			close(queue[0])
			l.waiting[class] = queue[1:]
			return
		}
	}
	l.free++
}

// writeClass reports whether r waits for a seat (a write, but not to the
// node's own Node object or its Lease) and in which class: 0 for pods'
// status and deletions, 1 for Events.
func writeClass(r *http.Request) (class int, bounded bool) {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return 0, false
	}
	p := r.URL.Path
	if strings.HasPrefix(p, "/api/v1/nodes") || strings.HasPrefix(p, "/apis/coordination.k8s.io/") {
		return 0, false
	}
	if strings.HasSuffix(p, "/events") || strings.Contains(p, "/events/") {
		return 1, true
	}
	return 0, true
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
