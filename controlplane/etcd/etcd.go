package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.uber.org/zap"
)

const (
	// DefaultClientURL is where the embedded member serves clients, so that
	// `etcdctl get /registry/pods/default/mypod` works as in the study notes.
	DefaultClientURL = "http://127.0.0.1:2379"
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
	// A bare host:port is accepted and means http://host:port.
	ClientURL string
	// PeerURL is the embedded member's peer URL; empty means a loopback port
	// one above the client port.
	PeerURL string
	// Endpoints, when set, names an external etcd cluster and no member is
	// embedded.
	Endpoints []string
	// Logger receives start-up and shutdown messages.
	Logger *slog.Logger
}

// Server is a running etcd (embedded or external) with an open client.
type Server struct {
	client   *clientv3.Client
	embedded *embed.Etcd
	// Endpoints the client talks to.
	Endpoints []string

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
		cli, err := dial(ctx, cfg.Endpoints)
		if err != nil {
			return nil, err
		}
		log.Info("using external etcd", "endpoints", strings.Join(cfg.Endpoints, ","))
		return &Server{client: cli, Endpoints: cfg.Endpoints}, nil
	}

	clientURL, err := parseURL(cfg.ClientURL, DefaultClientURL)
	if err != nil {
		return nil, fmt.Errorf("failed to parse etcd client URL %q: %w", cfg.ClientURL, err)
	}
	peerURL, err := defaultPeerURL(cfg.PeerURL, clientURL)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(cfg.DataDir, "etcd")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("failed to create etcd data dir %q: %w", dir, err)
	}
	ec := embed.NewConfig()
	ec.Name = "glassplane"
	ec.Dir = dir
	ec.ListenClientUrls = []url.URL{*clientURL}
	ec.AdvertiseClientUrls = []url.URL{*clientURL}
	ec.ListenPeerUrls = []url.URL{*peerURL}
	ec.AdvertisePeerUrls = []url.URL{*peerURL}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
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
	endpoints := []string{clientURL.String()}
	// The control plane talks to its own member through direct calls, not
	// gRPC over loopback: no sockets, no TLS, no second protobuf round.
	// Tools such as etcdctl still reach the member on its client URL.
	cli := v3client.New(e.Server)
	log.Info("embedded etcd ready", "client-url", clientURL.String())
	return &Server{client: cli, embedded: e, Endpoints: endpoints}, nil
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

func dial(ctx context.Context, endpoints []string) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
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
		raw = "http://" + raw
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
	return &url.URL{Scheme: "http", Host: fmt.Sprintf("%s:%d", client.Hostname(), port+1)}, nil
}
