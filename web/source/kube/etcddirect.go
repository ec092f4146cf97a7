package kube

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/glassplane/glassplane/etcdview"
	"github.com/glassplane/glassplane/web/source"
)

// EtcdDialTimeout bounds the first connection to an etcd endpoint.
const EtcdDialTimeout = 10 * time.Second

// EtcdDirectConfig names a cluster's etcd and the client certificate to
// read it with, as kube-apiserver's --etcd-servers, --etcd-cafile,
// --etcd-certfile and --etcd-keyfile do.
type EtcdDirectConfig struct {
	// Endpoints are the etcd client URLs (https://host:2379).
	Endpoints []string
	// CACert verifies etcd's serving certificate (the system's roots when
	// empty); Cert and Key are the client certificate and its key.
	CACert, Cert, Key string
}

// EtcdDirect is a source.Etcd that reads a cluster's etcd itself (package
// etcdview), read only: for `glassplane dashboard --etcd-endpoints`
// against a cluster that does not serve etcdkeys.glassplane.io (upstream
// Kubernetes). It sees every key and value, whatever RBAC says: who can
// start it holds etcd's client certificate already.
type EtcdDirect struct {
	client *clientv3.Client
	r      *etcdview.Reader
}

var _ source.Etcd = (*EtcdDirect)(nil)

// NewEtcdDirect connects to the etcd cfg names and checks that it answers.
// The connection lasts until Close or until ctx ends.
func NewEtcdDirect(ctx context.Context, cfg EtcdDirectConfig) (*EtcdDirect, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("no etcd endpoints given")
	}
	var tlsConfig *tls.Config
	if cfg.CACert != "" || cfg.Cert != "" || cfg.Key != "" {
		info := transport.TLSInfo{TrustedCAFile: cfg.CACert, CertFile: cfg.Cert, KeyFile: cfg.Key}
		c, err := info.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("failed to load the etcd client TLS files: %w", err)
		}
		tlsConfig = c
	} else if strings.HasPrefix(cfg.Endpoints[0], "https://") {
		tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	endpoints := strings.Join(cfg.Endpoints, ",")
	client, err := clientv3.New(clientv3.Config{
		Endpoints: cfg.Endpoints, TLS: tlsConfig, DialTimeout: EtcdDialTimeout, Logger: zap.NewNop(), Context: ctx,
	})
	if err != nil {
		return nil, fmt.Errorf("failed to connect to etcd %q: %w", endpoints, err)
	}
	sctx, cancel := context.WithTimeout(ctx, EtcdDialTimeout)
	defer cancel()
	if _, err := client.Status(sctx, cfg.Endpoints[0]); err != nil {
		client.Close()
		return nil, fmt.Errorf("failed to reach etcd %q: %w", cfg.Endpoints[0], err)
	}
	return &EtcdDirect{client: client, r: etcdview.New(client)}, nil
}

// Close closes the connection to etcd.
func (e *EtcdDirect) Close() error { return e.client.Close() }

// Keys implements source.Etcd, page by page at one revision. Values are
// left out, as from EtcdAPI: History reads them.
func (e *EtcdDirect) Keys(ctx context.Context, prefix string, rev int64) (*source.ListResult, error) {
	out := &source.ListResult{Revision: rev}
	start := ""
	for {
		page, err := e.r.List(ctx, prefix, start, out.Revision, PageSize)
		if err != nil {
			return nil, fmt.Errorf("failed to list the etcd keys under %q: %w", prefix, etcdViewError(err))
		}
		out.Revision = page.Revision
		for _, k := range page.Keys {
			out.Items = append(out.Items, source.KeyValue{Key: k.Key, CreateRevision: k.CreateRevision, ModRevision: k.ModRevision})
		}
		if start = page.Next; start == "" {
			return out, nil
		}
	}
}

// History implements source.Etcd: values decoded by etcdview.Decode (JSON
// as stored, Kubernetes' protobuf as JSON), at most
// etcdview.HistoryLength of them.
func (e *EtcdDirect) History(ctx context.Context, key string, at int64, n int) ([]source.KeyVersion, source.HistoryEnd, error) {
	keys, end, err := e.r.History(ctx, key, at)
	if err != nil {
		return nil, source.HistoryEnd{}, fmt.Errorf("failed to read the history of etcd key %q: %w", key, etcdViewError(err))
	}
	return history(keys, end, n)
}

// etcdViewError words etcdview's errors as source's.
func etcdViewError(err error) error {
	switch {
	case errors.Is(err, etcdview.ErrNotFound):
		return fmt.Errorf("%w: %w", source.ErrNotFound, err)
	case errors.Is(err, etcdview.ErrCompacted):
		return fmt.Errorf("%w: %w", source.ErrCompacted, err)
	case errors.Is(err, etcdview.ErrFutureRevision):
		return fmt.Errorf("%w: %w", source.ErrFutureRevision, err)
	}
	return err
}
