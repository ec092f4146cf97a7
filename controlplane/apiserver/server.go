package apiserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v5"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"

	"github.com/glassplane/glassplane/controlplane/apiserver/admission"
	dynamicadmission "github.com/glassplane/glassplane/controlplane/apiserver/admission/dynamic"
	"github.com/glassplane/glassplane/controlplane/apiserver/audit"
	"github.com/glassplane/glassplane/controlplane/apiserver/auth"
	"github.com/glassplane/glassplane/controlplane/apiserver/auth/node"
	"github.com/glassplane/glassplane/controlplane/apiserver/auth/rbac"
	"github.com/glassplane/glassplane/controlplane/apiserver/openapi"
	"github.com/glassplane/glassplane/controlplane/kubeversion"
	"github.com/glassplane/glassplane/controlplane/storage"
)

const (
	// DefaultMaxRequestBodyBytes is kube-apiserver's limit on request bodies.
	DefaultMaxRequestBodyBytes = 3 << 20
	// GitVersion is what /version reports (kubeversion.GitVersion);
	// kubectl's version skew check compares its minor version with its own.
	GitVersion = kubeversion.GitVersion
)

// Config is what the API server needs.
type Config struct {
	Store *storage.Store
	// MaxRequestsInflight and MaxMutatingRequestsInflight add up to the
	// seats API Priority and Fairness shares among the priority levels
	// (RunFlowControl), as kube-apiserver's flags of these names do; both
	// 0: their defaults there (DefaultMaxRequestsInflight,
	// DefaultMaxMutatingRequestsInflight).
	MaxRequestsInflight, MaxMutatingRequestsInflight int
	Audit                                            *audit.Ring
	// Admission runs before every write; nil means admission.NewDefaultChain
	// over the store's namespaces (defaulting, NamespaceLifecycle, validation).
	Admission *admission.Chain
	// ClientCA verifies client certificates the TLS layer did not verify.
	ClientCA *x509.CertPool
	// Authenticator overrides the authenticator chain (x509 client
	// certificates, bearer tokens, anonymous).
	Authenticator auth.Authenticator
	// TokenAuthenticators check bearer tokens before ServiceAccount tokens
	// (the static --token-auth-file).
	TokenAuthenticators []auth.TokenAuthenticator
	// ServiceAccountKey signs and verifies ServiceAccount tokens; nil
	// serves neither the serviceaccounts/token subresource nor their
	// authentication.
	ServiceAccountKey *ecdsa.PrivateKey
	// ServiceAccountIssuer is the tokens' iss claim (default
	// auth.DefaultServiceAccountIssuer).
	ServiceAccountIssuer string
	// AnonymousAuth makes requests without credentials system:anonymous
	// rather than refusing them with 401.
	AnonymousAuth bool
	// ServiceAccountAdmission adds the ServiceAccount admission plugin to
	// the default chain; it needs the ServiceAccount controller running.
	ServiceAccountAdmission bool
	// Authorizer decides every request; nil allows every authenticated user
	// unless RBAC is set.
	Authorizer auth.Authorizer
	// RBAC turns on Kubernetes' authorization: system:masters always
	// allowed, then the Node authorizer, then RBAC over roles and bindings
	// cached from storage (Run must be running), with NodeRestriction and
	// the escalation check on writes, and Bootstrap creating the bootstrap
	// roles and bindings.
	RBAC                bool
	Logger              *slog.Logger
	MaxRequestBodyBytes int64
	// KubeletClient reaches node agents for pods/log and pods/exec; nil
	// answers those with 503.
	KubeletClient *KubeletClient
	// Profiling serves Go's profiles on /debug/pprof/, as kube-apiserver's
	// --profiling does; RBAC decides who reads them (nonResourceURLs
	// /debug/pprof/*, which only system:masters holds by default).
	Profiling bool
	// ServiceClusterIPRange is the IPv4 CIDR Services' cluster IPs come
	// from (default DefaultServiceClusterIPRange); its first address is the
	// kubernetes Service's.
	ServiceClusterIPRange string
	// ServiceNodePortRange is the "first-last" range of node ports
	// (default DefaultServiceNodePortRange).
	ServiceNodePortRange string
	// AdvertiseAddress and AdvertisePort are where the kubernetes
	// Service's endpoints point: the address and port pods reach this API
	// server at. An empty address leaves the endpoints alone.
	AdvertiseAddress string
	AdvertisePort    int
	// NoDynamicAdmission is for servers that may never call
	// RunDynamicAdmission (tests of other parts): writes pass without
	// webhooks and policies until it has started them. Otherwise a write
	// before they started waits for them (up to dynamic.ReadyWait), then
	// is refused with 403, as kube-apiserver's.
	NoDynamicAdmission bool
	// Aggregation lets the API server proxy to extension API servers
	// (APIServices that name a Service; RunAggregator must be running) and
	// publishes kube-system/extension-apiserver-authentication for them.
	// Nil leaves such APIServices unrouted.
	Aggregation *Aggregation
}

// Server serves the Kubernetes REST API over a storage.Store.
type Server struct {
	cfg   Config
	log   *slog.Logger
	store *storage.Store
	// recent is the storage watch's copy of a key, the guess an update
	// starts from (store.Recent; tests replace it).
	recent    func(key string) (*storage.KeyValue, bool)
	audit     *audit.Ring
	admission *admission.Chain
	authn     auth.Authenticator
	authz     auth.Authorizer
	// saTokens issues and verifies ServiceAccount tokens; nil without a key.
	saTokens *auth.ServiceAccountTokens
	// flow is API Priority and Fairness while RunFlowControl runs; nil
	// before (requests run at once).
	flow atomic.Pointer[flowControl]
	// rbacCache, rbac and nodeAuthz are set when Config.RBAC is.
	rbacCache *rbac.Cache
	rbac      *rbac.Authorizer
	nodeAuthz *node.Authorizer
	// nodeGraph is what the Node authorizer asks: the objects each node's
	// pods use, kept from the storage watch.
	nodeGraph *nodeGraph
	// podsRes is the pods resource, whose watchers the store indexes by
	// spec.nodeName.
	podsRes *resource
	// lookups are what admission reads on most writes, kept in memory.
	lookups lookupCaches
	// restrictions are admission plugins run after the chain (NodeRestriction).
	restrictions *admission.Chain
	openapi      http.Handler
	resources    []*resource
	// byPath finds a resource by group, version and plural name.
	byPath map[schema.GroupVersionResource]*resource
	// groups lists the served group versions in discovery order.
	groups []schema.GroupVersion
	// hooks are Bootstrap's steps, checked by /healthz, /livez and /readyz.
	hooks []*postStartHook
	// hookNamespaces, hookPriorityClasses and hookRBAC are the hooks
	// (hookRBAC nil without RBAC).
	hookNamespaces, hookPriorityClasses, hookRBAC *postStartHook
	// shuttingDown is closed when Run's context ends; /readyz then fails.
	shuttingDown chan struct{}
	health       healthEndpoints
	// services gives Services their cluster IPs and node ports.
	services *serviceAllocator
	// startRepair is what the repair at bootstrap found; Run's repair
	// loop starts from it.
	startRepair serviceRepair
	// metrics keeps the node agents' recent summaries for metrics.k8s.io.
	metrics metricsScraper
	// dynamic are the webhook and policy admission plugins (admission/dynamic).
	dynamic dynamicAdmission
	// custom holds the registry entries built from CRDs at run time.
	custom *customResources
	// crdDocs publishes the CRDs' OpenAPI documents.
	crdDocs crdOpenAPI
	// agg is the aggregation layer; nil without Config.Aggregation.
	agg *aggregator
}

// New builds the API server. It validates the resource table and builds the
// OpenAPI documents once.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("failed to create the API server: no store")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Audit == nil {
		cfg.Audit = audit.NewRing(0)
	}
	if cfg.MaxRequestBodyBytes <= 0 {
		cfg.MaxRequestBodyBytes = DefaultMaxRequestBodyBytes
	}
	s := &Server{
		cfg:       cfg,
		log:       cfg.Logger,
		store:     cfg.Store,
		recent:    cfg.Store.Recent,
		audit:     cfg.Audit,
		admission: cfg.Admission,
		authn:     cfg.Authenticator,
		authz:     cfg.Authorizer,
		resources: append(append(append(append(newResources(), authorizationResources()...), storageResources()...), admissionRegistrationResources()...), policyResources()...),
		byPath:    map[schema.GroupVersionResource]*resource{},
		custom:    newCustomResources(),
	}
	if cfg.Aggregation != nil {
		s.agg = newAggregator(cfg.Aggregation)
	}
	s.resources = append(s.resources, crdResources()...)
	s.resources = append(s.resources, autoscalingResources()...)
	s.resources = append(s.resources, etcdKeyResources()...)
	s.resources = append(s.resources, auditEventResources()...)
	s.resources = append(s.resources, schedulingDecisionResources()...)
	s.resources = append(s.resources, clusterAPIResources()...)
	s.resources = append(s.resources, apiServiceResources()...)
	dyn, err := s.newDynamicAdmission()
	if err != nil {
		return nil, err
	}
	s.dynamic = dyn
	s.custom.kinds = dyn
	// CRD conversion webhooks reach a Service as admission webhooks do.
	if s.custom.converters, err = conversion.NewCRConverterFactory(dyn.ServiceResolver(), func(r webhookutil.AuthenticationInfoResolver) webhookutil.AuthenticationInfoResolver { return r }); err != nil {
		return nil, fmt.Errorf("failed to create the CRD conversion webhook client: %w", err)
	}
	if cfg.NoDynamicAdmission {
		dyn.Disable()
	}
	if s.admission == nil {
		s.admission = s.defaultAdmission()
	}
	if err := s.setUpAuthentication(); err != nil {
		return nil, err
	}
	s.setUpAuthorization()
	var described []openapi.Resource
	for _, res := range s.resources {
		s.byPath[res.GroupVersionResource()] = res
		gv := res.GroupVersion()
		if !containsGV(s.groups, gv) {
			s.groups = append(s.groups, gv)
		}
		described = append(described, res.openAPI())
	}
	s.openapi = &lazyOpenAPI{resources: described, built: s.attachOpenAPI}
	s.lookups = s.newLookupCaches()
	s.hookNamespaces = newPostStartHook("bootstrap-controller")
	s.hookPriorityClasses = newPostStartHook("scheduling/bootstrap-system-priority-classes")
	s.hooks = []*postStartHook{s.hookNamespaces, s.hookPriorityClasses}
	if cfg.RBAC {
		s.hookRBAC = newPostStartHook("rbac/bootstrap-roles")
		s.hooks = append(s.hooks, s.hookRBAC)
	}
	s.shuttingDown = make(chan struct{})
	s.health = s.newHealthEndpoints()
	services, err := newServiceAllocator(s.store, s.log, cfg.ServiceClusterIPRange, cfg.ServiceNodePortRange,
		s.byPath[networkingv1.SchemeGroupVersion.WithResource("ipaddresses")], s.byPath[networkingv1.SchemeGroupVersion.WithResource("servicecidrs")])
	if err != nil {
		return nil, err
	}
	s.services = services
	s.podsRes = s.byPath[corev1.SchemeGroupVersion.WithResource("pods")]
	s.store.SetIndexer(storage.Prefix(s.podsRes.StorageResource, ""), podNodeName(s.podsRes))
	return s, nil
}

// lazyOpenAPI builds the OpenAPI documents on their first request: they take
// megabytes, and many runs of the control plane (a classroom demo, an idle
// cluster) never serve them. kubectl asks on its first apply or explain.
type lazyOpenAPI struct {
	resources []openapi.Resource
	once      sync.Once
	handler   http.Handler
	err       error
	// built, when set, is given the service once it is built (the CRDs'
	// documents join it).
	built func(*openapi.Service)
}

func (l *lazyOpenAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.once.Do(func() {
		svc, err := openapi.NewService(l.resources)
		if err != nil {
			l.err = fmt.Errorf("failed to build the OpenAPI documents: %w", err)
			return
		}
		l.handler, l.resources = svc.Handler(), nil
		if l.built != nil {
			l.built(svc)
		}
	})
	if l.err != nil {
		writeText(w, http.StatusInternalServerError, l.err.Error())
		return
	}
	l.handler.ServeHTTP(w, r)
}

func containsGV(list []schema.GroupVersion, gv schema.GroupVersion) bool {
	for _, x := range list {
		if x == gv {
			return true
		}
	}
	return false
}

// Register mounts every API route on e.
func (s *Server) Register(e *echo.Echo) {
	h := echo.WrapHandler(s)
	for _, path := range []string{"/api", "/api/*", "/apis", "/apis/*", "/version", "/healthz", "/healthz/*", "/livez", "/livez/*", "/readyz", "/readyz/*", "/openapi/v2", "/openapi/v3", "/openapi/v3/*",
		oidcConfigPath, oidcConfigPath + "/", oidcJWKSPath, oidcJWKSPath + "/"} {
		e.Any(path, h)
	}
	if s.cfg.Profiling {
		e.Any("/debug/pprof", h)
		e.Any("/debug/pprof/*", h)
	}
}

// Bootstrap creates the namespaces every cluster has (default, kube-system,
// kube-public, kube-node-lease) and Glassplane's own (glassplane-system),
// the system priority classes, the
// classroom tempo, the default ServiceCIDR and the kubernetes Service with
// its endpoints, the default StorageClass, the local APIServices of its
// group versions when they are missing, with Config.Aggregation
// kube-system/extension-apiserver-authentication and, with RBAC, the
// bootstrap roles, cluster roles and bindings.
func (s *Server) Bootstrap(ctx context.Context) error {
	ctx = dynamicadmission.Bootstrapping(ctx)
	select {
	case <-s.store.Ready():
	case <-ctx.Done():
		return ctx.Err()
	}
	res := s.byPath[corev1.SchemeGroupVersion.WithResource("namespaces")]
	for _, name := range []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease, rbac.NamespaceGlassplaneSystem} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		prepareForCreate(res, ns)
		if _, err := s.admission.Run(ctx, &admission.Attributes{
			Operation: admission.Create, Resource: res.GroupVersionResource(), Kind: res.GVK, Name: name, Object: ns,
			UserName: "system:apiserver", UserGroups: []string{auth.GroupMasters},
		}); err != nil {
			return fmt.Errorf("failed to admit namespace %q: %w", name, err)
		}
		_, err := s.createInStore(ctx, res, ns)
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("failed to create namespace %q: %w", name, err)
		}
		if err == nil {
			s.log.Info("created namespace", "namespace", name)
		}
	}
	s.hookNamespaces.finish()
	if err := s.bootstrapPriorityClasses(ctx); err != nil {
		return err
	}
	s.hookPriorityClasses.finish()
	if err := s.bootstrapTempo(ctx); err != nil {
		return err
	}
	if err := s.bootstrapServices(ctx); err != nil {
		return err
	}
	if err := s.bootstrapStorageClass(ctx); err != nil {
		return err
	}
	if err := s.bootstrapAPIServices(ctx); err != nil {
		return err
	}
	if err := s.bootstrapAuthenticationConfigMap(ctx); err != nil {
		return err
	}
	// What a crash between an allocation and its write left is undone
	// before the first request, as kube-apiserver repairs on start.
	repaired, err := s.services.repair(ctx, s.byPath[corev1.SchemeGroupVersion.WithResource("services")], time.Now())
	if err != nil {
		s.log.Warn("service repair failed", "err", err)
	}
	s.startRepair = repaired
	if s.cfg.RBAC {
		if err := s.bootstrapRBAC(ctx); err != nil {
			return err
		}
		s.hookRBAC.finish()
	}
	return nil
}

// ServeHTTP serves one API request: it authenticates, authorizes, serves and
// records the audit event.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch first, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/"); first {
	case "healthz", "livez", "readyz":
		// Anyone may ask, as kube-apiserver lets system:unauthenticated
		// (system:public-info-viewer); credentials that fail
		// authentication are refused all the same, as there.
		if _, err := s.authn.Authenticate(r); err != nil && !errors.Is(err, auth.ErrNoIdentity) {
			writeStatus(w, apierrors.NewUnauthorized("Unauthorized"))
			return
		}
		s.serveHealth(w, r, first)
		return
	}
	if writeMethod(r) {
		stackWorkers().do(func() { s.serveAPI(w, r) })
		return
	}
	s.serveAPI(w, r)
}

// writeMethod tells whether r is a write that is not an upgrade to a
// stream (exec, attach, port-forward), which runs on one of the
// stackWorkers (workers.go).
func writeMethod(r *http.Request) bool {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return r.Header.Get("Upgrade") == ""
	}
	return false
}

// serveAPI serves one API request, recording its audit event.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	req := s.newRequest(w, r)
	defer req.finish()
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("panic serving API request", "method", r.Method, "path", r.URL.Path, "panic", v)
			req.ev.Stage = audit.StagePanic
			req.fail("", apierrors.NewInternalError(fmt.Errorf("panic: %v", v)))
		}
	}()
	req.serve()
}

func writeText(w http.ResponseWriter, code int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	fmt.Fprint(w, text)
}

// lookup finds the resource a request names.
func (s *Server) lookup(info *RequestInfo) *resource {
	gvr := schema.GroupVersionResource{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource}
	if res := s.byPath[gvr]; res != nil {
		return res
	}
	return s.custom.lookup(gvr)
}

// namespaceLister reads namespace phases for NamespaceLifecycle (and
// PriorityClasses for Priority) from the server's lookup caches.
type namespaceLister struct{ s *Server }

// GetNamespacePhase implements admission.NamespaceLister.
func (l namespaceLister) GetNamespacePhase(ctx context.Context, name string) (corev1.NamespacePhase, bool, error) {
	obj, found, err := l.s.lookups.namespaces.get(ctx, l.s, "", name)
	if !found || err != nil {
		return "", false, err
	}
	return obj.(*corev1.Namespace).Status.Phase, true, nil
}

// ResourceInfo describes one served resource, for the dashboard and the key
// explorer.
type ResourceInfo struct {
	Group, Version, Kind, Resource string
	Namespaced                     bool
	// StoragePrefix is the etcd prefix of its objects, such as
	// "/registry/services/specs/".
	StoragePrefix string
	Subresources  []string
}

// Resources lists the served resources in discovery order.
func (s *Server) Resources() []ResourceInfo {
	out := make([]ResourceInfo, 0, len(s.resources))
	for _, res := range s.resources {
		if res.StorageResource == "" {
			continue
		}
		info := ResourceInfo{
			Group: res.GVK.Group, Version: res.GVK.Version, Kind: res.GVK.Kind, Resource: res.Resource,
			Namespaced: res.Namespaced, StoragePrefix: storage.Prefix(res.StorageResource, ""),
		}
		for _, sub := range res.Subresources {
			info.Subresources = append(info.Subresources, sub.Name)
		}
		out = append(out, info)
	}
	return out
}
