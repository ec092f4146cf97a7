package web

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/glassplane/glassplane/web/source"

	"github.com/labstack/echo/v5"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/glassplane/glassplane/components"
)

// The dashboard's own permissions, asked of RBAC like any other (see
// doc.go): raw etcd is "get etcdkeys.glassplane.io" (cluster-scoped), and
// other users' requests are "list events.audit.k8s.io" (cluster-scoped).
const (
	EtcdGroup     = "glassplane.io"
	EtcdResource  = "etcdkeys"
	AuditGroup    = "audit.k8s.io"
	AuditResource = "events"
)

const (
	// accessTTL is how long an RBAC decision is kept for a user.
	accessTTL = 15 * time.Second
	// accessErrorTTL is how long a failed review counts as a denial before
	// it is asked again.
	accessErrorTTL = 2 * time.Second
	// accessTimeout bounds one SubjectAccessReview.
	accessTimeout = 5 * time.Second
	// maxDecisions bounds the decisions kept for one user, maxAccessUsers
	// the users kept; past either, the expired go first, then all.
	maxDecisions   = 4096
	maxAccessUsers = 1024
)

// reviewer asks the API server whether a user may do something.
type reviewer interface {
	review(ctx context.Context, id identity, attrs authorizationv1.ResourceAttributes) (bool, error)
}

// sarReviewer creates SubjectAccessReviews with the dashboard's own
// identity.
type sarReviewer struct {
	client kubernetes.Interface
}

func newSARReviewer(cfg *rest.Config) (*sarReviewer, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = accessTimeout
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to create the dashboard's access review client: %w", err)
	}
	return &sarReviewer{client: client}, nil
}

func (s *sarReviewer) review(ctx context.Context, id identity, attrs authorizationv1.ResourceAttributes) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, accessTimeout)
	defer cancel()
	r, err := s.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: id.User, Groups: id.Groups, ResourceAttributes: &attrs},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("failed to review %s %s for %q: %w", attrs.Verb, attrs.Resource, id.User, err)
	}
	return r.Status.Allowed, nil
}

// noAPIReviewer answers a dashboard without an API connection: every
// review fails, so a logged-in user (who cannot exist without one) may read
// nothing.
type noAPIReviewer struct{}

func (noAPIReviewer) review(context.Context, identity, authorizationv1.ResourceAttributes) (bool, error) {
	return false, errNoAPI
}

// access decides what logged-in users may read, by SubjectAccessReview,
// keeping each user's decisions for accessTTL. It fails closed: a review
// that fails is a denial.
type access struct {
	reviewer reviewer

	mu    sync.Mutex // guards users
	users map[string]*userAccess
}

func newAccess(r reviewer) *access {
	return &access{reviewer: r, users: map[string]*userAccess{}}
}

// forUser returns the decisions of id; nil id (the dashboard's own
// identity) is nil, which allows every read.
func (a *access) forUser(id *identity) *userAccess {
	if id == nil {
		return nil
	}
	groups := slices.Clone(id.Groups)
	slices.Sort(groups)
	key := id.User + "\x00" + strings.Join(groups, "\x00")
	a.mu.Lock()
	defer a.mu.Unlock()
	if u, ok := a.users[key]; ok {
		return u
	}
	if len(a.users) >= maxAccessUsers {
		clear(a.users)
	}
	u := &userAccess{id: identity{User: id.User, Groups: groups}, reviewer: a.reviewer, m: map[accessKey]decision{}}
	a.users[key] = u
	return u
}

// readerOf is what the request's user may read; nil for the dashboard's own
// identity.
func (d *Dashboard) readerOf(r *http.Request) *userAccess {
	return d.access.forUser(d.userOf(r))
}

// forbidden answers 403 with Kubernetes' wording of the denial and, when
// f has one, a hint of what would allow it.
func (d *Dashboard) forbidden(c *echo.Context, f components.Forbidden) error {
	l := d.layout("Forbidden", "", d.cfg.Store.Revision(), d.auditSeq())
	return render(c, http.StatusForbidden, components.ForbiddenPage(l, f))
}

// accessKey is one question about a user.
type accessKey struct {
	verb, group, resource, namespace string
}

type decision struct {
	allowed bool
	expires time.Time
}

// userAccess is one user's cached decisions. A nil *userAccess is the
// dashboard's own identity, a local read-only viewer: it may read
// everything (Secrets masked), and asking it costs nothing.
type userAccess struct {
	id       identity
	reviewer reviewer

	mu sync.Mutex // guards m
	m  map[accessKey]decision
}

// user names the user, "" for the dashboard's own identity.
func (u *userAccess) user() string {
	if u == nil {
		return ""
	}
	return u.id.User
}

// allowed reports whether the user may verb the resource of group in
// namespace ("" for cluster-wide), from the cache or by a review.
func (u *userAccess) allowed(ctx context.Context, verb, group, resource, namespace string) bool {
	if u == nil {
		return true
	}
	k := accessKey{verb, group, resource, namespace}
	now := time.Now()
	u.mu.Lock()
	d, ok := u.m[k]
	u.mu.Unlock()
	if ok && now.Before(d.expires) {
		return d.allowed
	}
	allowed, err := u.reviewer.review(ctx, u.id, authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource, Namespace: namespace})
	d = decision{allowed: allowed && err == nil, expires: now.Add(accessTTL)}
	if err != nil {
		d.expires = now.Add(accessErrorTTL)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.m) >= maxDecisions {
		for key, v := range u.m {
			if now.After(v.expires) {
				delete(u.m, key)
			}
		}
		if len(u.m) >= maxDecisions {
			clear(u.m)
		}
	}
	u.m[k] = d
	return d.allowed
}

// mayList reports whether the user may list (or watch) the resource in
// namespace.
func (u *userAccess) mayList(ctx context.Context, group, resource, namespace string) bool {
	return u.allowed(ctx, "list", group, resource, namespace) || u.allowed(ctx, "watch", group, resource, namespace)
}

// mayReadEtcd reports whether the user may see raw etcd keys and values.
func (u *userAccess) mayReadEtcd(ctx context.Context) bool {
	return u.allowed(ctx, "get", EtcdGroup, EtcdResource, "")
}

// mayReadAudit reports whether the user may see a request made by user:
// their own, or anyone's with list on audit events.
func (u *userAccess) mayReadAudit(ctx context.Context, user string) bool {
	return u == nil || user == u.id.User || u.allowed(ctx, "list", AuditGroup, AuditResource, "")
}

// readScope is who may read a websocket message, kept beside its encoding
// so that a page's filter reads no JSON.
type readScope struct {
	kind                       scopeKind
	group, resource, namespace string
	// user made the request (audit).
	user string
}

type scopeKind uint8

const (
	// scopeAll is for everyone (hello, resync).
	scopeAll scopeKind = iota
	// scopeObject needs list on the resource in the namespace.
	scopeObject
	// scopeEtcd needs the etcd permission.
	scopeEtcd
	// scopeAudit is the requester's, or for those allowed audit events.
	scopeAudit
)

// mayRead reports whether the user may read a message of scope s.
func (u *userAccess) mayRead(ctx context.Context, s *readScope) bool {
	if u == nil || s == nil {
		return true
	}
	switch s.kind {
	case scopeObject:
		return u.mayList(ctx, s.group, s.resource, s.namespace)
	case scopeEtcd:
		return u.mayReadEtcd(ctx)
	case scopeAudit:
		return u.mayReadAudit(ctx, s.user)
	}
	return true
}

// forbiddenMessage is Kubernetes' wording of a denied request.
func forbiddenMessage(user, verb, group, resource, namespace, name string) string {
	subject := resource
	if group != "" {
		subject += "." + group
	}
	if name != "" {
		subject += fmt.Sprintf(" %q", name)
	}
	msg := fmt.Sprintf("%s is forbidden: User %q cannot %s resource %q in API group %q", subject, user, verb, resource, group)
	if namespace != "" {
		return msg + fmt.Sprintf(" in the namespace %q", namespace)
	}
	return msg + " at the cluster scope"
}

// groupOf is the API group of an object's apiVersion ("apps/v1" → "apps").
func groupOf(apiVersion string) string {
	g, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return ""
	}
	return g
}

// resourceGroup is the API group of resource: the stored object's, or
// when there is none, discovery's (through the apply form's mapper); ""
// when neither knows.
func (d *Dashboard) resourceGroup(resource string, kv *source.KeyValue) string {
	if kv != nil {
		if h := decodeHead(kv.Value); h.APIVersion != "" {
			return groupOf(h.APIVersion)
		}
	}
	if d.applier == nil {
		return ""
	}
	gvk, err := d.applier.mapper.KindFor(schema.GroupVersionResource{Resource: resource})
	if err != nil {
		return ""
	}
	return gvk.Group
}

// listable keeps the stored objects of a resource that reader may list in
// their namespaces (cluster-wide for cluster-scoped ones).
func listable(ctx context.Context, reader *userAccess, group, resource string, kvs []source.KeyValue) []source.KeyValue {
	if reader == nil {
		return kvs
	}
	out := make([]source.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		ref, ok := parseKey(kv.Key)
		if ok && reader.mayList(ctx, group, resource, ref.Namespace) {
			out = append(out, kv)
		}
	}
	return out
}
