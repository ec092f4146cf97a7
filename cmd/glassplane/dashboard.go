package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/glassplane/glassplane/auditwebhook"
	"github.com/glassplane/glassplane/server"
	"github.com/glassplane/glassplane/web"
	"github.com/glassplane/glassplane/web/source"
	"github.com/glassplane/glassplane/web/source/kube"
)

// dashboardOptions are the flags of `glassplane dashboard`.
type dashboardOptions struct {
	kubeconfig         string
	webListen          string
	webLoginToken      string
	webAcceptHosts     []string
	linkFile           string
	adminUser          string
	adminGroups        []string
	etcd               kube.EtcdDirectConfig
	auditWebhookListen string
}

// newDashboardCommand runs the dashboard alone against any cluster it has
// a kubeconfig for: Glassplane's own, or upstream Kubernetes.
func newDashboardCommand() *cobra.Command {
	var o dashboardOptions
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Run the dashboard against any Kubernetes cluster (Glassplane or upstream)",
		Long: `Run the dashboard against the cluster a kubeconfig names, as a client of its API
like kubectl: it reads as the kubeconfig's identity (which needs to read
everything and to impersonate the users who log in) and writes as the
logged-in user. Against Glassplane it also shows the etcd keys and the audit
events through Glassplane's own APIs; against upstream Kubernetes, give
--etcd-endpoints (and its certificates) for the etcd explorer and
--audit-webhook-listen for the request pipeline, with the API server's
--audit-webhook-config-file pointing there. What the cluster does not offer
is said once on the page; everything else works.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runDashboard(ctx, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the dashboard's identity (read all, impersonate users)")
	f.StringVar(&o.webListen, "web-listen", "127.0.0.1:8080", "host:port of the dashboard (HTTP)")
	f.StringVar(&o.webLoginToken, "web-login-token", "", "token the dashboard asks for at login; required unless --web-listen is loopback")
	f.StringSliceVar(&o.webAcceptHosts, "web-accept-host", nil, "more host names the dashboard answers to (a DNS name in front of it)")
	f.StringVar(&o.linkFile, "login-link-file", "", "file (0600) that receives each new one-time admin login link")
	f.StringVar(&o.adminUser, "admin-user", "kubernetes-admin", "who the one-time login link logs a browser in as (impersonated)")
	f.StringSliceVar(&o.adminGroups, "admin-groups", []string{"system:masters", "system:authenticated"}, "the groups of --admin-user")
	f.StringSliceVar(&o.etcd.Endpoints, "etcd-endpoints", nil, "the cluster's etcd client URLs, for a read-only etcd explorer (when its API server does not serve etcdkeys.glassplane.io)")
	f.StringVar(&o.etcd.CACert, "etcd-cacert", "", "CA certificate file that verifies etcd's serving certificate")
	f.StringVar(&o.etcd.Cert, "etcd-cert", "", "client certificate file for etcd")
	f.StringVar(&o.etcd.Key, "etcd-key", "", "client key file for etcd")
	f.StringVar(&o.auditWebhookListen, "audit-webhook-listen", "", "loopback host:port (HTTP, unauthenticated) that receives the API server's audit webhook (audit.k8s.io/v1 EventList POSTs)")
	return cmd
}

// runDashboard serves the dashboard until ctx ends.
func runDashboard(ctx context.Context, o dashboardOptions) error {
	log := slog.Default()
	if o.kubeconfig == "" {
		return errors.New("--kubeconfig (or $KUBECONFIG) is required")
	}
	if o.webLoginToken == "" && !web.IsLoopback(o.webListen) {
		return fmt.Errorf("--web-listen %s is beyond loopback: give --web-login-token", o.webListen)
	}
	// The webhook takes unauthenticated POSTs: anyone who reaches it could
	// make up requests, so it listens on loopback only.
	if o.auditWebhookListen != "" && !web.IsLoopback(o.auditWebhookListen) {
		return fmt.Errorf("--audit-webhook-listen %s is beyond loopback: the audit webhook is not authenticated, give a loopback address (127.0.0.1:PORT) on the API server's machine", o.auditWebhookListen)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("failed to load kubeconfig %q: %w", o.kubeconfig, err)
	}
	srv, err := server.New(server.Config{WebListen: o.webListen, Logger: log})
	if err != nil {
		return err
	}
	g, ctx := errgroup.WithContext(ctx)
	sources, err := startDashboardSources(ctx, g, cfg, o.etcd, o.auditWebhookListen, false, log)
	if err != nil {
		return err
	}
	dcfg := sources.config
	dcfg.RESTConfig, dcfg.Logger, dcfg.LoginToken = cfg, log, o.webLoginToken
	dcfg.Listen, dcfg.AcceptHosts, dcfg.URL = o.webListen, o.webAcceptHosts, srv.WebURL()
	dcfg.LinkUser, dcfg.LinkGroups, dcfg.LinkFile = o.adminUser, o.adminGroups, o.linkFile
	dcfg.Mode = clusterRuntime(ctx, cfg, log)
	dash, err := web.New(dcfg)
	if err != nil {
		return err
	}
	dash.Register(srv.Web())
	runPart(ctx, g, "dashboard", dash.Run)
	runPart(ctx, g, "server", srv.Run)
	fmt.Printf("Glassplane dashboard of %s\n", cfg.Host)
	fmt.Printf("Dashboard:  %s\n", dash.LoginLink())
	for _, note := range sources.notes {
		fmt.Printf("Note:       %s\n", note)
	}
	return g.Wait()
}

// clusterRuntime is what the header says the cluster's nodes run, read
// from its Nodes at start: Glassplane's runtime label where a node has it,
// else the runtime of the node's containerRuntimeVersion
// ("containerd://2.1.0" is containerd); several are joined with "+", none
// is "" (unknown).
func clusterRuntime(ctx context.Context, cfg *rest.Config, log *slog.Logger) string {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		log.Info("the header cannot say the nodes' runtime", "err", err)
		return ""
	}
	return nodeRuntimes(nodes.Items)
}

// nodeRuntimes is clusterRuntime's answer for nodes.
func nodeRuntimes(nodes []corev1.Node) string {
	seen := map[string]bool{}
	for _, n := range nodes {
		rt := n.Labels["node.glassplane.io/runtime"]
		if rt == "" {
			rt, _, _ = strings.Cut(n.Status.NodeInfo.ContainerRuntimeVersion, "://")
		}
		if rt != "" {
			seen[rt] = true
		}
	}
	return strings.Join(slices.Sorted(maps.Keys(seen)), "+")
}

// dashboardSources is what a dashboard reads a cluster through.
type dashboardSources struct {
	// config has Store, Etcd and Audit set.
	config web.Config
	// notes say what the cluster does not offer.
	notes []string
}

// startDashboardSources reads the cluster cfg names through its API: a
// kube.Store of its objects, the etcd explorer through etcdkeys.glassplane.io
// when served (else etcd read directly when etcd.Endpoints are given), and
// the audit events watched from auditevents.glassplane.io when served and
// received on webhookListen when given. The parts run in g. own says the
// cluster is this process's own Glassplane, which serves both APIs (and
// answers no discovery before the server runs).
func startDashboardSources(ctx context.Context, g *errgroup.Group, cfg *rest.Config, etcd kube.EtcdDirectConfig, webhookListen string, own bool, log *slog.Logger) (*dashboardSources, error) {
	out := &dashboardSources{}
	// The sources' requests are the dashboard's own, as its pages' are.
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = web.UserAgent
	store, err := kube.New(kube.Config{REST: cfg, Logger: log.With("component", "dashboard-source")})
	if err != nil {
		return nil, err
	}
	runPart(ctx, g, "dashboard-store", store.Run)
	out.config.Store = store
	etcdServed, auditServed := own, own
	if !own {
		disco, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("failed to make a discovery client: %w", err)
		}
		if etcdServed, err = kube.EtcdKeysServed(disco); err != nil {
			return nil, fmt.Errorf("failed to read the API server's discovery: %w", err)
		}
		if auditServed, err = kube.AuditEventsServed(disco); err != nil {
			return nil, fmt.Errorf("failed to read the API server's discovery: %w", err)
		}
	}
	switch {
	case etcdServed:
		e, err := kube.NewEtcdAPI(cfg)
		if err != nil {
			return nil, err
		}
		out.config.Etcd = e
	case len(etcd.Endpoints) > 0:
		dctx, cancel := context.WithTimeout(ctx, kube.EtcdDialTimeout)
		e, err := kube.NewEtcdDirect(dctx, etcd)
		cancel()
		if err != nil {
			return nil, err
		}
		context.AfterFunc(ctx, func() { e.Close() })
		out.config.Etcd = e
	default:
		out.notes = append(out.notes, "no etcd explorer: the API server does not serve etcdkeys.glassplane.io and no --etcd-endpoints were given")
	}
	if auditServed || webhookListen != "" {
		out.config.Audit = source.NewAuditLog(0)
	}
	if auditServed {
		runPart(ctx, g, "dashboard-audit", func(ctx context.Context) error {
			return kube.WatchAudit(ctx, cfg, out.config.Audit, log.With("component", "dashboard-audit"))
		})
	}
	if webhookListen != "" {
		ln, err := net.Listen("tcp", webhookListen)
		if err != nil {
			return nil, fmt.Errorf("failed to listen on %q for the audit webhook: %w", webhookListen, err)
		}
		audit := out.config.Audit
		recv := &auditwebhook.Receiver{Deliver: func(evs []auditv1.Event) {
			for i := range evs {
				audit.Add(&evs[i])
			}
		}}
		hs := &http.Server{Handler: recv, ReadHeaderTimeout: 10 * time.Second}
		runPart(ctx, g, "audit-webhook", func(ctx context.Context) error {
			context.AfterFunc(ctx, func() { hs.Close() })
			if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
		log.Info("receiving the API server's audit webhook", "address", ln.Addr().String())
	}
	if out.config.Audit == nil {
		out.notes = append(out.notes, "no request pipeline: the API server does not serve auditevents.glassplane.io and no --audit-webhook-listen was given")
	}
	return out, nil
}
