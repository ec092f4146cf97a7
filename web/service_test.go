package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/html"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/glassplane/glassplane/web/webtest"
)

// hostileText is markup a label, a name or the proxy's rules may hold.
const hostileText = `<img src=x onerror=alert(1)>`

// serviceAPI is a fake API server answering the Service page's reads:
// one Service, its EndpointSlices, the nodes and one node's proxy rules.
// It answers 403, as kube-apiserver words it, for the resources in
// forbidden.
type serviceAPI struct {
	t         *testing.T
	svc       *corev1.Service
	slices    []discoveryv1.EndpointSlice
	nodes     []corev1.Node
	rules     string
	mu        sync.Mutex // guards forbidden, rulesDown, selectors
	forbidden map[string]bool
	// rulesDown makes the node's rules answer 503, as before its proxy
	// synced.
	rulesDown bool
	// selectors are the label selectors the EndpointSlice lists asked.
	selectors []string
}

func (a *serviceAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	write := func(obj any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(obj)
	}
	forbid := func(resource string) bool {
		if !a.forbidden[resource] {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
			Message: `endpointslices.discovery.k8s.io is forbidden: User "student" cannot list resource "` + resource + `" in API group "discovery.k8s.io" in the namespace "default"`})
		return true
	}
	ns, name := a.svc.Namespace, a.svc.Name
	switch r.URL.Path {
	case "/api/v1/namespaces/" + ns + "/services/" + name:
		write(a.svc)
	case "/apis/discovery.k8s.io/v1/namespaces/" + ns + "/endpointslices":
		a.selectors = append(a.selectors, r.URL.Query().Get("labelSelector"))
		if !forbid("endpointslices") {
			write(discoveryv1.EndpointSliceList{TypeMeta: metav1.TypeMeta{Kind: "EndpointSliceList", APIVersion: "discovery.k8s.io/v1"}, Items: a.slices})
		}
	case "/api/v1/nodes":
		if !forbid("nodes") {
			write(corev1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}, Items: a.nodes})
		}
	case "/api/v1/nodes/vm/proxy/glassplane/proxy-rules":
		if a.rulesDown {
			http.Error(w, "the proxy has not synced yet", http.StatusServiceUnavailable)
			return
		}
		if r.URL.Query().Get("namespace") != ns || r.URL.Query().Get("name") != name {
			http.Error(w, "wrong service", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(a.rules))
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: 404, Reason: metav1.StatusReasonNotFound, Message: "the server could not find the requested resource"})
	}
}

func (a *serviceAPI) forbid(resource string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.forbidden[resource] = true
}

func endpoint(ip, pod, node string, ready bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{
		Addresses: []string{ip}, NodeName: ptr.To(node),
		Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready), Serving: ptr.To(ready), Terminating: ptr.To(false)},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: pod},
	}
}

// newServiceEnv is a dashboard whose Service page reads svc (also stored,
// so the page finds it) from a fake API.
func newServiceEnv(t *testing.T, svc *corev1.Service, slices []discoveryv1.EndpointSlice, nodes ...corev1.Node) (*env, *serviceAPI) {
	t.Helper()
	e := newEnv(t)
	e.put(t, "/registry/services/specs/"+svc.Namespace+"/"+svc.Name, svc)
	a := &serviceAPI{t: t, svc: svc, slices: slices, nodes: nodes, forbidden: map[string]bool{},
		rules: "table ip glassplane-proxy {\n\tchain services {\n\t\tip daddr 10.96.12.3 tcp dport 80 goto svc-web " + hostileText + "\n\t}\n}\n"}
	api := httptest.NewServer(a)
	t.Cleanup(api.Close)
	e.dash.api = func(*http.Request) (kubernetes.Interface, error) {
		return kubernetes.NewForConfig(&rest.Config{Host: api.URL})
	}
	return e, a
}

func webService() *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{Kind: "Service", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-web"},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.12.3", ClusterIPs: []string{"10.96.12.3"},
			Selector:        map[string]string{"app": "web", "tier": hostileText},
			SessionAffinity: corev1.ServiceAffinityNone, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
			Ports: []corev1.ServicePort{
				{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080), NodePort: 30080},
				{Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(53), NodePort: 30053},
			},
		},
	}
}

func webSlices() []discoveryv1.EndpointSlice {
	return []discoveryv1.EndpointSlice{{
		TypeMeta:    metav1.TypeMeta{Kind: "EndpointSlice", APIVersion: "discovery.k8s.io/v1"},
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: "web-abcde", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(8080)), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints: []discoveryv1.Endpoint{
			endpoint("10.88.0.5", "web-1", "vm", true),
			endpoint("10.88.0.6", "web-2"+hostileText, "vm", false),
		},
	}}
}

func runtimeNode(name, runtime string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{runtimeLabel: runtime}}}
}

func TestServicePage(t *testing.T) {
	e, api := newServiceEnv(t, webService(), webSlices(), runtimeNode("sim-1", "simulated"), runtimeNode("vm", "containerd"))
	doc, body := e.get(t, "/objects/services/default/web")
	if strings.Contains(body, hostileText) {
		t.Errorf("the page holds %q unescaped", hostileText)
	}
	if got := api.selectors; len(got) != 1 || got[0] != "kubernetes.io/service-name=web" {
		t.Errorf("EndpointSlices listed with selectors %q, want kubernetes.io/service-name=web", got)
	}
	one := func(id string) string {
		t.Helper()
		n := byTestID(doc, id)
		if len(n) != 1 {
			t.Fatalf("%d elements %q, want 1", len(n), id)
		}
		return text(n[0])
	}
	if got := one("service-type"); got != "NodePort" {
		t.Errorf("type %q", got)
	}
	if got := one("service-cluster-ips"); got != "10.96.12.3" {
		t.Errorf("clusterIPs %q", got)
	}
	if got := one("service-selector"); got != "app=web, tier="+hostileText {
		t.Errorf("selector %q", got)
	}
	var ports []string
	for _, row := range byTestID(doc, "service-port") {
		var cells []string
		for _, td := range findAll(row, func(n *html.Node) bool { return n.Data == "td" }) {
			cells = append(cells, text(td))
		}
		ports = append(ports, strings.Join(cells, "|"))
	}
	if want := []string{"http|80|TCP|8080|30080", "|53|UDP|53|30053"}; !slices.Equal(ports, want) {
		t.Errorf("ports %q, want %q", ports, want)
	}

	eps := byTestID(doc, "endpoint")
	if len(eps) != 2 {
		t.Fatalf("%d endpoints, want 2", len(eps))
	}
	for i, want := range []struct{ pod, ready, href string }{
		{"web-1", "true", "/objects/pods/default/web-1"},
		{"web-2" + hostileText, "false", "/objects/pods/default/web-2%3Cimg%20src=x%20onerror=alert%281%29%3E"},
	} {
		if got := attr(eps[i], "data-pod"); got != want.pod {
			t.Errorf("endpoint %d pod %q, want %q", i, got, want.pod)
		}
		if got := attr(eps[i], "data-ready"); got != want.ready {
			t.Errorf("endpoint %d ready %q, want %q", i, got, want.ready)
		}
		if got := attr(eps[i], "data-node"); got != "vm" {
			t.Errorf("endpoint %d node %q", i, got)
		}
		if link := byTestID(eps[i], "endpoint-pod"); len(link) != 1 || attr(link[0], "href") != want.href {
			t.Errorf("endpoint %d pod link %v, want %s", i, link, want.href)
		}
	}

	names := map[string]string{}
	for _, n := range byTestID(doc, "dns-name") {
		names[attr(n, "data-name")] = attr(n, "data-type")
	}
	for name, typ := range map[string]string{
		"web.default.svc.cluster.local": "A",
		"web.default":                   "A",
		"web":                           "A",
		"_http._tcp.web.default.svc.cluster.local": "SRV",
	} {
		if names[name] != typ {
			t.Errorf("DNS name %s: %q, want %s (all: %v)", name, names[name], typ, names)
		}
	}
	if len(names) != 4 {
		t.Errorf("DNS names %v: an unnamed port has no SRV record", names)
	}

	rules := byTestID(doc, "node-rules")
	if len(rules) != 1 || attr(rules[0], "data-node") != "vm" {
		t.Fatalf("rules of %d nodes, want only the containerd node vm", len(rules))
	}
	if pre := byTestID(rules[0], "rules"); len(pre) != 1 || !strings.Contains(text(pre[0]), "goto svc-web "+hostileText) {
		t.Errorf("rules %q", text(rules[0]))
	}
	if n := byTestID(doc, "service-simulated"); len(n) != 0 {
		t.Error("a cluster with a containerd node says it has only simulated nodes")
	}

	t.Run("part", func(t *testing.T) {
		doc, _ := e.get(t, "/objects/services/default/web?part=service")
		if n := byTestID(doc, "service"); len(n) != 1 || len(byTestID(doc, "endpoint")) != 2 || len(byTestID(doc, "timeline")) != 0 {
			t.Errorf("?part=service is not the Service panel alone")
		}
	})
}

func TestServicePageHeadlessNames(t *testing.T) {
	svc := webService()
	svc.Spec.Type, svc.Spec.ClusterIP, svc.Spec.ClusterIPs = corev1.ServiceTypeClusterIP, corev1.ClusterIPNone, []string{corev1.ClusterIPNone}
	for i := range svc.Spec.Ports {
		svc.Spec.Ports[i].NodePort = 0
	}
	sl := webSlices()
	sl[0].Endpoints[0].Hostname = ptr.To("db-0")
	e, _ := newServiceEnv(t, svc, sl, runtimeNode("sim-1", "simulated"))
	doc, _ := e.get(t, "/objects/services/default/web")
	answers := map[string]string{}
	for _, n := range byTestID(doc, "dns-name") {
		answers[attr(n, "data-name")] = text(n)
	}
	if got := answers["web.default.svc.cluster.local"]; !strings.Contains(got, "10.88.0.5") || strings.Contains(got, "10.88.0.6") {
		t.Errorf("a headless Service's name answers %q, want its ready endpoint 10.88.0.5 only", got)
	}
	if got := answers["db-0.web.default.svc.cluster.local"]; !strings.Contains(got, "10.88.0.5") {
		t.Errorf("the pod with hostname db-0 has name %q (all: %v)", got, answers)
	}
	if n := byTestID(doc, "service-simulated"); len(n) != 1 {
		t.Error("a cluster of simulated nodes does not say traffic flows only on real nodes")
	}
	if n := byTestID(doc, "node-rules"); len(n) != 0 {
		t.Errorf("rules asked of %d simulated nodes", len(n))
	}
}

// TestServicePageReadsAsTheUser checks that what the API refuses the
// page's user is left out with the API's message, the rest still shown.
func TestServicePageReadsAsTheUser(t *testing.T) {
	e, api := newServiceEnv(t, webService(), webSlices(), runtimeNode("vm", "containerd"))
	api.forbid("endpointslices")
	api.forbid("nodes")
	doc, _ := e.get(t, "/objects/services/default/web")
	if n := byTestID(doc, "endpoint"); len(n) != 0 {
		t.Errorf("%d endpoints shown that the user may not list", len(n))
	}
	if n := byTestID(doc, "service-slices-error"); len(n) != 1 || !strings.Contains(text(n[0]), `cannot list resource "endpointslices"`) {
		t.Errorf("no Forbidden for the EndpointSlices: %v", n)
	}
	if n := byTestID(doc, "service-nodes-error"); len(n) != 1 || !strings.Contains(text(n[0]), "forbidden") {
		t.Errorf("no Forbidden for the nodes")
	}
	if n := byTestID(doc, "node-rules"); len(n) != 0 {
		t.Error("rules shown to a user who may not list nodes")
	}
	if got := text(byTestID(doc, "service-type")[0]); got != "NodePort" {
		t.Errorf("the Service itself is not shown: type %q", got)
	}
}

func (a *serviceAPI) setRulesDown(down bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rulesDown = down
}

// TestBrowserServiceRulesComeWhenAvailable opens a Service's page while the
// node's rules are not available: the page says so, then shows them once
// the node answers, with nothing about the Service changing meanwhile.
func TestBrowserServiceRulesComeWhenAvailable(t *testing.T) {
	e, api := newServiceEnv(t, webService(), webSlices(), runtimeNode("vm", "containerd"))
	api.setRulesDown(true)
	ctx := webtest.Browser(t)
	webtest.Navigate(t, ctx, e.srv.URL+"/objects/services/default/web")
	webtest.WaitSelector(t, ctx, webtest.TestID("rules-unavailable"))
	if got := webtest.Eval[string](t, ctx, `document.querySelector('[data-testid="rules-unavailable"]').textContent`); !strings.Contains(got, "rules not available:") {
		t.Errorf("unavailable rules say %q", got)
	}
	api.setRulesDown(false)
	webtest.WaitFor(t, ctx, `document.querySelector('[data-testid="rules"]')?.textContent.includes("goto svc-web")`)
	if n := webtest.Eval[int](t, ctx, `document.querySelectorAll("img").length`); n != 0 {
		t.Errorf("%d <img> elements from the rules' text", n)
	}
}
