package web

import (
	"context"
	"crypto/tls"
	"io"
	stdlog "log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v5"
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
	"github.com/glassplane/glassplane/web/source/storesource"
)

// apiEnv is a dashboard in front of a real API server (over TLS, with
// client certificates from a test CA) on a real embedded etcd, acting as
// the cluster admin, with the one-time admin login link enabled.
type apiEnv struct {
	*env
	cfg      *rest.Config
	client   kubernetes.Interface
	ext      apiextensionsclient.Interface
	dyn      dynamic.Interface
	linkFile string
}

func newAPIEnv(t *testing.T) *apiEnv {
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
	ring := audit.NewRing(0)
	srv, err := apiserver.New(apiserver.Config{Store: store, Audit: ring, ClientCA: ca.Pool(), Logger: log, AdvertiseAddress: "127.0.0.1", NoDynamicAdmission: true})
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
	// Admission webhooks and policies, read through the API as upstream's
	// plugins read them.
	go srv.RunDynamicAdmission(ctx, cfg)

	linkFile := dir + "/dashboard-login"
	app := echo.New()
	web := httptest.NewUnstartedServer(app)
	web.Start()
	dashAudit := &testAudit{log: source.NewAuditLog(0)}
	go storesource.FeedAudit(ctx, ring, dashAudit.log)
	dcfg := storeSources(store, dashAudit.log)
	dcfg.Mode, dcfg.RESTConfig, dcfg.Logger = "simulated", cfg, log
	dcfg.LinkUser, dcfg.LinkGroups, dcfg.LinkFile, dcfg.URL = pki.AdminUser, []string{pki.AdminGroup, "system:authenticated"}, linkFile, web.URL
	dash, err := New(dcfg)
	if err != nil {
		t.Fatal(err)
	}
	dash.Register(app)
	dashDone := make(chan struct{})
	go func() { defer close(dashDone); dash.Run(ctx) }()
	t.Cleanup(func() {
		// The clients go first (the dashboard's, the admission plugins'
		// informers), so that no watch reconnects while the servers
		// close: Close waits for every open request.
		cancel()
		web.Close()
		ts.CloseClientConnections()
		ts.Close()
		<-dashDone
		<-storeDone
		etcdSrv.Close()
	})
	select {
	case <-dash.hub.ready:
	case <-time.After(deadline):
		t.Fatal("the dashboard hub did not start")
	}
	// The kind table is the process's: until this dashboard has read
	// its API's resources, pages do not know them.
	select {
	case <-dash.kindsKnown:
	case <-time.After(deadline):
		t.Fatal("the dashboard did not read the API's resources")
	}
	e := &apiEnv{
		env: &env{ctx: ctx, store: store, ring: dashAudit, dash: dash, srv: web}, cfg: cfg, linkFile: linkFile,
		client: kubernetes.NewForConfigOrDie(cfg), ext: apiextensionsclient.NewForConfigOrDie(cfg), dyn: dynamic.NewForConfigOrDie(cfg),
	}
	return e
}

// login opens the one-time admin link in b, which then acts as the
// cluster admin.
func (e *apiEnv) login(t *testing.T, b *browser) {
	t.Helper()
	link, err := os.ReadFile(e.linkFile)
	if err != nil {
		t.Fatal(err)
	}
	resp, body := b.do(http.MethodGet, strings.TrimPrefix(strings.TrimSpace(string(link)), e.srv.URL), nil)
	if resp.StatusCode >= 400 {
		t.Fatalf("the login link answered %d: %s", resp.StatusCode, body)
	}
}

// createCRD creates crd through the API and waits until it is
// Established and the dashboard's kinds know its kind.
func (e *apiEnv) createCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, deadline)
	defer cancel()
	if _, err := e.ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD %s: %v", crd.Name, err)
	}
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		got, err := e.ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil || !crdCondition(got, apiextensionsv1.Established) {
			return false, nil
		}
		k, ok := kinds.byKind(crd.Spec.Names.Kind)
		return ok && k.Custom && k.Group == crd.Spec.Group, nil
	})
	if err != nil {
		t.Fatalf("CRD %s was not established and known to the dashboard: %v", crd.Name, err)
	}
}
