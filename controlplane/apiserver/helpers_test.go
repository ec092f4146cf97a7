package apiserver_test

import (
	"context"
	"crypto/tls"
	"fmt"
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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/glassplane/glassplane/controlplane/apiserver"
	"github.com/glassplane/glassplane/controlplane/apiserver/audit"
	"github.com/glassplane/glassplane/controlplane/etcd"
	"github.com/glassplane/glassplane/controlplane/etcd/etcdtest"
	"github.com/glassplane/glassplane/controlplane/pki"
	"github.com/glassplane/glassplane/controlplane/storage"
)

// testEnv is a real API server over a real embedded etcd, served over TLS
// with client certificates from a test CA.
type testEnv struct {
	etcd   *etcd.Server
	store  *storage.Store
	audit  *audit.Ring
	server *apiserver.Server
	ca     *pki.CA
	url    string
	config *rest.Config
	client kubernetes.Interface
	// http is an HTTP client with the admin's client certificate.
	http *http.Client
}

// shared is the environment most tests use; each test works in its own
// namespace.
var shared *testEnv

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "apiserver-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	env, stop, err := startEnv(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	shared = env
	code := m.Run()
	stop()
	os.RemoveAll(dir)
	if rbacDir != "" {
		os.RemoveAll(rbacDir)
	}
	os.Exit(code)
}

// newEnv starts a private environment for tests that disturb the store.
func newEnv(t *testing.T) *testEnv {
	t.Helper()
	env, stop, err := startEnv(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return env
}

// newEnvWith is newEnv with the server's configuration changed by edit.
func newEnvWith(t *testing.T, edit func(*apiserver.Config)) *testEnv {
	t.Helper()
	env, stop, err := startEnv(t.TempDir(), edit)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return env
}

func startEnv(dir string, edits ...func(*apiserver.Config)) (*testEnv, func(), error) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	etcdSrv, err := etcdtest.StartOnFreePorts(ctx, etcd.Config{DataDir: dir, Logger: log})
	if err != nil {
		cancel()
		return nil, nil, err
	}
	store := storage.New(etcdSrv.Client(), storage.Config{CompactionInterval: -1, Logger: log})
	done := make(chan struct{})
	go func() { defer close(done); store.Run(ctx) }()
	<-store.Ready()

	ca, err := pki.LoadOrCreateCA(dir)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	ring := audit.NewRing(0)
	srvCfg := apiserver.Config{Store: store, Audit: ring, ClientCA: ca.Pool(), Logger: log, AdvertiseAddress: "127.0.0.1", NoDynamicAdmission: true}
	for _, edit := range edits {
		edit(&srvCfg)
	}
	srv, err := apiserver.New(srvCfg)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	if err := srv.Bootstrap(ctx); err != nil {
		cancel()
		return nil, nil, err
	}
	// The caches the server keeps from the storage watch, as in production.
	go srv.Run(ctx)
	e := echo.New()
	srv.Register(e)
	serving, err := ca.Serving()
	if err != nil {
		cancel()
		return nil, nil, err
	}
	ts := httptest.NewUnstartedServer(e)
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{serving}, ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: ca.Pool()}
	ts.Config.ErrorLog = stdlog.New(io.Discard, "", 0)
	ts.EnableHTTP2 = true
	ts.StartTLS()

	cfg, err := ca.RESTConfig(ts.URL, pki.AdminUser, pki.AdminGroup)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	env := &testEnv{etcd: etcdSrv, store: store, audit: ring, server: srv, ca: ca, url: ts.URL, config: cfg, client: client, http: httpClient}
	stop := func() {
		ts.CloseClientConnections()
		ts.Close()
		cancel()
		<-done
		etcdSrv.Close()
	}
	return env, stop, nil
}

// namespace creates a namespace for one test.
func (env *testEnv) namespace(t *testing.T) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.Trim(name, "-")
	_, err := env.client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("failed to create namespace %q: %v", name, err)
	}
	return name
}

// do sends a raw request with the admin's certificate.
func (env *testEnv) do(t *testing.T, method, path, contentType string, body io.Reader) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, env.url+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := env.http.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func testPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
