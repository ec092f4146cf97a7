package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/glassplane/glassplane/controlplane/apiserver"
	"github.com/glassplane/glassplane/controlplane/apiserver/audit"
	"github.com/glassplane/glassplane/controlplane/apiserver/auth"
	"github.com/glassplane/glassplane/controlplane/apiserver/auth/rbac"
	"github.com/glassplane/glassplane/controlplane/controllers"
	"github.com/glassplane/glassplane/controlplane/controllers/nodelifecycle"
	"github.com/glassplane/glassplane/controlplane/controllers/serviceaccount"
	"github.com/glassplane/glassplane/controlplane/dns"
	"github.com/glassplane/glassplane/controlplane/etcd"
	"github.com/glassplane/glassplane/controlplane/node/runtime"
	"github.com/glassplane/glassplane/controlplane/pki"
	"github.com/glassplane/glassplane/controlplane/scheduler"
	"github.com/glassplane/glassplane/controlplane/storage"
	"github.com/glassplane/glassplane/controlplane/tempo"
	"github.com/glassplane/glassplane/controlplane/usage"
	"github.com/glassplane/glassplane/server"
	"github.com/glassplane/glassplane/web"
	"github.com/glassplane/glassplane/web/source/kube"
)

// upOptions is what the user set on `glassplane up`.
type upOptions struct {
	dataDir             string
	apiListen           string
	webListen           string
	webLoginToken       string
	webAcceptHosts      []string
	etcdListen          string
	etcdPeerListen      string
	etcdEndpoints       []string
	etcdTLS             etcd.ClientTLS
	containerdAddress   string
	nodeRuntime         string
	simulatedNodes      int
	simulatedStartDelay time.Duration
	// simulatedCompleteAfter is how long simulated containers of
	// run-to-completion pods run.
	simulatedCompleteAfter time.Duration
	// simulatedUsage is what each container of a simulated node reports
	// to metrics.k8s.io ("cpu=250m,memory=64Mi").
	simulatedUsage string
	// simulatedWritesInflight bounds the simulated nodes' writes in
	// flight together (0: no bound); see simulatedWriteLimit.
	simulatedWritesInflight int
	nodeName                string
	schedulerConfig         string
	nodeMonitorGrace        time.Duration
	controllers             []string
	runScheduler            bool
	nodePort                int
	podCIDR                 string
	systemReserved          string
	insecureRegistries      []string
	auditLogPath            string
	auditPolicyFile         string
	tokenAuthFile           string
	anonymousAuth           bool
	profiling               bool
	saKeyFile               string
	eventTTL                time.Duration
	serviceClusterIPRange   string
	serviceNodePortRange    string
	advertiseAddress        string
	clusterDomain           string
	// maxRequestsInflight and maxMutatingRequestsInflight are the API
	// server's seats for API Priority and Fairness.
	maxRequestsInflight, maxMutatingRequestsInflight int
	clusterDNSListen                                 string
	clusterDNSResolvConf                             string
}

func newUpCommand() *cobra.Command {
	o := upOptions{}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run etcd, the API server, the scheduler, node agents and the dashboard in one process",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runUp(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	addDataDirFlag(f, &o.dataDir, "where etcd, the CA, containerd state and the kubeconfig live")
	f.StringVar(&o.apiListen, "api-listen", "127.0.0.1:6443", "host:port of the Kubernetes API (HTTPS)")
	f.StringVar(&o.webListen, "web-listen", "127.0.0.1:8080", "host:port of the dashboard (HTTP); empty disables it")
	f.StringVar(&o.webLoginToken, "web-login-token", "", "token the dashboard asks for at login (it shows the cluster; changes need a user's login); required (and generated into <data-dir>/dashboard-token when empty) unless --web-listen is loopback")
	f.StringSliceVar(&o.webAcceptHosts, "web-accept-hosts", nil, "more host names the dashboard answers to (such as a DNS name in front of it); it refuses requests for any host but the addresses it listens on")
	f.StringVar(&o.etcdListen, "etcd-listen", "127.0.0.1:2379", "client URL of the embedded etcd (https only; clients need a certificate of <data-dir>/pki/etcd/ca.crt, as <data-dir>/etcdctl.env names)")
	f.StringVar(&o.etcdPeerListen, "etcd-peer-listen", "", "peer URL of the embedded etcd (default: the client port + 1)")
	f.StringSliceVar(&o.etcdEndpoints, "etcd-endpoints", nil, "use this external etcd cluster instead of the embedded one")
	f.StringVar(&o.etcdTLS.CAFile, "etcd-cafile", "", "CA file verifying the external etcd cluster's serving certificates (with --etcd-endpoints)")
	f.StringVar(&o.etcdTLS.CertFile, "etcd-certfile", "", "client certificate shown to the external etcd cluster (with --etcd-endpoints)")
	f.StringVar(&o.etcdTLS.KeyFile, "etcd-keyfile", "", "key of --etcd-certfile")
	f.StringVar(&o.containerdAddress, "containerd-address", "", "use this containerd socket instead of a managed containerd")
	f.StringVar(&o.nodeRuntime, "node-runtime", "auto", "the local node: auto (containerd where it can run, else simulated), containerd, simulated or none")
	f.IntVar(&o.simulatedNodes, "simulated-nodes", 0, "run N more simulated nodes, sim-1 … sim-N")
	f.DurationVar(&o.simulatedStartDelay, "simulated-start-delay", runtime.DefaultSimulatedStartDelay, "how long simulated containers take to start")
	f.StringVar(&o.simulatedUsage, "simulated-usage", usage.DefaultSimulatedUsage, "the CPU and memory each container of a simulated node reports to metrics.k8s.io, unless its pod's "+usage.AnnotationSimulatedUsage+" annotation says otherwise")
	f.IntVar(&o.simulatedWritesInflight, "simulated-writes-inflight", defaultSimulatedWritesPerCPU*goruntime.GOMAXPROCS(0), fmt.Sprintf("how many writes (pods' status and deletions first, then Events) the simulated nodes have in flight together, %d per CPU by default, so that they do not crowd the control plane off the machine they share with it; their Node status and Lease heartbeats go around it (0: no bound)", defaultSimulatedWritesPerCPU))
	f.DurationVar(&o.simulatedCompleteAfter, "simulated-complete-after", runtime.DefaultSimulatedCompleteAfter, "how long simulated containers of restartPolicy Never/OnFailure pods run before they exit (0, or N for a command ending in \"exit N\")")
	f.StringVar(&o.nodeName, "node-name", "", "the local node's name (default: the host name)")
	f.StringVar(&o.schedulerConfig, "scheduler-config", "", "KubeSchedulerConfiguration file (kubescheduler.config.k8s.io/v1) for the in-process scheduler")
	f.DurationVar(&o.nodeMonitorGrace, "node-monitor-grace-period", nodelifecycle.DefaultGracePeriod, "how long a node may go without a heartbeat before it is marked unreachable")
	f.StringSliceVar(&o.controllers, "controllers", []string{"*"}, "the controllers to run, as kube-controller-manager's flag: '*' is all, 'name' adds one, '-name' leaves one out; known: "+strings.Join(controllers.KnownControllers(), ", "))
	f.BoolVar(&o.runScheduler, "scheduler", true, "run the scheduler in this process; with false, run \"glassplane scheduler\" processes instead")
	f.IntVar(&o.nodePort, "node-port", 10250, "HTTPS port of the local node agent for logs and exec (a free port when taken)")
	f.StringVar(&o.podCIDR, "pod-cidr", runtime.DefaultPodCIDR, "the local node's pod subnet (CNI bridge gp0)")
	f.StringVar(&o.systemReserved, "system-reserved", "", "resources the local node holds back from allocatable, e.g. cpu=100m,memory=256Mi")
	f.StringSliceVar(&o.insecureRegistries, "insecure-registry", nil, "registries (host:port) the local node pulls from over plain HTTP (loopback ones always are)")
	f.StringVar(&o.auditLogPath, "audit-log-path", "", "also write audit events as JSON lines to this file")
	f.StringVar(&o.auditPolicyFile, "audit-policy-file", "", "audit.k8s.io/v1 Policy deciding each request's audit level (default: Metadata, with request bodies of writes)")
	f.StringVar(&o.tokenAuthFile, "token-auth-file", "", "static bearer tokens, Kubernetes' CSV format: token,user,uid,\"group1,group2\"")
	f.BoolVar(&o.profiling, "profiling", true, "serve Go's profiles on the API server's /debug/pprof/ to users RBAC allows (system:masters), as kube-apiserver's --profiling does")
	f.BoolVar(&o.anonymousAuth, "anonymous-auth", false, "treat requests without credentials as system:anonymous (group system:unauthenticated) instead of refusing them with 401")
	f.DurationVar(&o.eventTTL, "event-ttl", time.Hour, "how long Events are kept (each write of one starts it again; 0 keeps them), as kube-apiserver's --event-ttl")
	f.StringVar(&o.serviceClusterIPRange, "service-cluster-ip-range", apiserver.DefaultServiceClusterIPRange, "IPv4 CIDR Services' cluster IPs come from (its first address is the kubernetes Service's), as kube-apiserver's flag")
	f.StringVar(&o.serviceNodePortRange, "service-node-port-range", apiserver.DefaultServiceNodePortRange, "first-last range of the node ports of NodePort and LoadBalancer Services")
	f.StringVar(&o.advertiseAddress, "advertise-address", "", "IPv4 address the kubernetes Service's endpoints point at (default: the host of --api-listen, or the host's default-route address when that is unspecified)")
	f.IntVar(&o.maxRequestsInflight, "max-requests-inflight", apiserver.DefaultMaxRequestsInflight, "with --max-mutating-requests-inflight, the seats API Priority and Fairness shares among its priority levels, as kube-apiserver's flag")
	f.IntVar(&o.maxMutatingRequestsInflight, "max-mutating-requests-inflight", apiserver.DefaultMaxMutatingRequestsInflight, "see --max-requests-inflight")
	f.StringVar(&o.clusterDomain, "cluster-domain", dns.DefaultClusterDomain, "the cluster's DNS domain, served by the cluster DNS and searched by pods, as the kubelet's flag")
	f.StringVar(&o.clusterDNSListen, "cluster-dns-listen", "", "host:port (UDP and TCP) of the cluster DNS server behind kube-system/kube-dns (default: the advertise address on a free port)")
	f.StringVar(&o.clusterDNSResolvConf, "cluster-dns-resolv-conf", dns.DefaultResolvConf, "resolv.conf whose nameservers the cluster DNS forwards names outside the cluster to")
	f.StringVar(&o.saKeyFile, "service-account-key-file", "", "ECDSA P-256 key (PEM) signing ServiceAccount tokens (default: <data-dir>/pki/sa.key, created when absent)")
	return cmd
}

// defaultUpGCPercent is the garbage collector's target for `up` when GOGC
// is not set: 200, where Go's default is 100. One process holds etcd, the
// API server, the controllers, the dashboard and the simulated nodes, a
// live heap of some 250 MB at 1,000 pods; at 100 it collected every two
// seconds under the dashboard benchmark's churn, marking for a third of the
// time on two cores, and the collector took 0.18 of the process's 1.2
// cores. At 200 it takes 0.08 and the process some 240 MB more (about
// 990 MB resident at 1,000 pods on 100 simulated nodes, 750 at 100).
const defaultUpGCPercent = 200

// upGCPercent is the collector's target for `up`, and false when the user
// chose one with GOGC (which the Go runtime has applied).
func upGCPercent(lookupEnv func(string) (string, bool)) (int, bool) {
	if _, set := lookupEnv("GOGC"); set {
		return 0, false
	}
	return defaultUpGCPercent, true
}

// runUp starts every part in order, each waiting for the one before, and
// stops them in reverse when ctx ends.
func runUp(ctx context.Context, o upOptions) error {
	log := slog.Default()
	mode, err := checkUpOptions(&o)
	if err != nil {
		return err
	}
	if percent, ok := upGCPercent(os.LookupEnv); ok {
		debug.SetGCPercent(percent)
	}
	if err := os.MkdirAll(o.dataDir, 0o700); err != nil {
		return fmt.Errorf("failed to create data dir %q: %w", o.dataDir, err)
	}
	dataDir, err := filepath.Abs(o.dataDir)
	if err != nil {
		return err
	}
	// <data-dir>/glassplane.pid: one up per data directory, and what
	// `glassplane down` stops.
	release, err := lockDataDir(dataDir)
	if err != nil {
		return err
	}
	defer release()

	// 1. The cluster CA.
	ca, err := pki.LoadOrCreateCA(dataDir)
	if err != nil {
		return err
	}

	// 2. etcd: the embedded member serves TLS only, to clients with a
	// certificate of its own CA (<data-dir>/pki/etcd), and writes etcdctl.env.
	etcdSrv, err := etcd.Start(ctx, etcd.Config{
		DataDir:     dataDir,
		ClientURL:   o.etcdListen,
		PeerURL:     o.etcdPeerListen,
		Endpoints:   o.etcdEndpoints,
		ExternalTLS: o.etcdTLS,
		Logger:      log,
	})
	if err != nil {
		return err
	}
	defer etcdSrv.Close()

	// 3. Storage and the audit ring.
	store := storage.New(etcdSrv.Client(), storage.Config{
		Logger: log, SerializableReads: etcdSrv.Embedded(), Watch: etcdSrv.DirectWatch(),
		TTLs: map[string]time.Duration{storage.Prefix("events", ""): o.eventTTL},
	})
	ring := audit.NewRing(0)
	if o.auditPolicyFile != "" {
		policy, err := audit.LoadPolicy(o.auditPolicyFile)
		if err != nil {
			return err
		}
		ring.SetPolicy(policy)
	}
	if o.auditLogPath != "" {
		closer, err := ring.OpenLog(o.auditLogPath)
		if err != nil {
			return err
		}
		defer closer.Close()
	}

	// 4. The API server on its TLS listener, and the dashboard's listener.
	// The certificate names what pods reach the API at, as
	// kube-apiserver's does: the kubernetes Service's cluster IP, its
	// names under the cluster domain, and the advertised address.
	host, _, _ := net.SplitHostPort(o.apiListen)
	serviceIP, err := apiserver.KubernetesServiceIP(o.serviceClusterIPRange)
	if err != nil {
		return err
	}
	cert, err := ca.Serving(host, serviceIP.String(), "kubernetes.default.svc."+strings.TrimSuffix(o.clusterDomain, "."), o.advertiseAddress)
	if err != nil {
		return err
	}
	srv, err := server.New(server.Config{
		APIListen:   o.apiListen,
		WebListen:   o.webListen,
		Certificate: cert,
		ClientCAs:   ca.Pool(),
		Logger:      log,
	})
	if err != nil {
		return err
	}
	authn, err := loadAuthentication(o, dataDir)
	if err != nil {
		return err
	}
	advertise, err := advertiseAddress(o.advertiseAddress, srv.APIURL())
	if err != nil {
		return err
	}
	aggregation, err := frontProxy(dataDir, ca)
	if err != nil {
		return err
	}
	api, err := apiserver.New(apiserver.Config{
		Store: store, Audit: ring, ClientCA: ca.Pool(), Logger: log, Aggregation: aggregation,
		TokenAuthenticators: authn.tokens, ServiceAccountKey: authn.saKey, AnonymousAuth: o.anonymousAuth,
		ServiceAccountAdmission: true, RBAC: true, Profiling: o.profiling,
		ServiceClusterIPRange: o.serviceClusterIPRange, ServiceNodePortRange: o.serviceNodePortRange,
		AdvertiseAddress: advertise.Addr().String(), AdvertisePort: int(advertise.Port()),
		MaxRequestsInflight: o.maxRequestsInflight, MaxMutatingRequestsInflight: o.maxMutatingRequestsInflight,
	})
	if err != nil {
		return err
	}
	if err := connectNodes(api, ca); err != nil {
		return err
	}
	api.Register(srv.API())
	apiURL := clientURL(srv.APIURL())
	// The components in this process reach the API in process (see
	// server.DialAPI), with the same URL, TLS and client certificates; the
	// dashboard calls its handler directly (server.InProcessTransport).
	local := apiEndpoint{ca: ca, url: apiURL, dial: srv.DialAPI, transport: srv.InProcessTransport, anonymous: srv.AnonymousInProcessTransport}

	g, ctx := errgroup.WithContext(ctx)
	stopStore := runPart(ctx, g, "storage", store.Run)
	defer stopStore()
	select {
	case <-store.Ready():
	case <-ctx.Done():
		return g.Wait()
	}
	if err := api.Bootstrap(ctx); err != nil {
		return err
	}
	// The API server's RBAC cache follows the roles and bindings in etcd;
	// requests wait for its first full list.
	stopAPI := runPart(ctx, g, "apiserver", api.Run)
	defer stopAPI()

	// 5. The dashboard, reading through the API with its own identity and
	// writing as the users who log in to it.
	var dash *web.Dashboard
	if srv.Web() != nil {
		dashCfg, err := local.inProcessConfig(rbac.UserDashboard)
		if err != nil {
			return err
		}
		token, err := dashboardToken(o, dataDir)
		if err != nil {
			return err
		}
		// The same dashboard as `glassplane dashboard`, reading this
		// cluster through its API like any other client.
		sources, err := startDashboardSources(ctx, g, dashCfg, kube.EtcdDirectConfig{}, "", true, log)
		if err != nil {
			return err
		}
		dc := sources.config
		dc.RESTConfig, dc.Logger, dc.Mode, dc.LoginToken = dashCfg, log, mode, token
		if dc.AnonymousRESTConfig, err = local.anonymousConfig(); err != nil {
			return err
		}
		dc.Listen, dc.AcceptHosts, dc.URL = o.webListen, o.webAcceptHosts, srv.WebURL()
		dc.LinkUser, dc.LinkGroups = pki.AdminUser, []string{pki.AdminGroup, auth.GroupAuthenticated}
		dc.LinkFile = filepath.Join(dataDir, "dashboard-login")
		dash, err = web.New(dc)
		if err != nil {
			return err
		}
		dash.Register(srv.Web())
		stopDash := runPart(ctx, g, "dashboard", dash.Run)
		defer stopDash()
	}
	stopServer := runPart(ctx, g, "server", srv.Run)
	defer stopServer()

	// The admission webhooks and policies read their configurations
	// through the API as the API server's loopback identity.
	loopback, err := local.restConfig("system:apiserver", pki.AdminGroup)
	if err != nil {
		return err
	}
	stopDynamicAdmission := runPart(ctx, g, "admission-webhooks", func(ctx context.Context) error { return api.RunDynamicAdmission(ctx, loopback) })
	defer stopDynamicAdmission()
	// The aggregation layer follows the APIServices through the same
	// loopback identity, as kube-aggregator does.
	stopAggregator := runPart(ctx, g, "aggregator", func(ctx context.Context) error { return api.RunAggregator(ctx, loopback) })
	defer stopAggregator()
	// API Priority and Fairness reads its FlowSchemas and priority levels
	// the same way.
	stopFlowControl := runPart(ctx, g, "flow-control", func(ctx context.Context) error { return api.RunFlowControl(ctx, loopback) })
	defer stopFlowControl()

	// 6. The ServiceAccount controller, as system:kube-controller-manager;
	// the built-in namespaces get their default ServiceAccount before
	// anyone is handed the kubeconfig.
	cmClient, err := local.client("system:kube-controller-manager")
	if err != nil {
		return err
	}
	saController := serviceaccount.NewController(cmClient, ca.CertPEM, log)
	stopSAController := runPart(ctx, g, "serviceaccount-controller", func(ctx context.Context) error { return saController.Run(ctx, 2) })
	defer stopSAController()
	log.Info("waiting for the default service accounts")
	select {
	case <-saController.Ready():
	case <-ctx.Done():
		return g.Wait()
	}

	// 7. The kubeconfig people use.
	kubeconfigPath := filepath.Join(dataDir, "kubeconfig")
	kc, err := ca.Kubeconfig(apiURL, pki.AdminUser, pki.AdminGroup)
	if err != nil {
		return err
	}
	if err := os.WriteFile(kubeconfigPath, kc, 0o600); err != nil {
		return fmt.Errorf("failed to write %q: %w", kubeconfigPath, err)
	}

	// 8. The scheduler, as system:kube-scheduler.
	schedClient, err := local.client("system:kube-scheduler")
	if err != nil {
		return err
	}
	if o.runScheduler {
		schedCfg, err := inProcessSchedulerConfig(o.schedulerConfig, log)
		if err != nil {
			return err
		}
		sched, err := scheduler.New(schedCfg, schedClient)
		if err != nil {
			return err
		}
		stopSched := runPart(ctx, g, "scheduler", tempo.Gated(schedClient, "scheduler", sched.Run))
		defer stopSched()
	}

	// 9. The controllers, as system:kube-controller-manager.
	cmCfg, err := local.restConfig("system:kube-controller-manager")
	if err != nil {
		return err
	}
	stopCM := runPart(ctx, g, "controller-manager", func(ctx context.Context) error {
		return runControllerManager(ctx, cmCfg, controllers.Config{Logger: log, NodeMonitorGracePeriod: o.nodeMonitorGrace, Controllers: o.controllers})
	})
	defer stopCM()

	// 10. The cluster DNS (CoreDNS) as system:glassplane-dns, behind
	// kube-system/kube-dns.
	clusterDNS, stopDNS, dnsIP, err := startClusterDNS(ctx, g, o, dataDir, advertise.Addr(), local)
	if err != nil {
		return err
	}
	defer stopDNS()
	log.Info("waiting for the cluster DNS")
	select {
	case <-clusterDNS.Ready():
	case <-ctx.Done():
		return g.Wait()
	}

	// 11. Node agents, each as system:node:<name>.
	stopNodes, err := startNodes(ctx, g, o, mode, dataDir, local, dnsIP)
	if err != nil {
		return err
	}
	defer stopNodes()

	fmt.Printf("\nGlassplane is up (nodes: %s).\n", describeMode(mode, o))
	if dash != nil {
		// The link logs in as the admin, once: printed here only, never
		// logged; the next one is in <data-dir>/dashboard-login.
		fmt.Printf("Dashboard:  %s\n", dash.LoginLink())
	}
	fmt.Printf("API:        %s\n", apiURL)
	fmt.Printf("kubectl:    export KUBECONFIG=%s\n\n", kubeconfigPath)

	err = g.Wait()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	log.Info("glassplane stopped")
	return err
}

// runPart runs one part's Run in g with its own context and returns the
// function that stops it and waits; deferred, these stop parts in reverse
// start order.
func runPart(ctx context.Context, g *errgroup.Group, name string, run func(context.Context) error) (stop func()) {
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	g.Go(func() error {
		defer close(done)
		err := run(pctx)
		if err != nil && pctx.Err() == nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	})
	return func() { cancel(); <-done }
}

// checkUpOptions refuses contradictory flags and decides the local node's
// runtime ("containerd", "simulated" or "none").
func checkUpOptions(o *upOptions) (string, error) {
	if o.simulatedNodes < 0 {
		return "", fmt.Errorf("--simulated-nodes must not be negative, got %d", o.simulatedNodes)
	}
	if o.simulatedWritesInflight < 0 {
		return "", fmt.Errorf("--simulated-writes-inflight must not be negative, got %d", o.simulatedWritesInflight)
	}
	if o.maxRequestsInflight < 0 || o.maxMutatingRequestsInflight < 0 {
		return "", fmt.Errorf("--max-requests-inflight and --max-mutating-requests-inflight must not be negative, got %d and %d", o.maxRequestsInflight, o.maxMutatingRequestsInflight)
	}
	if o.maxRequestsInflight+o.maxMutatingRequestsInflight == 0 {
		return "", fmt.Errorf("--max-requests-inflight=0 and --max-mutating-requests-inflight=0 must add up to something positive: they are API Priority and Fairness' seats")
	}
	if err := controllers.CheckControllers(o.controllers); err != nil {
		return "", fmt.Errorf("invalid --controllers: %w", err)
	}
	if o.eventTTL < 0 {
		return "", fmt.Errorf("--event-ttl must not be negative, got %v", o.eventTTL)
	}
	switch o.nodeRuntime {
	case "none", "simulated":
		return o.nodeRuntime, nil
	case "containerd":
		if o.containerdAddress == "" {
			if ok, why := runtime.CanRunContainerd(); !ok {
				return "", fmt.Errorf("--node-runtime containerd: %s", why)
			}
		}
		return "containerd", nil
	case "auto":
		if o.containerdAddress != "" {
			return "containerd", nil
		}
		if ok, why := runtime.CanRunContainerd(); !ok {
			slog.Warn("containerd cannot run here, so the local node is simulated: " + why)
			return "simulated", nil
		}
		return "containerd", nil
	}
	return "", fmt.Errorf("--node-runtime must be auto, containerd, simulated or none, got %q", o.nodeRuntime)
}

func describeMode(mode string, o upOptions) string {
	parts := []string{}
	switch mode {
	case "containerd":
		parts = append(parts, "the local node runs real containers in containerd")
	case "simulated":
		parts = append(parts, "the local node is simulated (no real containers)")
	}
	if o.simulatedNodes > 0 {
		parts = append(parts, fmt.Sprintf("%d simulated nodes", o.simulatedNodes))
	}
	if len(parts) == 0 {
		return "no nodes"
	}
	return strings.Join(parts, ", ")
}

// clientURL turns the API's listen URL into one clients can dial: a wildcard
// host becomes loopback.
func clientURL(listenURL string) string {
	rest, _ := strings.CutPrefix(listenURL, "https://")
	host, port, err := net.SplitHostPort(rest)
	if err != nil {
		return listenURL
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "https://" + net.JoinHostPort(host, port)
}

// apiEndpoint is how the components of `glassplane up` reach its API: its
// URL, the CA that issues their client certificates, the in-process dialer
// (socket pairs) and, for the dashboard, the transport that calls the
// API's handler directly.
//
// Only the dashboard, which people watch, calls the handler directly: its
// watch events then reach it without waiting on the network poller. In the
// dashboard benchmark (1,000 pods, 100 simulated nodes, 200 changes/s, 2
// cores) that cut etcd write → render p99 from 335 to 242 ms (mean of 5
// interleaved pairs, lower in each). With every component on it too, the
// process used ~6% less CPU but the p99 was no better than with socket
// pairs: the components' handoffs, each run next on the same thread, went
// ahead of the goroutines the network poller wakes (the browser's
// websocket, kubectl's requests).
type apiEndpoint struct {
	ca        *pki.CA
	url       string
	dial      func(ctx context.Context, network, addr string) (net.Conn, error)
	transport func(tls.Certificate) (http.RoundTripper, error)
	anonymous func() (http.RoundTripper, error)
}

// anonymousConfig is the in-process client configuration with no identity
// of its own (rest.AnonymousClientConfig cannot derive it: it drops a
// custom transport).
func (e apiEndpoint) anonymousConfig() (*rest.Config, error) {
	rt, err := e.anonymous()
	if err != nil {
		return nil, err
	}
	return &rest.Config{Host: e.url, Transport: rt}, nil
}

// restConfig is the client configuration of user (in groups), through a
// socket pair.
func (e apiEndpoint) restConfig(user string, groups ...string) (*rest.Config, error) {
	cfg, err := e.ca.RESTConfig(e.url, user, groups...)
	if err != nil {
		return nil, err
	}
	cfg.Dial = e.dial
	return cfg, nil
}

// inProcessConfig is the client configuration of user (in groups) through
// the transport that calls the API's handler directly, carrying the client
// certificate the CA issued the user (client-go refuses a custom transport
// beside TLS settings, which the transport stands in for).
func (e apiEndpoint) inProcessConfig(user string, groups ...string) (*rest.Config, error) {
	cfg, err := e.ca.RESTConfig(e.url, user, groups...)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	if err != nil {
		return nil, err
	}
	if cfg.Transport, err = e.transport(cert); err != nil {
		return nil, err
	}
	cfg.TLSClientConfig = rest.TLSClientConfig{}
	return cfg, nil
}

// client returns a component's clientset acting as user (in groups).
func (e apiEndpoint) client(user string, groups ...string) (kubernetes.Interface, error) {
	cfg, err := e.restConfig(user, groups...)
	if err != nil {
		return nil, err
	}
	return newClient(cfg)
}

// newClient returns a component's clientset (see componentConfig).
func newClient(cfg *rest.Config) (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(componentConfig(cfg))
}

// componentConfig tunes cfg for a control-plane component, in place. It
// raises client-go's default rate limits: the components share the process
// with the API server, so its own limits are the ones that matter. And it
// speaks Kubernetes' protobuf, as kube-scheduler and kube-controller-manager
// do (--kube-api-content-type), which costs far less to encode and decode
// than JSON; clients built from cfg for other encodings (the dynamic and
// metadata clients) set their own.
func componentConfig(cfg *rest.Config) *rest.Config {
	cfg.QPS, cfg.Burst = 5000, 10000
	cfg.ContentType = k8sruntime.ContentTypeProtobuf
	cfg.AcceptContentTypes = k8sruntime.ContentTypeProtobuf + "," + k8sruntime.ContentTypeJSON
	return cfg
}

// authentication is what `glassplane up` loads for the API server's
// authenticators.
type authentication struct {
	tokens []auth.TokenAuthenticator
	saKey  *ecdsa.PrivateKey
}

// loadAuthentication reads the static token file and the ServiceAccount
// signing key (creating <data-dir>/pki/sa.key on first start).
func loadAuthentication(o upOptions, dataDir string) (*authentication, error) {
	a := &authentication{}
	if o.tokenAuthFile != "" {
		tf, err := auth.LoadTokenFile(o.tokenAuthFile)
		if err != nil {
			return nil, err
		}
		slog.Info("loaded static tokens", "file", o.tokenAuthFile, "tokens", tf.Len())
		a.tokens = append(a.tokens, tf)
	}
	keyPath := o.saKeyFile
	if keyPath == "" {
		keyPath = filepath.Join(dataDir, "pki", "sa.key")
	}
	key, err := auth.LoadOrCreateServiceAccountKey(keyPath)
	if err != nil {
		return nil, err
	}
	a.saKey = key
	return a, nil
}

// dashboardToken returns the dashboard's login token: the one given, or,
// when the dashboard listens beyond loopback without one, a new random token
// written to <data-dir>/dashboard-token (0600) so that it never appears in
// logs. A loopback dashboard without a token needs no login.
func dashboardToken(o upOptions, dataDir string) (string, error) {
	if o.webLoginToken != "" || web.IsLoopback(o.webListen) {
		return o.webLoginToken, nil
	}
	path := filepath.Join(dataDir, "dashboard-token")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		slog.Info("the dashboard listens beyond loopback: log in with the token in " + path)
		return strings.TrimSpace(string(b)), nil
	}
	buf := make([]byte, 24)
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("failed to generate a dashboard token: %w", err)
	}
	token := hex.EncodeToString(buf)
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("failed to write %q: %w", path, err)
	}
	slog.Info("the dashboard listens beyond loopback: log in with the token in " + path)
	return token, nil
}

// frontProxyClient is the common name of the API server's front-proxy
// client certificate, kubeadm's, which extension API servers accept
// (requestheader-allowed-names).
const frontProxyClient = "front-proxy-client"

// frontProxy loads or creates the front-proxy CA (<data-dir>/pki/front-proxy,
// kept apart as kubeadm keeps front-proxy-ca) and issues the API server's
// front-proxy client certificate: extension API servers believe the user
// the API server names in X-Remote-* headers only from that certificate.
func frontProxy(dataDir string, clientCA *pki.CA) (*apiserver.Aggregation, error) {
	fp, err := pki.LoadOrCreateCAIn(filepath.Join(dataDir, "pki", "front-proxy"), "front-proxy-ca")
	if err != nil {
		return nil, err
	}
	cert, key, err := fp.Client(frontProxyClient)
	if err != nil {
		return nil, err
	}
	return &apiserver.Aggregation{
		ClientCA: clientCA.CertPEM, RequestHeaderCA: fp.CertPEM, RequestHeaderAllowedNames: []string{frontProxyClient},
		ProxyClientCert: cert, ProxyClientKey: key,
	}, nil
}
