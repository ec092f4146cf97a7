package apiserver_test

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/ptr"

	"github.com/glassplane/glassplane/controlplane/apiserver"
	"github.com/glassplane/glassplane/controlplane/pki"
)

// TestAggregationProxy runs the aggregation layer against an extension
// API server that serves aggregated discovery (v2) and watches: the group's
// resources come into /apis from its document, a watch is streamed through
// event by event, the user's extras reach it as X-Remote-Extra-* headers
// through the front-proxy certificate, and the ConfigMap of
// kube-system/extension-apiserver-authentication is brought back when
// edited.
func TestAggregationProxy(t *testing.T) {
	dir := t.TempDir()
	frontProxy, err := pki.LoadOrCreateCAIn(dir, "front-proxy-ca")
	if err != nil {
		t.Fatal(err)
	}
	proxyCert, proxyKey, err := frontProxy.Client("front-proxy-client")
	if err != nil {
		t.Fatal(err)
	}
	agg := &apiserver.Aggregation{
		ClientCA: []byte("-----BEGIN CERTIFICATE-----\nclient CA\n-----END CERTIFICATE-----\n"), RequestHeaderCA: frontProxy.CertPEM,
		RequestHeaderAllowedNames: []string{"front-proxy-client"}, ProxyClientCert: proxyCert, ProxyClientKey: proxyKey,
	}
	env := newEnvWith(t, func(c *apiserver.Config) { c.Aggregation = agg })
	ctx := ctxT(t)
	go env.server.RunAggregator(ctx, env.config)

	// The extension server, its serving certificate from a CA of its own
	// for the Service's name.
	serverCA, err := pki.LoadOrCreateCAIn(t.TempDir(), "ext-ca")
	if err != nil {
		t.Fatal(err)
	}
	serving, err := serverCA.Serving("ext.default.svc")
	if err != nil {
		t.Fatal(err)
	}
	// The watch request's headers; the aggregator's own availability and
	// discovery probes reach the server too, at any moment, so only the
	// watch is kept.
	var mu sync.Mutex
	var watchHeaders http.Header
	events := make(chan string)
	ext := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.VerifiedChains) == 0 || r.TLS.PeerCertificates[0].Subject.CommonName != "front-proxy-client" || r.Header.Get("X-Remote-User") == "" {
			http.Error(w, "unauthenticated", http.StatusUnauthorized)
			return
		}
		switch {
		case r.URL.Path == "/apis" && strings.Contains(r.Header.Get("Accept"), "g=apidiscovery.k8s.io"):
			w.Header().Set("Content-Type", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
			json.NewEncoder(w).Encode(apidiscoveryv2.APIGroupDiscoveryList{Items: []apidiscoveryv2.APIGroupDiscovery{{
				ObjectMeta: metav1.ObjectMeta{Name: "ext.glassplane.test"},
				Versions: []apidiscoveryv2.APIVersionDiscovery{{Version: "v1", Resources: []apidiscoveryv2.APIResourceDiscovery{{
					Resource: "gizmos", Scope: apidiscoveryv2.ScopeNamespace, Verbs: []string{"list", "watch"},
					ResponseKind: &metav1.GroupVersionKind{Group: "ext.glassplane.test", Version: "v1", Kind: "Gizmo"},
				}}}},
			}}})
		case r.URL.Path == "/apis/ext.glassplane.test/v1":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"ext.glassplane.test/v1","resources":[{"name":"gizmos","namespaced":true,"kind":"Gizmo","verbs":["list","watch"]}]}`)
		case strings.HasSuffix(r.URL.Path, "/gizmos") && r.URL.Query().Get("watch") == "true":
			mu.Lock()
			watchHeaders = r.Header.Clone()
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			for name := range events {
				fmt.Fprintf(w, `{"type":"ADDED","object":{"apiVersion":"ext.glassplane.test/v1","kind":"Gizmo","metadata":{"name":%q,"namespace":"default","resourceVersion":"1"}}}`+"\n", name)
				w.(http.Flusher).Flush()
			}
		default:
			http.NotFound(w, r)
		}
	}))
	pool := x509.NewCertPool()
	pool.AddCert(frontProxy.Cert)
	ext.TLS = &tls.Config{Certificates: []tls.Certificate{serving}, ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: pool}
	ext.StartTLS()
	t.Cleanup(ext.Close)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(ext.URL, "https://"))
	p, _ := strconv.Atoi(port)

	if _, err := env.client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "ext"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	as := &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1.ext.glassplane.test"},
		Spec: apiregistrationv1.APIServiceSpec{
			Group: "ext.glassplane.test", Version: "v1", GroupPriorityMinimum: 1000, VersionPriority: 15,
			Service:  &apiregistrationv1.ServiceReference{Namespace: "default", Name: "ext", Port: ptr.To(int32(p))},
			CABundle: serverCA.CertPEM,
		},
	}
	obj, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(as)
	dyn, err := dynamic.NewForConfig(env.config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(apiServicesGVR).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The resources come from the server's aggregated discovery.
	eventually(t, "gizmos in aggregated discovery", func() bool {
		resources, err := env.client.Discovery().ServerResourcesForGroupVersion("ext.glassplane.test/v1")
		if err != nil || len(resources.APIResources) != 1 {
			return false
		}
		_, lists, err := env.client.Discovery().ServerGroupsAndResources()
		if err != nil {
			return false
		}
		for _, l := range lists {
			if l.GroupVersion == "ext.glassplane.test/v1" && len(l.APIResources) == 1 && l.APIResources[0].Name == "gizmos" {
				return true
			}
		}
		return false
	})

	// A watch through the proxy, impersonating a user with an extra: each
	// event arrives while the stream stays open.
	cfg := rest.CopyConfig(env.config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "watcher", Groups: []string{"system:masters"}, Extra: map[string][]string{"scopes": {"read", "write"}}}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(env.url + "/apis/ext.glassplane.test/v1/namespaces/default/gizmos?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("watch through the proxy: %s", resp.Status)
	}
	lines := bufio.NewScanner(resp.Body)
	for _, name := range []string{"first", "second"} {
		select {
		case events <- name:
		case <-time.After(10 * time.Second):
			t.Fatal("the extension server's watch was not reached")
		}
		if !lines.Scan() || !strings.Contains(lines.Text(), `"name":"`+name+`"`) {
			t.Fatalf("watch event %q through the proxy: %q %v", name, lines.Text(), lines.Err())
		}
	}
	close(events)
	mu.Lock()
	last := watchHeaders
	mu.Unlock()
	if last.Get("X-Remote-User") != "watcher" || strings.Join(last.Values("X-Remote-Extra-Scopes"), ",") != "read,write" || last.Get("Impersonate-User") != "" || last.Get("Authorization") != "" {
		t.Errorf("the proxied watch's headers: user %q extra %q impersonate %q authorization %q",
			last.Get("X-Remote-User"), last.Values("X-Remote-Extra-Scopes"), last.Get("Impersonate-User"), last.Get("Authorization"))
	}

	// The ConfigMap extension servers read is the API server's, and a
	// restart brings it back when someone changed it.
	cm, err := env.client.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["requestheader-client-ca-file"] != string(frontProxy.CertPEM) || cm.Data["requestheader-username-headers"] != `["X-Remote-User"]` ||
		cm.Data["requestheader-extra-headers-prefix"] != `["X-Remote-Extra-"]` || cm.Data["client-ca-file"] != string(agg.ClientCA) {
		t.Errorf("extension-apiserver-authentication = %v", cm.Data)
	}
	cm.Data["requestheader-allowed-names"] = `["anyone"]`
	if _, err := env.client.CoreV1().ConfigMaps("kube-system").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := env.server.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	cm, err = env.client.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
	if err != nil || cm.Data["requestheader-allowed-names"] != `["front-proxy-client"]` {
		t.Errorf("after a restart, requestheader-allowed-names = %q (%v)", cm.Data["requestheader-allowed-names"], err)
	}
}
