package kube

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	stdlog "log"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v5"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/glassplane/glassplane/controlplane/apiserver"
	"github.com/glassplane/glassplane/controlplane/apiserver/audit"
	"github.com/glassplane/glassplane/controlplane/etcd"
	"github.com/glassplane/glassplane/controlplane/etcd/etcdtest"
	"github.com/glassplane/glassplane/controlplane/pki"
	"github.com/glassplane/glassplane/controlplane/storage"
	"github.com/glassplane/glassplane/web/source"
)

// deadline bounds each wait of these tests.
const deadline = 20 * time.Second

// cluster is a real Glassplane API server (over TLS, with client
// certificates from a test CA, authorizing with RBAC) on a real embedded
// etcd, and clients of it as the cluster admin: the setup of web's
// apiEnv, without the dashboard.
type cluster struct {
	ctx  context.Context
	cfg  *rest.Config
	ca   *pki.CA
	url  string
	etcd *etcd.Server
	// storage is the API server's, for Compact (which also forgets its
	// in-memory history, as etcd's Compact alone does not).
	storage *storage.Store
	client  kubernetes.Interface
	ext     apiextensionsclient.Interface
	dyn     dynamic.Interface
}

func startCluster(t testing.TB) *cluster {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	dir := t.TempDir()
	etcdSrv, err := etcdtest.StartOnFreePorts(ctx, etcd.Config{DataDir: dir, Logger: log})
	if err != nil {
		cancel()
		t.Fatalf("start etcd: %v", err)
	}
	store := storage.New(etcdSrv.Client(), storage.Config{CompactionInterval: -1, Logger: log, Watch: etcdSrv.DirectWatch()})
	storeDone := make(chan struct{})
	go func() { defer close(storeDone); store.Run(ctx) }()
	<-store.Ready()
	ca, err := pki.LoadOrCreateCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := apiserver.New(apiserver.Config{Store: store, Audit: audit.NewRing(0), ClientCA: ca.Pool(), Logger: log, AdvertiseAddress: "127.0.0.1", RBAC: true, NoDynamicAdmission: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	go srv.Run(ctx)
	api := echo.New()
	srv.Register(api)
	serving, err := ca.Serving()
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(api)
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{serving}, ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: ca.Pool()}
	ts.Config.ErrorLog = stdlog.New(io.Discard, "", 0)
	ts.StartTLS()
	cfg, err := ca.RESTConfig(ts.URL, pki.AdminUser, pki.AdminGroup)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	t.Cleanup(func() {
		// The clients go first (each test stops its own in a cleanup
		// registered later, which runs earlier), so that no watch
		// reconnects while the servers close.
		cancel()
		ts.CloseClientConnections()
		ts.Close()
		<-storeDone
		etcdSrv.Close()
	})
	return &cluster{
		ctx: ctx, cfg: cfg, ca: ca, url: ts.URL, etcd: etcdSrv, storage: store,
		client: kubernetes.NewForConfigOrDie(cfg), ext: apiextensionsclient.NewForConfigOrDie(cfg), dyn: dynamic.NewForConfigOrDie(cfg),
	}
}

// shortenWatches makes the store's watches end after d to 2d. Called
// before startCluster, it restores the timeout after the test's store
// stopped (cleanups run last first).
func shortenWatches(t testing.TB, d time.Duration) {
	restore := watchTimeout
	t.Cleanup(func() { watchTimeout = restore })
	watchTimeout = d
}

// runStore starts a Store over the cluster (as the admin unless cfg.REST
// says otherwise) and waits until it is ready; it stops when the test
// ends.
func (c *cluster) runStore(t *testing.T, cfg Config) *Store {
	t.Helper()
	if cfg.REST == nil {
		cfg.REST = c.cfg
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case <-s.Ready():
	case <-time.After(deadline):
		t.Fatal("the store did not become ready")
	}
	return s
}

// namespace creates a namespace for the test.
func (c *cluster) namespace(t testing.TB, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := c.client.CoreV1().Namespaces().Create(c.ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

// configMap creates or updates a ConfigMap and returns its
// resourceVersion as a revision.
func (c *cluster) configMap(t *testing.T, namespace, name, value string) int64 {
	t.Helper()
	cms := c.client.CoreV1().ConfigMaps(namespace)
	cm, err := cms.Get(c.ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		cm.Data = map[string]string{"v": value}
		cm, err = cms.Update(c.ctx, cm, metav1.UpdateOptions{})
	default:
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": value}}
		cm, err = cms.Create(c.ctx, cm, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatalf("write configmap %s/%s: %v", namespace, name, err)
	}
	return revisionOf(t, cm.ResourceVersion)
}

func revisionOf(t *testing.T, rv string) int64 {
	t.Helper()
	n, err := parseRevision(rv)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// widgetCRD is a namespaced custom resource of example.com.
func widgetCRD(plural, kind string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + ".example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr(true),
				}},
			}},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// createCRD creates crd and waits until it is Established.
func (c *cluster) createCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, deadline)
	defer cancel()
	if _, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD %s: %v", crd.Name, err)
	}
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		got, err := c.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("CRD %s was not established: %v", crd.Name, err)
	}
}

// etcdKeys reads the keys under prefix straight from etcd, at revision rev
// (0: now), with their mod revisions: what the API server's storage wrote.
func (c *cluster) etcdKeys(t *testing.T, prefix string, rev int64) (map[string]int64, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, deadline)
	defer cancel()
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithKeysOnly()}
	if rev > 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	resp, err := c.etcd.Client().Get(ctx, prefix, opts...)
	if err != nil {
		t.Fatalf("read etcd: %v", err)
	}
	out := map[string]int64{}
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = kv.ModRevision
	}
	return out, resp.Header.Revision
}

// next receives the next event from ch whose key matches, or fails.
func next(t *testing.T, ch <-chan source.Event, match func(source.Event) bool) source.Event {
	t.Helper()
	timeout := time.After(deadline)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatal("the watch closed")
			}
			if match(ev) {
				return ev
			}
		case <-timeout:
			t.Fatal("no matching event arrived")
		}
	}
}

// isErr fails unless errors.Is(err, target).
func isErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}
