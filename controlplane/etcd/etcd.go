package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.uber.org/zap"
)

const (
	// DefaultClientURL is where the embedded member serves clients, so that
	// `etcdctl get /registry/pods/default/mypod` works as in the study notes
	// once etcdctl.env is sourced.
	DefaultClientURL = "https://127.0.0.1:2379"
	// DefaultStartTimeout bounds how long the embedded member may take to
	// become ready.
	DefaultStartTimeout = 60 * time.Second
	// DefaultDialTimeout bounds the first connection to an etcd endpoint.
	DefaultDialTimeout = 10 * time.Second
)

// Config says where etcd runs.
type Config struct {
	// DataDir holds the embedded member's data (`<DataDir>/member`).
	DataDir string
	// ClientURL is the embedded member's client URL; empty means DefaultClientURL.
	// A bare host:port is accepted and means https://host:port; the member
	// serves only HTTPS and asks every client for a certificate of its CA.
	ClientURL string
	// PeerURL is the embedded member's peer URL (HTTPS as well); empty means
	// the client host, one port above the client port.
	PeerURL string
	// Endpoints, when set, names an external etcd cluster and no member is
	// embedded.
	Endpoints []string
	// ExternalTLS, for Endpoints, is the CA that verifies the cluster and the
	// client certificate shown to it (kube-apiserver's --etcd-cafile,
	// --etcd-certfile and --etcd-keyfile); all empty means the system's roots
	// for https endpoints and no client certificate.
	ExternalTLS ClientTLS
	// Logger receives start-up and shutdown messages.
	Logger *slog.Logger
}

// Server is a running etcd (embedded or external) with an open client.
type Server struct {
	client   *clientv3.Client
	embedded *embed.Etcd
	// Endpoints the client talks to; for the embedded member, where
	// etcdctl reaches it.
	Endpoints []string
	// AdminTLS is the embedded member's CA and the admin's client
	// certificate, or Config.ExternalTLS.
	AdminTLS ClientTLS

	closeOnce sync.Once
}

// Start starts the embedded member (or dials the external cluster), waits
// until it serves, and returns a client to it.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	if len(cfg.Endpoints) > 0 {
		return startExternal(ctx, cfg, log)
	}
	if cfg.ExternalTLS != (ClientTLS{}) {
		return nil, errors.New("a CA, certificate or key for etcd needs external etcd endpoints")
	}

	clientURL, err := parseURL(cfg.ClientURL, DefaultClientURL)
	if err != nil {
		return nil, fmt.Errorf("failed to parse etcd client URL %q: %w", cfg.ClientURL, err)
	}
	peerURL, err := defaultPeerURL(cfg.PeerURL, clientURL)
	if err != nil {
		return nil, err
	}
	for _, u := range []*url.URL{clientURL, peerURL} {
		if u.Scheme != "https" {
			return nil, fmt.Errorf("the embedded etcd serves only https, not %q: its clients need a certificate of its CA", u.String())
		}
	}
	dir := filepath.Join(cfg.DataDir, "etcd")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("failed to create etcd data dir %q: %w", dir, err)
	}
	certs, err := loadOrCreateMemberTLS(cfg.DataDir, certHosts(clientURL.Hostname(), peerURL.Hostname()))
	if err != nil {
		return nil, err
	}
	ec := embed.NewConfig()
	ec.Name = "glassplane"
	ec.Dir = dir
	ec.ListenClientUrls = []url.URL{*clientURL}
	ec.AdvertiseClientUrls = []url.URL{*clientURL}
	ec.ListenPeerUrls = []url.URL{*peerURL}
	ec.AdvertisePeerUrls = []url.URL{*peerURL}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	ec.ClientTLSInfo = transport.TLSInfo{
		CertFile: certs.serverCert, KeyFile: certs.serverKey,
		TrustedCAFile: certs.admin.CAFile, ClientCertAuth: true,
	}
	ec.PeerTLSInfo = transport.TLSInfo{
		CertFile: certs.peerCert, KeyFile: certs.peerKey,
		TrustedCAFile: certs.admin.CAFile, ClientCertAuth: true,
	}
	// No HTTP/JSON gateway, and no CORS: etcd reads an empty list as "allow
	// every origin", so the list holds one that no browser sends.
	ec.EnableGRPCGateway = false
	ec.CORS = map[string]struct{}{noCORSOrigin: {}}
	ec.LogLevel = "error"
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	ec.QuotaBackendBytes = 8 << 30
	log.Info("starting embedded etcd", "dir", dir, "client-url", clientURL.String())
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("failed to start embedded etcd in %q: %w", dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd failed: %w", err)
	case <-time.After(DefaultStartTimeout):
		e.Close()
		return nil, errors.New("embedded etcd did not become ready within 60s")
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	}
	endpoints := []string{dialURL(clientURL)}
	envFile := filepath.Join(cfg.DataDir, EtcdctlEnvFile)
	if err := writeEtcdctlEnv(envFile, endpoints, certs.admin); err != nil {
		e.Close()
		return nil, err
	}
	// The control plane talks to its own member through direct calls, not
	// gRPC over loopback: no sockets, no TLS, no second protobuf round.
	// Tools such as etcdctl reach the member on its client URL with the
	// admin's certificate that envFile names.
	cli := v3client.New(e.Server)
	log.Info("embedded etcd ready", "client-url", clientURL.String(), "etcdctl-env", envFile)
	return &Server{client: cli, embedded: e, Endpoints: endpoints, AdminTLS: certs.admin}, nil
}

// noCORSOrigin is the only origin the embedded member allows cross-origin
// requests from; it is no origin a browser sends.
const noCORSOrigin = "glassplane-allows-no-cross-origin-requests"

// startExternal dials the external cluster of cfg.Endpoints and writes an
// etcdctl.env for it when cfg.DataDir is set.
func startExternal(ctx context.Context, cfg Config, log *slog.Logger) (*Server, error) {
	t := cfg.ExternalTLS
	if (t.CertFile == "") != (t.KeyFile == "") {
		return nil, errors.New("an etcd client certificate and its key go together")
	}
	var tlsConfig *tls.Config
	if t != (ClientTLS{}) {
		info := transport.TLSInfo{CertFile: t.CertFile, KeyFile: t.KeyFile, TrustedCAFile: t.CAFile}
		c, err := info.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("failed to load the TLS files for etcd %q: %w", strings.Join(cfg.Endpoints, ","), err)
		}
		tlsConfig = c
	} else if strings.HasPrefix(cfg.Endpoints[0], "https://") {
		tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	cli, err := dial(ctx, cfg.Endpoints, tlsConfig)
	if err != nil {
		return nil, err
	}
	if cfg.DataDir != "" {
		if err := writeEtcdctlEnv(filepath.Join(cfg.DataDir, EtcdctlEnvFile), cfg.Endpoints, t); err != nil {
			cli.Close()
			return nil, err
		}
	}
	log.Info("using external etcd", "endpoints", strings.Join(cfg.Endpoints, ","))
	return &Server{client: cli, Endpoints: cfg.Endpoints, AdminTLS: t}, nil
}

// dialURL is u with an unspecified host (0.0.0.0, ::) replaced by loopback,
// for clients on this machine.
func dialURL(u *url.URL) string {
	d := *u
	if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsUnspecified() {
		d.Host = net.JoinHostPort("127.0.0.1", u.Port())
	}
	return d.String()
}

// Client returns the client to this etcd.
func (s *Server) Client() *clientv3.Client { return s.client }

// Embedded reports whether the member runs in this process.
func (s *Server) Embedded() bool { return s.embedded != nil }

// Close closes the client first, then stops the embedded member; the member
// waits for open clients before it stops. Calling Close twice is safe.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		err = s.client.Close()
		if s.embedded != nil {
			s.embedded.Close()
		}
	})
	return err
}

func dial(ctx context.Context, endpoints []string, tlsConfig *tls.Config) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		TLS:         tlsConfig,
		DialTimeout: DefaultDialTimeout,
		Logger:      zap.NewNop(),
		Context:     ctx,
	})
	if err != nil {
		return nil, fmt.Errorf("failed to connect to etcd %q: %w", strings.Join(endpoints, ","), err)
	}
	sctx, cancel := context.WithTimeout(ctx, DefaultDialTimeout)
	defer cancel()
	if _, err := cli.Status(sctx, endpoints[0]); err != nil {
		cli.Close()
		return nil, fmt.Errorf("failed to reach etcd %q: %w", endpoints[0], err)
	}
	return cli, nil
}

func parseURL(raw, def string) (*url.URL, error) {
	if raw == "" {
		raw = def
	}
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if u.Port() == "" {
		return nil, fmt.Errorf("no port in %q", raw)
	}
	return u, nil
}

func defaultPeerURL(raw string, client *url.URL) (*url.URL, error) {
	if raw != "" {
		u, err := parseURL(raw, "")
		if err != nil {
			return nil, fmt.Errorf("failed to parse etcd peer URL %q: %w", raw, err)
		}
		return u, nil
	}
	var port int
	if _, err := fmt.Sscanf(client.Port(), "%d", &port); err != nil {
		return nil, fmt.Errorf("failed to parse etcd client port %q: %w", client.Port(), err)
	}
	return &url.URL{Scheme: "https", Host: net.JoinHostPort(client.Hostname(), strconv.Itoa(port+1))}, nil
}
