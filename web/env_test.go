package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/glassplane/glassplane/controlplane/etcd"
	"github.com/glassplane/glassplane/controlplane/etcd/etcdtest"
	"github.com/glassplane/glassplane/controlplane/storage"
	"github.com/glassplane/glassplane/web/source"
	"github.com/glassplane/glassplane/web/source/storesource"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// deadline bounds every wait in these tests; generous, since the machine is
// shared.
const deadline = 60 * time.Second

// testHistory is the store's in-memory history in these tests, small so
// that replays from older revisions go to etcd.
const testHistory = 8

// env is a dashboard over a real embedded etcd, served on a loopback port.
type env struct {
	ctx   context.Context
	store *storage.Store
	ring  *testAudit
	dash  *Dashboard
	srv   *httptest.Server
}

// testAudit hands the audit events a test makes up to the dashboard's
// audit log, as if an API server had sent them.
type testAudit struct{ log *source.AuditLog }

// Add adds ev to the log at once.
func (a *testAudit) Add(ev *auditv1.Event) { a.log.Add(ev) }

// storeSources is the Config of a dashboard reading store directly (the
// tests without an API server) and audit events from log.
func storeSources(store *storage.Store, log *source.AuditLog) Config {
	return Config{Store: storesource.Store{S: store}, Etcd: storesource.NewEtcd(store), Audit: log}
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvHistory(t, testHistory)
}

// newEnvHistory is newEnv with a store history of n events.
func newEnvHistory(t *testing.T, n int) *env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srvEtcd, err := etcdtest.StartOnFreePorts(ctx, etcd.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	store := storage.New(srvEtcd.Client(), storage.Config{CompactionInterval: -1, History: n, Watch: srvEtcd.DirectWatch()})
	storeDone := make(chan struct{})
	go func() {
		defer close(storeDone)
		if err := store.Run(ctx); err != nil {
			t.Errorf("store: %v", err)
		}
	}()
	ring := &testAudit{log: source.NewAuditLog(0)}
	cfg := storeSources(store, ring.log)
	cfg.Mode = "simulated"
	dash, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hubDone := make(chan struct{})
	go func() {
		defer close(hubDone)
		if err := dash.Run(ctx); err != nil {
			t.Errorf("dashboard: %v", err)
		}
	}()
	e := echo.New()
	dash.Register(e)
	srv := httptest.NewServer(e)
	t.Cleanup(func() {
		srv.Close()
		cancel()
		<-hubDone
		<-storeDone
		srvEtcd.Close()
	})
	select {
	case <-dash.hub.ready:
	case <-time.After(deadline):
		t.Fatal("the dashboard hub did not start")
	}
	return &env{ctx: ctx, store: store, ring: ring, dash: dash, srv: srv}
}

// put writes obj at key, creating or overwriting it, and returns the revision.
func (e *env) put(t *testing.T, key string, obj any) int64 {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := e.store.GuaranteedUpdate(e.ctx, key, func(*storage.KeyValue) ([]byte, error) { return b, nil })
	if errors.Is(err, storage.ErrNotFound) {
		kv, err = e.store.Create(e.ctx, key, b)
	}
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return kv.ModRevision
}
