package apiserver_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/labstack/echo/v5"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/glassplane/glassplane/controlplane/apiserver"
	"github.com/glassplane/glassplane/controlplane/apiserver/audit"
	"github.com/glassplane/glassplane/controlplane/apiserver/auth/rbac"
	"github.com/glassplane/glassplane/controlplane/etcd"
	"github.com/glassplane/glassplane/controlplane/etcd/etcdtest"
	"github.com/glassplane/glassplane/controlplane/pki"
	"github.com/glassplane/glassplane/controlplane/storage"
)

// rbacEnv is a real API server with RBAC on, over a real embedded etcd.
type rbacEnv struct {
	url    string
	ca     *pki.CA
	audit  *audit.Ring
	admin  kubernetes.Interface
	server *apiserver.Server
}

var (
	rbacOnce   sync.Once
	rbacShared *rbacEnv
	rbacErr    error
	// rbacDir is its data directory, removed by TestMain at the end.
	rbacDir string
)

// sharedRBACEnv starts one RBAC-enabled environment for the tests in this
// file; it stops with the test binary.
func sharedRBACEnv(t *testing.T) *rbacEnv {
	t.Helper()
	// Its data outlives the test that starts it (a t.TempDir would be
	// removed under the running etcd when that test ends); TestMain
	// removes it once every test ran.
	rbacOnce.Do(func() {
		dir, err := os.MkdirTemp("", "apiserver-rbac-test")
		if err != nil {
			rbacErr = err
			return
		}
		rbacDir = dir
		rbacShared, rbacErr = startRBACEnv(dir)
	})
	if rbacErr != nil {
		t.Fatal(rbacErr)
	}
	return rbacShared
}

func startRBACEnv(dir string) (*rbacEnv, error) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	etcdSrv, err := etcdtest.StartOnFreePorts(ctx, etcd.Config{DataDir: dir, Logger: log})
	if err != nil {
		return nil, err
	}
	store := storage.New(etcdSrv.Client(), storage.Config{CompactionInterval: -1, Logger: log})
	go store.Run(ctx)
	<-store.Ready()
	ca, err := pki.LoadOrCreateCA(dir)
	if err != nil {
		return nil, err
	}
	ring := audit.NewRing(0)
	srv, err := apiserver.New(apiserver.Config{Store: store, Audit: ring, ClientCA: ca.Pool(), Logger: log, RBAC: true, NoDynamicAdmission: true})
	if err != nil {
		return nil, err
	}
	if err := srv.Bootstrap(ctx); err != nil {
		return nil, err
	}
	go srv.Run(ctx)
	e := echo.New()
	srv.Register(e)
	serving, err := ca.Serving()
	if err != nil {
		return nil, err
	}
	ts := httptest.NewUnstartedServer(e)
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{serving}, ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: ca.Pool()}
	ts.Config.ErrorLog = stdlog.New(io.Discard, "", 0)
	ts.StartTLS()
	env := &rbacEnv{url: ts.URL, ca: ca, audit: ring, server: srv}
	env.admin, err = env.clientE(pki.AdminUser, nil, pki.AdminGroup)
	return env, err
}

func (env *rbacEnv) clientE(user string, wrap func(*rest.Config), groups ...string) (kubernetes.Interface, error) {
	cfg, err := env.ca.RESTConfig(env.url, user, groups...)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	if wrap != nil {
		wrap(cfg)
	}
	return kubernetes.NewForConfig(cfg)
}

// client returns a clientset authenticated as user in groups.
func (env *rbacEnv) client(t *testing.T, user string, groups ...string) kubernetes.Interface {
	t.Helper()
	c, err := env.clientE(user, nil, groups...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// namespace creates a namespace named after the test.
func (env *rbacEnv) namespace(t *testing.T, name string) string {
	t.Helper()
	if _, err := env.admin.CoreV1().Namespaces().Create(ctxT(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

func (env *rbacEnv) bind(t *testing.T, namespace, name, clusterRole string, subject rbacv1.Subject) {
	t.Helper()
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{subject},
	}
	if _, err := env.admin.RbacV1().RoleBindings(namespace).Create(ctxT(t), rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

// requireForbidden fails unless err is a 403 with exactly msg.
func requireForbidden(t *testing.T, err error, msg string) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Fatalf("err = %v, want Forbidden", err)
	}
	if err.Error() != msg {
		t.Fatalf("message\n got: %s\nwant: %s", err.Error(), msg)
	}
}

// eventuallyAllowed polls until the RBAC cache has seen a new binding.
func eventuallyAllowed(t *testing.T, what string, try func() error) {
	t.Helper()
	eventually(t, what, func() bool {
		err := try()
		if err != nil && !apierrors.IsForbidden(err) {
			t.Fatalf("%s: %v", what, err)
		}
		return err == nil
	})
}

// lastAudit finds the newest audit event whose URI contains uri and whose
// user is user.
func (env *rbacEnv) lastAudit(t *testing.T, user, uri string) *audit.Event {
	t.Helper()
	var found *audit.Event
	eventually(t, "the audit event of "+uri, func() bool {
		for _, rec := range env.audit.Since(0) {
			if rec.Event.User.Username == user && strings.Contains(rec.Event.RequestURI, uri) {
				found = rec.Event
			}
		}
		return found != nil
	})
	return found
}

func TestRBACDenialsReadLikeKubernetes(t *testing.T) {
	env := sharedRBACEnv(t)
	alice := env.client(t, "alice")
	ctx := ctxT(t)
	tests := []struct {
		name string
		do   func() error
		want string
	}{
		{"namespaced list", func() error {
			_, err := alice.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
			return err
		}, `pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"`},
		{"cluster scope", func() error {
			_, err := alice.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			return err
		}, `nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope`},
		{"named object in a group", func() error {
			_, err := alice.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
			return err
		}, `deployments.apps "web" is forbidden: User "alice" cannot get resource "deployments" in API group "apps" in the namespace "default"`},
		{"subresource", func() error {
			_, err := alice.CoreV1().Pods("default").UpdateStatus(ctx, testPod("p"), metav1.UpdateOptions{})
			return err
		}, `pods "p" is forbidden: User "alice" cannot update resource "pods/status" in API group "" in the namespace "default"`},
		{"create", func() error {
			_, err := alice.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
			return err
		}, `clusterroles.rbac.authorization.k8s.io is forbidden: User "alice" cannot create resource "clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			requireForbidden(t, tc.do(), tc.want)
		})
	}
	t.Run("audit annotations", func(t *testing.T) {
		ev := env.lastAudit(t, "alice", "/api/v1/namespaces/default/pods")
		if ev.Annotations[audit.AnnotationDecision] != "forbid" || ev.Annotations[audit.AnnotationFailedStage] != "authorization" || ev.ResponseStatus.Code != 403 {
			t.Errorf("denied request's audit event: %+v, status %+v", ev.Annotations, ev.ResponseStatus)
		}
		if _, err := env.admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		ev = env.lastAudit(t, pki.AdminUser, "/api/v1/namespaces/default/pods")
		want := `RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" to Group "system:masters"`
		if ev.Annotations[audit.AnnotationDecision] != "allow" || ev.Annotations[audit.AnnotationReason] != want {
			t.Errorf("admin's audit annotations: %+v", ev.Annotations)
		}
	})
}

func TestRBACRoleBindingToView(t *testing.T) {
	env := sharedRBACEnv(t)
	ns := env.namespace(t, "team")
	ctx := ctxT(t)
	if _, err := env.admin.CoreV1().Pods(ns).Create(ctx, testPod("web"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bob := env.client(t, "bob")
	_, err := bob.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
	requireForbidden(t, err, `pods "web" is forbidden: User "bob" cannot get resource "pods" in API group "" in the namespace "team"`)

	env.bind(t, ns, "bob-view", "view", userSubject("bob"))
	eventuallyAllowed(t, "bob to get the pod", func() error {
		_, err := bob.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
		return err
	})
	ev := env.lastAudit(t, "bob", "/api/v1/namespaces/team/pods/web")
	if want := `RBAC: allowed by RoleBinding "bob-view/team" of ClusterRole "view" to User "bob"`; ev.Annotations[audit.AnnotationReason] != want {
		t.Errorf("reason = %q, want %q", ev.Annotations[audit.AnnotationReason], want)
	}
	err = bob.CoreV1().Pods(ns).Delete(ctx, "web", metav1.DeleteOptions{})
	requireForbidden(t, err, `pods "web" is forbidden: User "bob" cannot delete resource "pods" in API group "" in the namespace "team"`)
	_, err = bob.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	requireForbidden(t, err, `secrets is forbidden: User "bob" cannot list resource "secrets" in API group "" in the namespace "team"`)
	_, err = bob.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	requireForbidden(t, err, `pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "default"`)
	if _, err := bob.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/" + ns + "/pods/web/log").DoRaw(ctx); apierrors.IsForbidden(err) {
		t.Errorf("view should allow pods/log: %v", err)
	}
}

func TestSelfSubjectAccessReviews(t *testing.T) {
	env := sharedRBACEnv(t)
	ns := env.namespace(t, "ssar")
	env.bind(t, ns, "carol-edit", "edit", userSubject("carol"))
	carol := env.client(t, "carol")
	ctx := ctxT(t)
	ask := func(c kubernetes.Interface, ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) bool {
		t.Helper()
		r, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: ra, NonResourceAttributes: nra},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status.Allowed
	}
	eventually(t, "carol's binding to reach the cache", func() bool {
		return ask(carol, &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods"}, nil)
	})
	tests := []struct {
		name string
		ra   *authorizationv1.ResourceAttributes
		nra  *authorizationv1.NonResourceAttributes
		want bool
	}{
		{"create deployments", &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Group: "apps", Resource: "deployments"}, nil, true},
		{"delete secrets", &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "delete", Resource: "secrets"}, nil, true},
		{"get pods/log", &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "pods", Subresource: "log"}, nil, true},
		{"update pods/status", &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "update", Resource: "pods", Subresource: "status"}, nil, false},
		{"create rolebindings", &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "rolebindings"}, nil, false},
		{"list pods elsewhere", &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "list", Resource: "pods"}, nil, false},
		{"list nodes", &authorizationv1.ResourceAttributes{Verb: "list", Resource: "nodes"}, nil, false},
		{"get /api", nil, &authorizationv1.NonResourceAttributes{Path: "/api", Verb: "get"}, true},
		{"get /metrics", nil, &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ask(carol, tc.ra, tc.nra); got != tc.want {
				t.Errorf("allowed = %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("SubjectAccessReview needs create on subjectaccessreviews", func(t *testing.T) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "carol", ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "pods"},
		}}
		_, err := carol.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		requireForbidden(t, err, `subjectaccessreviews.authorization.k8s.io is forbidden: User "carol" cannot create resource "subjectaccessreviews" in API group "authorization.k8s.io" at the cluster scope`)
		r, err := env.admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if want := `RBAC: allowed by RoleBinding "carol-edit/ssar" of ClusterRole "edit" to User "carol"`; !r.Status.Allowed || r.Status.Reason != want {
			t.Errorf("status %+v, want allowed with reason %q", r.Status, want)
		}
	})
	t.Run("LocalSubjectAccessReview", func(t *testing.T) {
		r, err := env.admin.AuthorizationV1().LocalSubjectAccessReviews(ns).Create(ctx, &authorizationv1.LocalSubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: "carol", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "delete", Resource: "pods"}},
		}, metav1.CreateOptions{})
		if err != nil || !r.Status.Allowed {
			t.Fatalf("review %+v, err %v", r, err)
		}
	})
	t.Run("SelfSubjectRulesReview", func(t *testing.T) {
		r, err := carol.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
			Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var writesPods, selfReviews bool
		for _, rule := range r.Status.ResourceRules {
			writesPods = writesPods || (slices.Contains(rule.Resources, "pods") && slices.Contains(rule.Verbs, "create"))
			selfReviews = selfReviews || slices.Contains(rule.Resources, "selfsubjectaccessreviews")
		}
		if !writesPods || !selfReviews || len(r.Status.NonResourceRules) == 0 || r.Status.Incomplete {
			t.Errorf("rules review: %+v", r.Status)
		}
	})
	t.Run("SelfSubjectReview", func(t *testing.T) {
		r, err := carol.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.UserInfo.Username != "carol" || !slices.Contains(r.Status.UserInfo.Groups, "system:authenticated") {
			t.Errorf("whoami: %+v", r.Status.UserInfo)
		}
	})
}

func TestRBACEscalationIsRefused(t *testing.T) {
	env := sharedRBACEnv(t)
	ns := env.namespace(t, "escalation")
	env.bind(t, ns, "dave-admin", "admin", userSubject("dave"))
	dave := env.client(t, "dave")
	ctx := ctxT(t)
	reader := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}},
	}
	eventuallyAllowed(t, "dave to create a role he holds", func() error {
		_, err := dave.RbacV1().Roles(ns).Create(ctx, reader, metav1.CreateOptions{})
		return err
	})
	nodesRole := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "too-much"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}},
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "delete"}},
		},
	}
	_, err := dave.RbacV1().Roles(ns).Create(ctx, nodesRole, metav1.CreateOptions{})
	requireForbidden(t, err, `roles.rbac.authorization.k8s.io "too-much" is forbidden: user "dave" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["nodes"], Verbs:["get" "delete"]}`)

	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "dave-cluster-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{userSubject("dave")},
	}
	_, err = dave.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `rolebindings.rbac.authorization.k8s.io "dave-cluster-admin" is forbidden: user "dave" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:`) {
		t.Fatalf("binding cluster-admin: %v", err)
	}
	ev := env.lastAudit(t, "dave", "/rolebindings")
	if ev.Annotations[audit.AnnotationFailedStage] != "authorization" {
		t.Errorf("failed stage = %q", ev.Annotations[audit.AnnotationFailedStage])
	}

	viewBinding := binding.DeepCopy()
	viewBinding.Name, viewBinding.RoleRef.Name = "dave-view", "view"
	if _, err := dave.RbacV1().RoleBindings(ns).Create(ctx, viewBinding, metav1.CreateOptions{}); err != nil {
		t.Errorf("binding a role dave holds: %v", err)
	}

	// With bind on cluster-admin and escalate on roles, both go through.
	granter := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "escalation-granter"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, Verbs: []string{"bind"}, ResourceNames: []string{"cluster-admin"}},
			{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles"}, Verbs: []string{"escalate"}},
		},
	}
	if _, err := env.admin.RbacV1().ClusterRoles().Create(ctx, granter, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.bind(t, ns, "dave-granter", "escalation-granter", userSubject("dave"))
	eventuallyAllowed(t, "dave to bind cluster-admin with bind", func() error {
		_, err := dave.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{})
		return err
	})
	if _, err := dave.RbacV1().Roles(ns).Create(ctx, nodesRole, metav1.CreateOptions{}); err != nil {
		t.Errorf("creating a role with escalate: %v", err)
	}
}

func TestImpersonation(t *testing.T) {
	env := sharedRBACEnv(t)
	ctx := ctxT(t)
	as := func(t *testing.T, user string, groups []string, impersonate rest.ImpersonationConfig) kubernetes.Interface {
		c, err := env.clientE(user, func(cfg *rest.Config) { cfg.Impersonate = impersonate }, groups...)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	t.Run("refused without impersonate", func(t *testing.T) {
		c := as(t, "erin", nil, rest.ImpersonationConfig{UserName: "frank"})
		_, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		requireForbidden(t, err, `users "frank" is forbidden: User "erin" cannot impersonate resource "users" in API group "" at the cluster scope`)
		c = as(t, "erin", nil, rest.ImpersonationConfig{UserName: "system:serviceaccount:default:default"})
		_, err = c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		requireForbidden(t, err, `serviceaccounts "default" is forbidden: User "erin" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "default"`)
	})
	t.Run("admin acts as another user", func(t *testing.T) {
		c := as(t, pki.AdminUser, []string{pki.AdminGroup}, rest.ImpersonationConfig{UserName: "frank", Groups: []string{"devs"}, Extra: map[string][]string{"Team": {"blue"}}})
		r, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		u := r.Status.UserInfo
		if u.Username != "frank" || !slices.Equal(u.Groups, []string{"devs", "system:authenticated"}) || fmt.Sprint(u.Extra["team"]) != "[blue]" {
			t.Errorf("impersonated user: %+v", u)
		}
		_, err = c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		requireForbidden(t, err, `pods is forbidden: User "frank" cannot list resource "pods" in API group "" in the namespace "default"`)
		ev := env.lastAudit(t, pki.AdminUser, "/api/v1/namespaces/default/pods")
		if ev.ImpersonatedUser == nil || ev.ImpersonatedUser.Username != "frank" {
			t.Errorf("audit impersonatedUser = %+v", ev.ImpersonatedUser)
		}
	})
	t.Run("a role with impersonate", func(t *testing.T) {
		role := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "impersonate-frank"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"users"}, Verbs: []string{"impersonate"}, ResourceNames: []string{"frank"}}},
		}
		if _, err := env.admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "gina-impersonates-frank"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{userSubject("gina")},
		}
		if _, err := env.admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		c := as(t, "gina", nil, rest.ImpersonationConfig{UserName: "frank"})
		eventually(t, "gina to act as frank", func() bool {
			r, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			return err == nil && r.Status.UserInfo.Username == "frank"
		})
		c = as(t, "gina", nil, rest.ImpersonationConfig{UserName: "harry"})
		_, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		requireForbidden(t, err, `users "harry" is forbidden: User "gina" cannot impersonate resource "users" in API group "" at the cluster scope`)
	})
}

func TestNodeAuthorizationAndRestriction(t *testing.T) {
	env := sharedRBACEnv(t)
	ctx := ctxT(t)
	sim1 := env.client(t, "system:node:sim-1", "system:nodes")
	node := func(name string) *corev1.Node { return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	if _, err := sim1.CoreV1().Nodes().Create(ctx, node("sim-1"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a node registering itself: %v", err)
	}
	if _, err := env.admin.CoreV1().Nodes().Create(ctx, node("sim-2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns := env.namespace(t, "nodes")
	for name, nodeName := range map[string]string{"on-sim-1": "sim-1", "on-sim-2": "sim-2"} {
		p := testPod(name)
		p.Spec.NodeName = nodeName
		if _, err := env.admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	other, err := sim1.CoreV1().Nodes().Get(ctx, "sim-2", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("nodes may read other nodes: %v", err)
	}
	other.Labels = map[string]string{"hijacked": "true"}
	_, err = sim1.CoreV1().Nodes().Update(ctx, other, metav1.UpdateOptions{})
	requireForbidden(t, err, `nodes "sim-2" is forbidden: node "sim-1" is not allowed to modify node "sim-2"`)
	_, err = sim1.CoreV1().Nodes().UpdateStatus(ctx, other, metav1.UpdateOptions{})
	requireForbidden(t, err, `nodes "sim-2" is forbidden: node "sim-1" is not allowed to modify node "sim-2"`)
	own, err := sim1.CoreV1().Nodes().Get(ctx, "sim-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	own.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if _, err := sim1.CoreV1().Nodes().UpdateStatus(ctx, own, metav1.UpdateOptions{}); err != nil {
		t.Errorf("updating its own node status: %v", err)
	}

	theirs, err := sim1.CoreV1().Pods(ns).Get(ctx, "on-sim-2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	theirs.Status.Phase = corev1.PodFailed
	_, err = sim1.CoreV1().Pods(ns).UpdateStatus(ctx, theirs, metav1.UpdateOptions{})
	requireForbidden(t, err, `pods "on-sim-2" is forbidden: node "sim-1" can only update pod status for pods with spec.nodeName set to itself`)
	err = sim1.CoreV1().Pods(ns).Delete(ctx, "on-sim-2", metav1.DeleteOptions{})
	requireForbidden(t, err, `pods "on-sim-2" is forbidden: node "sim-1" can only delete pods with spec.nodeName set to itself`)
	mine, err := sim1.CoreV1().Pods(ns).Get(ctx, "on-sim-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mine.Status.Phase = corev1.PodRunning
	if _, err := sim1.CoreV1().Pods(ns).UpdateStatus(ctx, mine, metav1.UpdateOptions{}); err != nil {
		t.Errorf("updating its own pod's status: %v", err)
	}
	_, err = sim1.CoreV1().Pods(ns).Create(ctx, testPod("sneaky"), metav1.CreateOptions{})
	requireForbidden(t, err, `pods "sneaky" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "sim-1" can only create mirror pods`)

	lease := func(name string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease}}
	}
	if _, err := sim1.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease("sim-1"), metav1.CreateOptions{}); err != nil {
		t.Errorf("creating its own lease: %v", err)
	}
	_, err = sim1.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease("sim-2"), metav1.CreateOptions{})
	requireForbidden(t, err, `leases.coordination.k8s.io "sim-2" is forbidden: can only access node lease with the same name as the requesting node`)
	_, err = sim1.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "sim-2", metav1.GetOptions{})
	requireForbidden(t, err, `leases.coordination.k8s.io "sim-2" is forbidden: User "system:node:sim-1" cannot get resource "leases" in API group "coordination.k8s.io" in the namespace "kube-node-lease": can only access node lease with the same name as the requesting node`)

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "used"}, StringData: map[string]string{"k": "v"}}
	if _, err := env.admin.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = sim1.CoreV1().Secrets(ns).Get(ctx, "used", metav1.GetOptions{})
	requireForbidden(t, err, `secrets "used" is forbidden: User "system:node:sim-1" cannot get resource "secrets" in API group "" in the namespace "nodes": no relationship found between node 'sim-1' and this object`)
	p := testPod("with-secret")
	p.Spec.NodeName = "sim-1"
	p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "used"}}}}
	if _, err := env.admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sim1.CoreV1().Secrets(ns).Get(ctx, "used", metav1.GetOptions{}); err != nil {
		t.Errorf("reading a secret its pod uses: %v", err)
	}
}

// The Node authorizer's graph follows pods as they are bound, change and
// go, and storage answers for what it has not seen yet: a pod whose JSON
// only mentions the node is not bound to it.
func TestNodeGraph(t *testing.T) {
	env := sharedRBACEnv(t)
	ctx := ctxT(t)
	ns := env.namespace(t, "node-graph")
	indexed := func(node, resource, name string) bool {
		return apiserver.NodeGraphIndexes(env.server, node, ns, resource, name)
	}
	inStore := func(node, resource, name string) bool {
		t.Helper()
		ok, err := apiserver.NodeGraphInStore(ctx, env.server, node, ns, resource, name)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	p := testPod("user")
	p.Spec.NodeName = "graph-1"
	p.Spec.ServiceAccountName = "builder"
	p.Spec.Volumes = []corev1.Volume{
		{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}},
		{Name: "claim", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
	}
	p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "PW", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "password"}, Key: "pw"}}}}
	// Not bound, but its stored JSON holds "nodeName":"graph-1" (an
	// annotation) and it uses the same secret.
	decoy := testPod("decoy")
	decoy.Annotations = map[string]string{"nodeName": "graph-1"}
	decoy.Spec.Containers[0].Env = p.Spec.Containers[0].Env
	for _, pod := range []*corev1.Pod{p, decoy} {
		if _, err := env.admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	uses := map[string]string{"configmaps": "settings", "persistentvolumeclaims": "data", "serviceaccounts": "builder", "secrets": "password"}
	for resource, name := range uses {
		if !inStore("graph-1", resource, name) {
			t.Errorf("storage: node graph-1 should be related to %s %s", resource, name)
		}
		if inStore("graph-2", resource, name) {
			t.Errorf("storage: node graph-2 should not be related to %s %s", resource, name)
		}
		eventually(t, "the graph to index "+resource, func() bool { return indexed("graph-1", resource, name) })
		if indexed("graph-2", resource, name) || indexed("graph-1", resource, name+"-other") {
			t.Errorf("graph: a relation to %s %s where there is none", resource, name)
		}
	}
	if inStore("graph-1", "secrets", "unused") {
		t.Error("storage: a relation to a secret no pod uses")
	}

	if err := env.admin.CoreV1().Pods(ns).Delete(ctx, "user", metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the graph to forget the deleted pod", func() bool { return !indexed("graph-1", "secrets", "password") })
	if inStore("graph-1", "secrets", "password") {
		t.Error("storage: the deleted pod still relates node graph-1 to its secret")
	}
}

// A Role limited by resourceNames allows listing and watching that one
// object with the field selector metadata.name, as in Kubernetes.
func TestRBACResourceNamesAllowNameSelectedListAndWatch(t *testing.T) {
	env := sharedRBACEnv(t)
	ns := env.namespace(t, "named")
	ctx := ctxT(t)
	for _, name := range []string{"mine", "other"} {
		if _, err := env.admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "one-cm", Namespace: ns},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"mine"}, Verbs: []string{"get", "list", "watch"}}},
	}
	if _, err := env.admin.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "carol-one-cm", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "one-cm"},
		Subjects:   []rbacv1.Subject{userSubject("carol")},
	}
	if _, err := env.admin.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	carol := env.client(t, "carol")
	mine := metav1.ListOptions{FieldSelector: "metadata.name=mine"}
	eventuallyAllowed(t, "carol to list her config map by name", func() error {
		list, err := carol.CoreV1().ConfigMaps(ns).List(ctx, mine)
		if err == nil && (len(list.Items) != 1 || list.Items[0].Name != "mine") {
			t.Fatalf("list = %+v", list.Items)
		}
		return err
	})
	w, err := carol.CoreV1().ConfigMaps(ns).Watch(ctx, mine)
	if err != nil {
		t.Fatalf("watch by name: %v", err)
	}
	w.Stop()
	_, err = carol.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	requireForbidden(t, err, `configmaps is forbidden: User "carol" cannot list resource "configmaps" in API group "" in the namespace "named"`)
	_, err = carol.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=other"})
	requireForbidden(t, err, `configmaps "other" is forbidden: User "carol" cannot list resource "configmaps" in API group "" in the namespace "named"`)
}

// TestDecisionRecordRights: the scheduler may create, read, update and
// patch the decision records (schedulingdecisions.glassplane.io) in any
// namespace, and nothing more of them nor any ConfigMap; a user with view
// in a namespace reads the records there and writes none; and
// glassplane-system still cannot be deleted.
func TestDecisionRecordRights(t *testing.T) {
	env := sharedRBACEnv(t)
	ctx := ctxT(t)
	ns := env.namespace(t, "decision-rights")
	sched := env.client(t, rbac.UserKubeScheduler)
	records := "/apis/glassplane.io/v1alpha1/namespaces/" + ns + "/schedulingdecisions"
	body := `{"apiVersion":"glassplane.io/v1alpha1","kind":"SchedulingDecision","metadata":{"name":"web"},"podUID":"u1","attempts":[{"attempt":1,"time":null,"nodes":1,"feasible":1,"node":"n1"}]}`
	raw := func(c kubernetes.Interface, verb, path, contentType, body string) error {
		req := c.CoreV1().RESTClient().Verb(verb).AbsPath(path).SetHeader("Accept", "application/json")
		if body != "" {
			req = req.SetHeader("Content-Type", contentType).Body([]byte(body))
		}
		return req.Do(ctx).Error()
	}
	if err := raw(sched, "POST", records, "application/json", body); err != nil {
		t.Fatalf("the scheduler cannot create a record: %v", err)
	}
	if err := raw(sched, "GET", records+"/web", "", ""); err != nil {
		t.Errorf("the scheduler cannot read a record: %v", err)
	}
	if err := raw(sched, "PATCH", records+"/web", "application/merge-patch+json", `{"droppedAttempts":1}`); err != nil {
		t.Errorf("the scheduler cannot patch a record: %v", err)
	}
	requireForbidden(t, raw(sched, "GET", records, "", ""),
		`schedulingdecisions.glassplane.io is forbidden: User "system:kube-scheduler" cannot list resource "schedulingdecisions" in API group "glassplane.io" in the namespace "`+ns+`"`)
	requireForbidden(t, raw(sched, "DELETE", records+"/web", "", ""),
		`schedulingdecisions.glassplane.io "web" is forbidden: User "system:kube-scheduler" cannot delete resource "schedulingdecisions" in API group "glassplane.io" in the namespace "`+ns+`"`)
	_, err := sched.CoreV1().ConfigMaps(rbac.NamespaceGlassplaneSystem).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "default.web"}}, metav1.CreateOptions{})
	requireForbidden(t, err, `configmaps is forbidden: User "system:kube-scheduler" cannot create resource "configmaps" in API group "" in the namespace "glassplane-system"`)

	env.bind(t, ns, "viewer", "view", userSubject("vera"))
	vera := env.client(t, "vera")
	eventuallyAllowed(t, "vera to list the records", func() error { return raw(vera, "GET", records, "", "") })
	if err := raw(vera, "GET", records+"/web", "", ""); err != nil {
		t.Errorf("a viewer cannot read a record: %v", err)
	}
	requireForbidden(t, raw(vera, "PATCH", records+"/web", "application/merge-patch+json", `{"droppedAttempts":2}`),
		`schedulingdecisions.glassplane.io "web" is forbidden: User "vera" cannot patch resource "schedulingdecisions" in API group "glassplane.io" in the namespace "`+ns+`"`)
	requireForbidden(t, raw(vera, "GET", "/apis/glassplane.io/v1alpha1/namespaces/default/schedulingdecisions", "", ""),
		`schedulingdecisions.glassplane.io is forbidden: User "vera" cannot list resource "schedulingdecisions" in API group "glassplane.io" in the namespace "default"`)

	err = env.admin.CoreV1().Namespaces().Delete(ctx, rbac.NamespaceGlassplaneSystem, metav1.DeleteOptions{})
	requireForbidden(t, err, `namespaces "glassplane-system" is forbidden: this namespace may not be deleted`)
}
