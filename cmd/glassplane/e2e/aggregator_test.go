package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/pki"
)

// wardleServer is an extension API server written for the tests, serving
// group wardle.glassplane.test/v1alpha1 with one resource, flunders, over
// HTTPS on 127.0.0.1. It authenticates as an extension API server must:
// the X-Remote-* headers count only from a client certificate that the
// front-proxy CA of kube-system/extension-apiserver-authentication signed,
// with an allowed common name. Each flunder it lists names the user it
// was asked for.
type wardleServer struct {
	addr   string
	caPEM  []byte
	srv    *http.Server
	mu     sync.Mutex
	seen   []wardleRequest
	config map[string]string
}

// wardleRequest is what the server saw of one request.
type wardleRequest struct {
	path, user, proxyCN string
	groups              []string
	authorization       bool
}

const wardleGroup = "wardle.glassplane.test"

func startWardleServer(t *testing.T, namespace, service string, authConfig map[string]string) *wardleServer {
	t.Helper()
	// The aggregator checks the name <service>.<namespace>.svc, as
	// kube-apiserver does, whatever address it reached.
	ca, err := pki.LoadOrCreateCAIn(t.TempDir(), "wardle-test-ca")
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.Serving(service + "." + namespace + ".svc")
	if err != nil {
		t.Fatal(err)
	}
	frontProxy := x509.NewCertPool()
	if !frontProxy.AppendCertsFromPEM([]byte(authConfig["requestheader-client-ca-file"])) {
		t.Fatalf("requestheader-client-ca-file holds no certificate: %q", authConfig["requestheader-client-ca-file"])
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := &wardleServer{addr: ln.Addr().String(), caPEM: ca.CertPEM, config: authConfig}
	w.srv = &http.Server{
		Handler: http.HandlerFunc(w.serve),
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{serving},
			ClientAuth:   tls.VerifyClientCertIfGiven, ClientCAs: frontProxy,
		},
	}
	go w.srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { w.srv.Close() })
	return w
}

func (w *wardleServer) port() int32 {
	_, p, _ := net.SplitHostPort(w.addr)
	var n int32
	fmt.Sscan(p, &n)
	return n
}

// headerList reads one of the ConfigMap's JSON lists of header names.
func (w *wardleServer) headerList(key string) []string {
	var names []string
	json.Unmarshal([]byte(w.config[key]), &names)
	return names
}

func (w *wardleServer) serve(rw http.ResponseWriter, r *http.Request) {
	seen := wardleRequest{path: r.URL.Path, authorization: r.Header.Get("Authorization") != ""}
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		seen.proxyCN = r.TLS.PeerCertificates[0].Subject.CommonName
	}
	allowed := w.headerList("requestheader-allowed-names")
	if seen.proxyCN != "" && (len(allowed) == 0 || slices.Contains(allowed, seen.proxyCN)) {
		for _, h := range w.headerList("requestheader-username-headers") {
			if v := r.Header.Get(h); v != "" {
				seen.user = v
				break
			}
		}
		for _, h := range w.headerList("requestheader-group-headers") {
			seen.groups = append(seen.groups, r.Header.Values(h)...)
		}
	}
	w.mu.Lock()
	w.seen = append(w.seen, seen)
	w.mu.Unlock()
	if seen.user == "" {
		writeJSONResponse(rw, http.StatusUnauthorized, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure", Code: 401, Reason: metav1.StatusReasonUnauthorized, Message: "Unauthorized"})
		return
	}
	gv := wardleGroup + "/v1alpha1"
	flunders := metav1.APIResource{Name: "flunders", SingularName: "flunder", Namespaced: true, Kind: "Flunder", Verbs: metav1.Verbs{"get", "list"}}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.URL.Path == "/apis":
		// A server of the legacy discovery only: the aggregator falls
		// back to the group version's resource list.
		writeJSONResponse(rw, http.StatusOK, metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{{
			Name: wardleGroup, Versions: []metav1.GroupVersionForDiscovery{{GroupVersion: gv, Version: "v1alpha1"}},
			PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: gv, Version: "v1alpha1"},
		}}})
	case r.URL.Path == "/apis/"+gv:
		writeJSONResponse(rw, http.StatusOK, metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv, APIResources: []metav1.APIResource{flunders}})
	case len(parts) == 6 && parts[3] == "namespaces" && parts[5] == "flunders":
		item := map[string]any{
			"apiVersion": gv, "kind": "Flunder",
			"metadata": map[string]any{
				"name": "asked-by", "namespace": parts[4], "creationTimestamp": "2026-01-01T00:00:00Z",
				"annotations": map[string]string{"wardle.glassplane.test/user": seen.user, "wardle.glassplane.test/groups": strings.Join(seen.groups, ",")},
			},
		}
		writeJSONResponse(rw, http.StatusOK, map[string]any{"apiVersion": gv, "kind": "FlunderList", "metadata": map[string]any{"resourceVersion": "1"}, "items": []any{item}})
	default:
		writeJSONResponse(rw, http.StatusNotFound, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure", Code: 404, Reason: metav1.StatusReasonNotFound, Message: "the server could not find the requested resource"})
	}
}

func writeJSONResponse(rw http.ResponseWriter, code int, v any) {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(code)
	json.NewEncoder(rw).Encode(v)
}

// requests returns what the server saw on path.
func (w *wardleServer) requests(path string) []wardleRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []wardleRequest
	for _, s := range w.seen {
		if s.path == path {
			out = append(out, s)
		}
	}
	return out
}

// TestAggregatedAPIServer registers an extension API server with an
// APIService and reaches it through Glassplane's API server with real
// kubectl: kube-aggregator's availability controller marks it available,
// its group shows in discovery, requests reach it as the authenticated (or
// impersonated) user in the X-Remote-* headers of the front-proxy client
// certificate and never with the client's own credentials, RBAC is decided
// before the proxy, an unreachable server is 503, and deleting the
// APIService removes the group.
func TestAggregatedAPIServer(t *testing.T) {
	c := SharedCluster(t)
	ctx := context.Background()
	const ns, svc = "aggregator-e2e", "wardle-api"
	apiService := "v1alpha1." + wardleGroup

	cm, err := c.Client.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("kube-system/extension-apiserver-authentication: %v", err)
	}
	if got := cm.Data["requestheader-allowed-names"]; got != `["front-proxy-client"]` {
		t.Errorf("requestheader-allowed-names = %q, want [\"front-proxy-client\"]", got)
	}
	if !strings.Contains(cm.Data["client-ca-file"], "BEGIN CERTIFICATE") || cm.Data["client-ca-file"] == cm.Data["requestheader-client-ca-file"] {
		t.Errorf("client-ca-file should be the cluster CA, apart from the front-proxy CA:\n%s", cm.Data["client-ca-file"])
	}
	w := startWardleServer(t, ns, svc, cm.Data)

	c.MustKubectl(t, "", "create", "namespace", ns)
	t.Cleanup(func() {
		c.Kubectl(t, "", "delete", "apiservice", apiService, "--ignore-not-found")
		c.Kubectl(t, "", "delete", "clusterrole,clusterrolebinding", "-l", "e2e=aggregator", "--ignore-not-found")
		c.Kubectl(t, "", "delete", "namespace", ns, "--wait=false")
	})
	c.MustKubectl(t, fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: %[1]s, namespace: %[2]s}
spec: {type: ExternalName, externalName: localhost}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: %[3]s}
spec:
  group: %[4]s
  version: v1alpha1
  service: {name: %[1]s, namespace: %[2]s, port: %[5]d}
  caBundle: %[6]s
  groupPriorityMinimum: 2000
  versionPriority: 200
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: e2e-flunder-reader, labels: {e2e: aggregator}}
rules:
- {apiGroups: [%[4]s], resources: [flunders], verbs: [get, list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: e2e-flunder-reader, labels: {e2e: aggregator}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: e2e-flunder-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: flunder-reader}
`, svc, ns, apiService, wardleGroup, w.port(), base64.StdEncoding.EncodeToString(w.caPEM)), "apply", "-f", "-")

	// kube-aggregator's availability controller probes the server's
	// discovery endpoint as system:kube-aggregator.
	Eventually(t, time.Minute, "the APIService to become available", func() error {
		out, err := c.Kubectl(t, "", "get", "apiservice", apiService, "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status} {.status.conditions[?(@.type=="Available")].message}`)
		if err != nil || out != "True all checks passed" {
			return fmt.Errorf("%v: %q", err, out)
		}
		return nil
	})
	probes := w.requests("/apis/" + wardleGroup + "/v1alpha1")
	if len(probes) == 0 || probes[0].user != "system:kube-aggregator" || probes[0].proxyCN != "front-proxy-client" {
		t.Errorf("the availability probe = %+v, want user system:kube-aggregator through front-proxy-client", probes)
	}

	// kubectl finds flunders through discovery, and its request reaches
	// the server as the admin it authenticated.
	Eventually(t, time.Minute, "flunders in discovery", func() error {
		out, err := c.Kubectl(t, "", "api-resources", "--api-group="+wardleGroup, "--no-headers")
		if err != nil || !strings.Contains(out, "flunders") {
			return fmt.Errorf("%v: %q", err, out)
		}
		return nil
	})
	out := c.MustKubectl(t, "", "get", "flunders", "-n", ns, "-o", `jsonpath={.items[0].metadata.annotations.wardle\.glassplane\.test/user} {.items[0].metadata.annotations.wardle\.glassplane\.test/groups}`)
	user, groups, _ := strings.Cut(out, " ")
	if user != "glassplane-admin" || !strings.Contains(groups, "system:masters") || !strings.Contains(groups, "system:authenticated") {
		t.Errorf("the server was asked by %q in %q, want glassplane-admin in system:masters and system:authenticated", user, groups)
	}
	listPath := "/apis/" + wardleGroup + "/v1alpha1/namespaces/" + ns + "/flunders"
	for _, r := range w.requests(listPath) {
		if r.authorization || r.proxyCN != "front-proxy-client" {
			t.Errorf("a proxied request reached the server with Authorization=%v through %q: the client's credentials must stay at the API server", r.authorization, r.proxyCN)
		}
	}

	// Impersonation is resolved before the proxy: the server sees the
	// impersonated user, who RBAC allowed.
	out = c.MustKubectl(t, "", "get", "flunders", "-n", ns, "--as=flunder-reader", "-o", `jsonpath={.items[0].metadata.annotations.wardle\.glassplane\.test/user}`)
	if out != "flunder-reader" {
		t.Errorf("impersonated as flunder-reader, the server saw %q", out)
	}
	// A user RBAC does not allow is refused by the API server: the
	// request never reaches the extension server.
	before := len(w.requests(listPath))
	out, err = c.Kubectl(t, "", "get", "flunders", "-n", ns, "--as=nobody-in-particular")
	if err == nil || !strings.Contains(out, `flunders.wardle.glassplane.test is forbidden: User "nobody-in-particular" cannot list resource "flunders" in API group "wardle.glassplane.test"`) {
		t.Errorf("an unauthorized list = %v: %s", err, out)
	}
	if after := len(w.requests(listPath)); after != before {
		t.Errorf("a forbidden request reached the extension server (%d requests, was %d)", after, before)
	}

	// An extension server that stops answering: the controller marks the
	// APIService unavailable, and its requests are 503.
	w.srv.Close()
	Eventually(t, 2*time.Minute, "the APIService to become unavailable", func() error {
		out, err := c.Kubectl(t, "", "get", "apiservice", apiService, "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status} {.status.conditions[?(@.type=="Available")].reason}`)
		if err != nil || out != "False FailedDiscoveryCheck" {
			return fmt.Errorf("%v: %q", err, out)
		}
		return nil
	})
	var status metav1.Status
	raw, err := c.Client.CoreV1().RESTClient().Get().AbsPath(listPath).DoRaw(ctx)
	if err == nil || json.Unmarshal(raw, &status) != nil || status.Code != http.StatusServiceUnavailable {
		t.Errorf("a request to an unavailable APIService = %v: %s, want a 503 Status", err, raw)
	}

	// A caBundle that holds no certificate is bad input of the
	// APIService: its requests are refused with a 503 Status, never a 500.
	c.MustKubectl(t, "", "patch", "apiservice", apiService, "--type=merge", "-p", `{"spec":{"caBundle":"bm90IGEgY2VydGlmaWNhdGU="}}`)
	Eventually(t, 30*time.Second, "the bad caBundle to be refused with 503", func() error {
		raw, err := c.Client.CoreV1().RESTClient().Get().AbsPath(listPath).DoRaw(ctx)
		var status metav1.Status
		if err == nil || json.Unmarshal(raw, &status) != nil || status.Code != http.StatusServiceUnavailable {
			return fmt.Errorf("%v: %s", err, raw)
		}
		return nil
	})

	// Deleting the APIService takes the group out of discovery.
	c.MustKubectl(t, "", "delete", "apiservice", apiService)
	Eventually(t, 30*time.Second, "the group to leave discovery", func() error {
		out, err := c.Kubectl(t, "", "get", "--raw", "/apis")
		if err != nil || strings.Contains(out, wardleGroup) {
			return fmt.Errorf("%v: %s", err, tail(out, 5))
		}
		return nil
	})
}
