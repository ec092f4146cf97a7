package apiserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/glassplane/glassplane/controlplane/apiserver/admission"
	"github.com/glassplane/glassplane/controlplane/apiserver/audit"
	"github.com/glassplane/glassplane/controlplane/apiserver/auth"
	"github.com/glassplane/glassplane/controlplane/apiserver/auth/node"
	"github.com/glassplane/glassplane/controlplane/apiserver/auth/rbac"
)

// mastersReason is the reason recorded for the system:masters fast path:
// the bootstrap binding that grants the group everything.
const mastersReason = `RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" to Group "system:masters"`

// setUpAuthorization picks the authorizer: the one configured, the Node and
// RBAC authorizers behind the system:masters fast path when RBAC is on, or
// else every authenticated user allowed.
func (s *Server) setUpAuthorization() {
	if !s.cfg.RBAC {
		if s.authz == nil {
			s.authz = auth.AlwaysAllowAuthenticated{}
		}
		return
	}
	s.rbacCache = rbac.NewCache()
	s.rbac = rbac.New(s.rbacCache)
	s.nodeGraph = newNodeGraph(s)
	s.nodeAuthz = node.NewAuthorizer(s.nodeGraph)
	s.restrictions = admission.NewChain(node.NewRestriction(restrictionObjects{s}))
	if s.authz == nil {
		s.authz = &authorizerChain{ready: s.rbacCache.Ready(), node: s.nodeAuthz, rbac: s.rbac}
	}
}

// restrictionObjects reads what NodeRestriction checks a node's requests
// against, from storage (fresh: a pod just bound is there).
type restrictionObjects struct{ s *Server }

func (o restrictionObjects) get(ctx context.Context, resource, namespace, name string) (runtime.Object, error) {
	return o.s.getFromStore(ctx, o.s.byPath[corev1.SchemeGroupVersion.WithResource(resource)], namespace, name)
}

// Node implements node.Objects.
func (o restrictionObjects) Node(ctx context.Context, name string) (*corev1.Node, error) {
	obj, err := o.get(ctx, "nodes", "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Node), nil
}

// Pod implements node.Objects.
func (o restrictionObjects) Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	obj, err := o.get(ctx, "pods", namespace, name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Pod), nil
}

// ServiceAccount implements node.Objects.
func (o restrictionObjects) ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	obj, err := o.get(ctx, "serviceaccounts", namespace, name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.ServiceAccount), nil
}

// authorizerChain is kube-apiserver's authorization: system:masters is
// always allowed, then the Node authorizer, then RBAC; the first to allow
// or deny decides, and a request no one allows is forbidden.
type authorizerChain struct {
	// ready is closed once the RBAC cache holds every role and binding.
	ready <-chan struct{}
	node  auth.Authorizer
	rbac  auth.Authorizer
}

// Authorize implements auth.Authorizer.
func (c *authorizerChain) Authorize(ctx context.Context, a auth.Attributes) (auth.Decision, string, error) {
	if a.User != nil && slices.Contains(a.User.Groups, auth.GroupMasters) {
		return auth.DecisionAllow, mastersReason, nil
	}
	// A filled cache answers even a request whose context has ended (a
	// select picks one of two ready cases at random).
	select {
	case <-c.ready:
	default:
		select {
		case <-c.ready:
		case <-ctx.Done():
			return auth.DecisionNoOpinion, "", fmt.Errorf("failed to wait for the RBAC cache: %w", ctx.Err())
		}
	}
	var reasons []string
	var errs []error
	for _, authz := range []auth.Authorizer{c.node, c.rbac} {
		d, reason, err := authz.Authorize(ctx, a)
		if err != nil {
			errs = append(errs, err)
		}
		if reason != "" {
			reasons = append(reasons, reason)
		}
		if d == auth.DecisionAllow || d == auth.DecisionDeny {
			return d, reason, err
		}
	}
	return auth.DecisionNoOpinion, strings.Join(reasons, "\n"), utilerrors.NewAggregate(errs)
}

// attributes returns the authorization attributes of the request.
func (q *request) attributes() auth.Attributes {
	name := q.info.Name
	if name == "" {
		name = q.info.SelectorName
	}
	return auth.Attributes{
		User: q.user, Verb: q.info.Verb, ResourceRequest: q.info.IsResourceRequest, Path: q.info.Path,
		APIGroup: q.info.APIGroup, APIVersion: q.info.APIVersion, Namespace: q.info.Namespace,
		Resource: q.info.Resource, Subresource: q.info.Subresource, Name: name,
	}
}

// authorize decides the request, records the decision and reason in the
// audit event, and answers 403 (or 500 when the authorizer failed) when it
// may not proceed.
func (q *request) authorize() bool {
	if q.info.Path == "/version" {
		return true
	}
	q.enter(stageAuthorization)
	attrs := q.attributes()
	decision, reason, err := q.s.authz.Authorize(q.ctx, attrs)
	if decision == auth.DecisionAllow {
		q.ev.Annotations[audit.AnnotationDecision] = auth.DecisionAllow.String()
		if reason != "" {
			q.ev.Annotations[audit.AnnotationReason] = reason
		}
		return true
	}
	if err != nil {
		q.ev.Annotations[audit.AnnotationReason] = "internal error"
		if q.ctx.Err() == nil {
			err = apierrors.NewInternalError(err)
		}
		// else the request ended (its client went away, or the server
		// is stopping) while it waited: toStatus answers that.
		q.fail(stageAuthorization, err)
		return false
	}
	q.ev.Annotations[audit.AnnotationDecision] = auth.DecisionDeny.String()
	if reason != "" {
		q.ev.Annotations[audit.AnnotationReason] = reason
	}
	q.fail(stageAuthorization, forbidden(attrs, reason))
	return false
}

// allowed asks the authorizer about attrs and reports whether they are
// allowed, with the reason.
func (s *Server) allowed(ctx context.Context, attrs auth.Attributes) (bool, string, error) {
	d, reason, err := s.authz.Authorize(ctx, attrs)
	return d == auth.DecisionAllow, reason, err
}

// forbiddenMessage is kube-apiserver's text for a denied request.
func forbiddenMessage(a auth.Attributes) string {
	name := ""
	if a.User != nil {
		name = a.User.Name
	}
	if !a.ResourceRequest {
		return fmt.Sprintf("User %q cannot %s path %q", name, a.Verb, a.Path)
	}
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	if a.Namespace != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", name, a.Verb, resource, a.APIGroup, a.Namespace)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", name, a.Verb, resource, a.APIGroup)
}

// forbidden is kube-apiserver's 403 for a denied request, as its
// responsewriters.ForbiddenStatusError builds it:
// pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default".
func forbidden(a auth.Attributes, reason string) error {
	msg := forbiddenMessage(a)
	if reason != "" {
		msg += ": " + reason
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: a.APIGroup, Resource: a.Resource}, a.Name, errors.New(msg))
}
