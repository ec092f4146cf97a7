package apiserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilproxy "k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/apiserver/pkg/endpoints"
	apiserverproxy "k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/transport"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationv1helper "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	aggregatorinformers "k8s.io/kube-aggregator/pkg/client/informers/externalversions"
	availabilitymetrics "k8s.io/kube-aggregator/pkg/controllers/status/metrics"
	"k8s.io/kube-aggregator/pkg/controllers/status/remote"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/glassplane/glassplane/controlplane/apiserver/auth/rbac"
)

// Aggregation is what the API server needs to proxy to extension API
// servers (APIServices that name a Service), as kube-apiserver's
// aggregation layer does, and what it publishes for them in the
// kube-system/extension-apiserver-authentication ConfigMap.
type Aggregation struct {
	// ClientCA is the PEM of the CA that signs client certificates
	// (client-ca-file): extension API servers authenticate clients that
	// reach them directly by it.
	ClientCA []byte
	// RequestHeaderCA is the PEM of the front-proxy CA
	// (requestheader-client-ca-file): extension API servers believe the
	// X-Remote-* headers only of a client certificate it signed.
	RequestHeaderCA []byte
	// RequestHeaderAllowedNames are the common names that client
	// certificate may have (requestheader-allowed-names).
	RequestHeaderAllowedNames []string
	// ProxyClientCert and ProxyClientKey are the PEM certificate (signed
	// by RequestHeaderCA) and key the API server proxies with.
	ProxyClientCert, ProxyClientKey []byte
}

// The request headers the proxy names the user with, kube-apiserver's
// --requestheader-* defaults (kubeadm's flags).
var (
	requestHeaderUsername    = []string{"X-Remote-User"}
	requestHeaderUID         = []string{"X-Remote-Uid"}
	requestHeaderGroup       = []string{"X-Remote-Group"}
	requestHeaderExtraPrefix = []string{"X-Remote-Extra-"}
)

// remoteDiscoveryTimeout bounds one fetch of an extension API server's
// discovery document, as kube-aggregator's discovery manager does.
const remoteDiscoveryTimeout = 5 * time.Second

// aggregator proxies the group versions of APIServices backed by a Service
// to one of that Service's ready endpoints (kube-apiserver with
// --enable-aggregator-routing: the API server needs no route to cluster
// IPs; an ExternalName Service to its name, as without that flag) and
// merges them into discovery. Only APIServices it has seen
// through the API are routed: until RunAggregator's informer has synced,
// nothing is.
type aggregator struct {
	cfg *Aggregation
	// routes maps a group version to its APIService's proxy target.
	routes atomic.Pointer[map[schema.GroupVersion]*proxyTarget]
	// resolve finds a Service's endpoint; set by RunAggregator.
	resolve func(namespace, name string, port int32) (*url.URL, error)

	mu sync.Mutex
	// apiServices are the APIServices that name a Service, by name.
	apiServices map[string]*apiregistrationv1.APIService
	// discovered is each APIService's resources as its server last
	// described them (aggregated discovery v2), by APIService name.
	discovered map[string]*apidiscoveryv2.APIVersionDiscovery
	// fetching are the APIServices whose discovery is being fetched.
	fetching map[string]bool
}

// proxyTarget is one APIService's route: its Service and the transport
// that carries the API server's front-proxy client certificate and trusts
// the APIService's caBundle.
type proxyTarget struct {
	name               string
	namespace, service string
	port               int32
	available          bool
	transport          http.RoundTripper
	transportErr       error
}

func newAggregator(cfg *Aggregation) *aggregator {
	a := &aggregator{
		cfg:         cfg,
		apiServices: map[string]*apiregistrationv1.APIService{},
		discovered:  map[string]*apidiscoveryv2.APIVersionDiscovery{},
		fetching:    map[string]bool{},
	}
	a.routes.Store(&map[schema.GroupVersion]*proxyTarget{})
	return a
}

// route returns the proxy target of an /apis/<group>/<version>/... path,
// or nil when the path is the API server's own.
func (a *aggregator) route(path string) *proxyTarget {
	if a == nil || !strings.HasPrefix(path, "/apis/") {
		return nil
	}
	parts := splitPath(path)
	if len(parts) < 3 {
		return nil
	}
	return (*a.routes.Load())[schema.GroupVersion{Group: parts[1], Version: parts[2]}]
}

// RunAggregator runs the aggregation layer until ctx ends: it follows the
// APIServices, Services and EndpointSlices through cfg (the API server's
// loopback client configuration, as kube-aggregator reads them), routes the
// APIServices that name a Service, and runs kube-aggregator's own
// availability controller, which probes each one's discovery endpoint and
// writes its Available condition. Without Config.Aggregation it returns at
// once.
func (s *Server) RunAggregator(ctx context.Context, cfg *rest.Config) error {
	a := s.agg
	if a == nil {
		return nil
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	agg, err := aggregatorclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	coreInformers := informers.NewSharedInformerFactory(kube, 0)
	services := coreInformers.Core().V1().Services()
	endpointSlices := coreInformers.Discovery().V1().EndpointSlices()
	sliceGetter, err := apiserverproxy.NewEndpointSliceIndexerGetter(endpointSlices)
	if err != nil {
		return err
	}
	serviceLister := services.Lister()
	a.resolve = func(namespace, name string, port int32) (*url.URL, error) {
		// An ExternalName Service is its name, as kube-apiserver's
		// cluster routing resolves it (endpoint routing refuses one).
		if svc, err := serviceLister.Services(namespace).Get(name); err == nil && svc.Spec.Type == corev1.ServiceTypeExternalName {
			return apiserverproxy.ResolveCluster(serviceLister, namespace, name, port)
		}
		return apiserverproxy.ResolveEndpoint(serviceLister, sliceGetter, namespace, name, port)
	}
	// A resync period, as kube-apiserver gives the aggregator's informers:
	// without one, the handlers' 30 s resync below never runs.
	aggInformers := aggregatorinformers.NewSharedInformerFactory(agg, 5*time.Minute)
	apiServices := aggInformers.Apiregistration().V1().APIServices()
	certKey := func() ([]byte, []byte) { return a.cfg.ProxyClientCert, a.cfg.ProxyClientKey }
	available, err := remote.New(apiServices, services, endpointSlices, agg.ApiregistrationV1(), nil, certKey, resolverFunc(a.resolve), availabilitymetrics.New())
	if err != nil {
		return err
	}
	// The resync re-reads every remote APIService's discovery document
	// every 30 s, as the availability controller re-probes it.
	if _, err := apiServices.Informer().AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { a.update(obj.(*apiregistrationv1.APIService)) },
		UpdateFunc: func(_, obj any) { a.update(obj.(*apiregistrationv1.APIService)) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if as, ok := obj.(*apiregistrationv1.APIService); ok {
				a.remove(as.Name)
			}
		},
	}, 30*time.Second); err != nil {
		return err
	}
	coreInformers.Start(ctx.Done())
	aggInformers.Start(ctx.Done())
	defer coreInformers.Shutdown()
	defer aggInformers.Shutdown()
	go available.Run(5, ctx.Done())
	<-ctx.Done()
	return nil
}

// resolverFunc is a ServiceResolver of a function.
type resolverFunc func(namespace, name string, port int32) (*url.URL, error)

func (f resolverFunc) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	return f(namespace, name, port)
}

// update routes as (or stops routing it when it no longer names a
// Service) and, when it is available, fetches its discovery document.
func (a *aggregator) update(as *apiregistrationv1.APIService) {
	if as.Spec.Service == nil {
		a.remove(as.Name)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if old := a.apiServices[as.Name]; old != nil && (old.Spec.Group != as.Spec.Group || old.Spec.Version != as.Spec.Version) {
		delete(a.discovered, as.Name)
	}
	a.apiServices[as.Name] = as
	t := a.publishLocked()[as.Name]
	if t.available && t.transportErr == nil && !a.fetching[as.Name] {
		a.fetching[as.Name] = true
		go a.fetchDiscovery(t, as.Spec.Group, as.Spec.Version)
	}
}

func (a *aggregator) remove(name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.apiServices[name]; !ok {
		return
	}
	delete(a.apiServices, name)
	delete(a.discovered, name)
	a.publishLocked()
}

// publishLocked rebuilds the routes from the APIServices and returns them
// by APIService name. (client-go caches the transports by their TLS
// configuration, so an unchanged APIService keeps its connections.)
func (a *aggregator) publishLocked() map[string]*proxyTarget {
	routes := make(map[schema.GroupVersion]*proxyTarget, len(a.apiServices))
	byName := make(map[string]*proxyTarget, len(a.apiServices))
	for _, as := range a.apiServices {
		port := int32(443)
		if as.Spec.Service.Port != nil {
			port = *as.Spec.Service.Port
		}
		t := &proxyTarget{
			name: as.Name, namespace: as.Spec.Service.Namespace, service: as.Spec.Service.Name, port: port,
			available: apiregistrationv1helper.IsAPIServiceConditionTrue(as, apiregistrationv1.Available),
		}
		t.transport, t.transportErr = transport.New(remote.BuildTransportConfig(nil, a.cfg.ProxyClientCert, a.cfg.ProxyClientKey, as))
		routes[schema.GroupVersion{Group: as.Spec.Group, Version: as.Spec.Version}] = t
		byName[as.Name] = t
	}
	a.routes.Store(&routes)
	return byName
}

// fetchDiscovery reads the resources of group/version from t's server:
// its aggregated discovery document (/apis, v2), or, from a server that
// does not serve one, the group version's resource list, as
// kube-aggregator's discovery manager does. On failure the group version
// stays in discovery as stale.
func (a *aggregator) fetchDiscovery(t *proxyTarget, group, version string) {
	vd, err := a.discover(t, group, version)
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.fetching, t.name)
	if cur := a.apiServices[t.name]; cur == nil || cur.Spec.Group != group || cur.Spec.Version != version {
		return
	}
	if err != nil {
		delete(a.discovered, t.name)
		return
	}
	a.discovered[t.name] = vd
}

func (a *aggregator) discover(t *proxyTarget, group, version string) (*apidiscoveryv2.APIVersionDiscovery, error) {
	get := func(path, accept string) (*http.Response, []byte, error) {
		loc, err := a.resolve(t.namespace, t.service, t.port)
		if err != nil {
			return nil, nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), remoteDiscoveryTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, (&url.URL{Scheme: "https", Host: loc.Host, Path: path}).String(), nil)
		if err != nil {
			return nil, nil, err
		}
		req.Header.Set("Accept", accept)
		// As kube-aggregator's discovery manager asks.
		transport.SetAuthProxyHeaders(req, "system:kube-aggregator", "", []string{"system:masters"}, nil)
		resp, err := t.transport.RoundTrip(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		if err != nil {
			return nil, nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, nil, fmt.Errorf("GET %s: %s", path, resp.Status)
		}
		return resp, body, nil
	}
	resp, body, err := get("/apis", aggregatedDiscoveryType+",application/json;q=0.9")
	if err != nil {
		return nil, err
	}
	if mt, params, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" && params["g"] == "apidiscovery.k8s.io" && params["v"] == "v2" {
		var list apidiscoveryv2.APIGroupDiscoveryList
		if err := json.Unmarshal(body, &list); err != nil {
			return nil, err
		}
		for _, g := range list.Items {
			if g.Name != group {
				continue
			}
			for _, v := range g.Versions {
				if v.Version == version {
					v.Freshness = apidiscoveryv2.DiscoveryFreshnessCurrent
					return &v, nil
				}
			}
		}
		return nil, fmt.Errorf("the server's discovery does not list %s/%s", group, version)
	}
	_, body, err = get("/apis/"+group+"/"+version, "application/json")
	if err != nil {
		return nil, err
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, err
	}
	resources, err := endpoints.ConvertGroupVersionIntoToDiscovery(list.APIResources)
	if err != nil {
		return nil, err
	}
	return &apidiscoveryv2.APIVersionDiscovery{Version: version, Resources: resources, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}, nil
}

// remoteGroups are the groups of the APIServices that name a Service, each
// with its versions by priority (kube-aggregator's order), for discovery:
// legacy /apis lists them all, available or not, as kube-aggregator does.
func (a *aggregator) remoteGroups() [][]*apiregistrationv1.APIService {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	list := make([]*apiregistrationv1.APIService, 0, len(a.apiServices))
	for _, as := range a.apiServices {
		list = append(list, as)
	}
	a.mu.Unlock()
	return apiregistrationv1helper.SortedByGroupAndVersion(list)
}

// versionDiscovery is the aggregated discovery of one remote APIService's
// group version: its resources as last fetched, current while it is
// available; stale, as kube-aggregator marks it, before the first fetch
// and while it is not available.
func (a *aggregator) versionDiscovery(as *apiregistrationv1.APIService) apidiscoveryv2.APIVersionDiscovery {
	a.mu.Lock()
	defer a.mu.Unlock()
	vd := apidiscoveryv2.APIVersionDiscovery{Version: as.Spec.Version}
	if last := a.discovered[as.Name]; last != nil {
		vd = *last
	}
	vd.Freshness = apidiscoveryv2.DiscoveryFreshnessCurrent
	if a.discovered[as.Name] == nil || !apiregistrationv1helper.IsAPIServiceConditionTrue(as, apiregistrationv1.Available) {
		vd.Freshness = apidiscoveryv2.DiscoveryFreshnessStale
	}
	return vd
}

// proxy serves the request from the extension API server behind t, as the
// authenticated (or impersonated) user, named in the X-Remote-* headers of
// a request made with the API server's front-proxy client certificate.
// Authorization has already been decided here, as in kube-apiserver.
func (q *request) proxy(t *proxyTarget) {
	if !t.available {
		q.fail("", apierrors.NewServiceUnavailable("service unavailable"))
		return
	}
	if t.transportErr != nil {
		// The APIService's own fields (a caBundle that holds no
		// certificate) keep it from being reached: not a server fault.
		q.fail("", apierrors.NewServiceUnavailable(fmt.Sprintf("apiservice %q cannot be reached: %v", t.name, t.transportErr)))
		return
	}
	loc, err := q.s.agg.resolve(t.namespace, t.service, t.port)
	if err != nil {
		q.s.log.Info("no endpoint for an APIService", "apiservice", t.name, "service", t.namespace+"/"+t.service, "err", err)
		q.fail("", apierrors.NewServiceUnavailable("service unavailable"))
		return
	}
	location := &url.URL{Scheme: "https", Host: loc.Host, Path: q.r.URL.Path, RawQuery: q.r.URL.Query().Encode()}
	out, cancel := apiserverproxy.NewRequestForProxy(location, q.r)
	defer cancel()
	// The client's own credentials and impersonation stay here: the
	// extension server learns the user from the headers below only.
	out.Header.Del("Authorization")
	for name := range out.Header {
		if strings.HasPrefix(name, "Impersonate-") {
			out.Header.Del(name)
		}
	}
	out.Header.Set("Audit-Id", string(q.ev.AuditID))
	u := q.user
	upgrade := httpstream.IsUpgradeRequest(q.r)
	rt := transport.NewAuthProxyRoundTripper(u.Name, u.UID, u.Groups, u.Extra, t.transport)
	if upgrade {
		transport.SetAuthProxyHeaders(out, u.Name, u.UID, u.Groups, u.Extra)
	}
	q.ev.Annotations["apiregistration.k8s.io/apiservice"] = t.name
	h := utilproxy.NewUpgradeAwareHandler(location, rt, true, upgrade, proxyResponder{q})
	var w http.ResponseWriter = q.w
	if upgrade {
		w = hijackingWriter{q.w}
	}
	h.ServeHTTP(w, out)
}

// hijackingWriter hands the connection of an upgraded request (a stream
// to an extension API server) to the proxy, which asks for http.Hijacker
// itself, and records the switch for the audit event.
type hijackingWriter struct{ *statusWriter }

func (w hijackingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil && w.code == 0 {
		w.code = http.StatusSwitchingProtocols
	}
	return c, rw, err
}

// proxyResponder answers a failed proxy request with a Status.
type proxyResponder struct{ q *request }

func (r proxyResponder) Object(code int, obj runtime.Object) { r.q.writeJSON(code, obj) }

func (r proxyResponder) Error(_ http.ResponseWriter, _ *http.Request, err error) {
	r.q.fail("", apierrors.NewServiceUnavailable(err.Error()))
}

// bootstrapAuthenticationConfigMap writes kube-system's
// extension-apiserver-authentication ConfigMap, as kube-apiserver's
// cluster-authentication-info controller does: the client CA and the
// request-header settings extension API servers authenticate by.
func (s *Server) bootstrapAuthenticationConfigMap(ctx context.Context) error {
	if s.agg == nil {
		return nil
	}
	cfg := s.agg.cfg
	list := func(v []string) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	want := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: rbac.ExtensionAPIServerAuthentication},
		Data: map[string]string{
			"client-ca-file":                     string(cfg.ClientCA),
			"requestheader-client-ca-file":       string(cfg.RequestHeaderCA),
			"requestheader-allowed-names":        list(cfg.RequestHeaderAllowedNames),
			"requestheader-username-headers":     list(requestHeaderUsername),
			"requestheader-uid-headers":          list(requestHeaderUID),
			"requestheader-group-headers":        list(requestHeaderGroup),
			"requestheader-extra-headers-prefix": list(requestHeaderExtraPrefix),
		},
	}
	res := s.byPath[corev1.SchemeGroupVersion.WithResource("configmaps")]
	return s.reconcile(ctx, res, want, func(cur runtime.Object) bool {
		cm := cur.(*corev1.ConfigMap)
		if maps.Equal(cm.Data, want.Data) {
			return false
		}
		cm.Data = want.Data
		return true
	})
}
