package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/glassplane/glassplane/controlplane/apiserver/admission"
	"github.com/glassplane/glassplane/controlplane/apiserver/auth"
	"github.com/glassplane/glassplane/controlplane/apiserver/auth/node"
)

// TokenRequest limits, as kube-apiserver's.
const (
	// DefaultTokenExpirationSeconds is a TokenRequest's lifetime unless it
	// asks for another.
	DefaultTokenExpirationSeconds = 60 * 60
	minTokenExpirationSeconds     = 10 * 60
	maxTokenExpirationSeconds     = 1 << 32
)

var tokenRequestKind = authenticationv1.SchemeGroupVersion.WithKind("TokenRequest")

// setUpAuthentication builds the ServiceAccount token issuer and, unless
// Config.Authenticator overrides it, the authenticator chain: x509 client
// certificates, then bearer tokens (the static token file, then
// ServiceAccount JWTs), then anonymous when allowed.
func (s *Server) setUpAuthentication() error {
	if s.cfg.ServiceAccountKey != nil {
		tokens, err := auth.NewServiceAccountTokens(s.cfg.ServiceAccountKey, s.cfg.ServiceAccountIssuer, nil, serviceAccountGetter{s})
		if err != nil {
			return err
		}
		s.saTokens = tokens
	}
	if s.authn != nil {
		return nil
	}
	chain := auth.Union{&auth.X509{ClientCA: s.cfg.ClientCA}}
	bearer := &auth.BearerToken{Tokens: s.cfg.TokenAuthenticators}
	if s.saTokens != nil {
		bearer.Tokens = append(bearer.Tokens, s.saTokens)
	}
	if len(bearer.Tokens) > 0 {
		chain = append(chain, bearer)
	}
	s.authn = chain
	if s.cfg.AnonymousAuth {
		s.authn = auth.WithAnonymous(chain)
	}
	return nil
}

// defaultAdmission is the admission chain unless Config.Admission overrides
// it: kube-apiserver's default plugins in its order (LimitRanger after
// NamespaceLifecycle, RuntimeClass before DefaultIngressClass, ResourceQuota
// last), with ServiceAccount when
// Config.ServiceAccountAdmission is set.
func (s *Server) defaultAdmission() *admission.Chain {
	if !s.cfg.ServiceAccountAdmission {
		return admission.NewChain(
			admission.NewDefaultValues().WithPriorityClasses(namespaceLister{s}),
			admission.NewDefaultTolerationSeconds(),
			admission.NewNamespaceLifecycle(namespaceLister{s}),
			admission.NewLimitRanger(policyLookups{s}),
			admission.NewDefaultStorageClass(namespaceLister{s}),
			admission.NewStorageObjectInUseProtection(),
			admission.NewRuntimeClass(policyLookups{s}),
			admission.NewDefaultIngressClass(policyLookups{s}),
			s.dynamic.MutatingPolicy(),
			s.dynamic.Mutating(),
			admission.NewValidation(),
			admission.NewPersistentVolumeClaimResize(namespaceLister{s}),
			s.dynamic.ValidatingPolicy(),
			s.dynamic.ValidatingWebhook(),
			admission.NewResourceQuota(policyLookups{s}),
		)
	}
	return admission.NewChain(
		admission.NewDefaultValues().WithPriorityClasses(namespaceLister{s}),
		admission.NewDefaultTolerationSeconds(),
		admission.NewServiceAccount(serviceAccountGetter{s}, namespaceLister{s}),
		admission.NewNamespaceLifecycle(namespaceLister{s}),
		admission.NewLimitRanger(policyLookups{s}),
		admission.NewDefaultStorageClass(namespaceLister{s}),
		admission.NewStorageObjectInUseProtection(),
		admission.NewRuntimeClass(policyLookups{s}),
		admission.NewDefaultIngressClass(policyLookups{s}),
		s.dynamic.MutatingPolicy(),
		s.dynamic.Mutating(),
		admission.NewValidation(),
		admission.NewPersistentVolumeClaimResize(namespaceLister{s}),
		s.dynamic.ValidatingPolicy(),
		s.dynamic.ValidatingWebhook(),
		admission.NewResourceQuota(policyLookups{s}),
	)
}

// serviceAccountGetter reads ServiceAccounts from storage for token
// authentication and ServiceAccount admission.
type serviceAccountGetter struct{ s *Server }

// GetServiceAccount implements auth.ServiceAccountGetter and
// admission.ServiceAccountLister.
func (g serviceAccountGetter) GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, bool, error) {
	obj, found, err := g.s.lookups.serviceAccounts.get(ctx, g.s, namespace, name)
	if !found || err != nil {
		return nil, false, err
	}
	return obj.(*corev1.ServiceAccount), true, nil
}

// GetBoundObject implements auth.ServiceAccountGetter: the UID of the Pod,
// Secret or Node a token is bound to, read from storage.
func (g serviceAccountGetter) GetBoundObject(ctx context.Context, kind, namespace, name string) (string, bool, error) {
	res := g.s.byPath[corev1.SchemeGroupVersion.WithResource(strings.ToLower(kind)+"s")]
	if res == nil {
		return "", false, fmt.Errorf("no resource for kind %q", kind)
	}
	obj, err := g.s.getFromStore(ctx, res, namespace, name)
	if apierrors.IsNotFound(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", false, err
	}
	return string(m.GetUID()), true, nil
}

// boundObjects resolves a TokenRequest's boundObjectRef as kube-apiserver's
// TokenREST does: a Pod running as the ServiceAccount (with the Node it is
// bound to, for information), a Secret or a Node, whose UID must match the
// reference's when it gives one.
func (q *request) boundObjects(sa string, ref *authenticationv1.BoundObjectReference) (auth.BoundObjects, error) {
	var bound auth.BoundObjects
	if ref == nil {
		return bound, nil
	}
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	if gvk.Group != "" || (gvk.Kind != "Pod" && gvk.Kind != "Secret" && gvk.Kind != "Node") {
		return bound, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", gvk.String()))
	}
	namespace := q.info.Namespace
	if gvk.Kind == "Node" {
		namespace = ""
	}
	res := q.s.byPath[corev1.SchemeGroupVersion.WithResource(strings.ToLower(gvk.Kind)+"s")]
	obj, err := q.s.getFromStore(q.ctx, res, namespace, ref.Name)
	if err != nil {
		return bound, err
	}
	m, _ := meta.Accessor(obj)
	uid := m.GetUID()
	claim := &auth.ClaimsObject{Name: m.GetName(), UID: string(uid)}
	switch o := obj.(type) {
	case *corev1.Pod:
		// A pod admitted without the ServiceAccount plugin runs as default.
		if podSA := o.Spec.ServiceAccountName; podSA != sa && (podSA != "" || sa != "default") {
			return bound, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", sa))
		}
		bound.Pod = claim
		if nodeName := o.Spec.NodeName; nodeName != "" {
			bound.Node = &auth.ClaimsObject{Name: nodeName}
			if uid, found, err := (serviceAccountGetter{q.s}).GetBoundObject(q.ctx, "Node", "", nodeName); err == nil && found {
				bound.Node.UID = uid
			}
		}
	case *corev1.Secret:
		bound.Secret = claim
	case *corev1.Node:
		bound.Node = claim
	}
	if ref.UID != "" && ref.UID != uid {
		return bound, apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, ref.Name,
			fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	return bound, nil
}

// restrictNodeToken is NodeRestriction's rule for TokenRequests (with
// RBAC on): a node asks only for tokens bound to a pod scheduled to it.
func (q *request) restrictNodeToken(sa string, bound auth.BoundObjects) error {
	nodeName, isNode := node.Identity(q.user)
	if !q.s.cfg.RBAC || !isNode {
		return nil
	}
	gr := q.res.GroupResource()
	if bound.Pod == nil {
		return apierrors.NewForbidden(gr, sa, errors.New("node requested token not bound to a pod"))
	}
	if bound.Node == nil || bound.Node.Name != nodeName {
		return apierrors.NewForbidden(gr, sa, errors.New("node requested token bound to a pod scheduled on a different node"))
	}
	return nil
}

func tokenSubresource() *subresource {
	return &subresource{Name: "token", Kind: tokenRequestKind, Verbs: []string{"create"}, create: (*request).createToken}
}

// createToken serves POST serviceaccounts/<name>/token: it issues a
// ServiceAccount token for a TokenRequest, as kube-apiserver's TokenREST
// does. The token is never recorded in the audit event.
func (q *request) createToken() error {
	if q.s.saTokens == nil {
		return errNoRoute()
	}
	dryRun, err := q.dryRun()
	if err != nil {
		return err
	}
	q.enter(stageDecoding)
	body, err := q.readBody()
	if err != nil {
		return err
	}
	in, raw, err := q.decodeBody(body, tokenRequestKind)
	if err != nil {
		return err
	}
	q.recordObject(raw)
	tr := in.(*authenticationv1.TokenRequest)
	if errs := validateTokenRequest(tr, q.info.Namespace, q.info.Name); len(errs) > 0 {
		return apierrors.NewInvalid(tokenRequestKind.GroupKind(), q.info.Name, errs)
	}
	q.enter(stageEtcd)
	sa, found, err := serviceAccountGetter{q.s}.GetServiceAccount(q.ctx, q.info.Namespace, q.info.Name)
	if err != nil {
		return err
	}
	if !found {
		return apierrors.NewNotFound(q.res.GroupResource(), q.info.Name)
	}
	q.setObjectRef(sa)
	bound, err := q.boundObjects(sa.Name, tr.Spec.BoundObjectRef)
	if err != nil {
		return err
	}
	if err := q.restrictNodeToken(sa.Name, bound); err != nil {
		return err
	}
	if len(tr.Spec.Audiences) == 0 {
		tr.Spec.Audiences = q.s.saTokens.Audiences()
	}
	out := &authenticationv1.TokenRequest{
		ObjectMeta: metav1.ObjectMeta{Name: sa.Name, Namespace: sa.Namespace, CreationTimestamp: metav1.Now()},
		Spec:       tr.Spec,
	}
	out.SetGroupVersionKind(tokenRequestKind)
	if dryRun {
		q.respond(http.StatusCreated, out)
		return nil
	}
	token, exp, err := q.s.saTokens.Issue(sa, tr.Spec.Audiences, time.Duration(*tr.Spec.ExpirationSeconds)*time.Second, bound)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	out.Status = authenticationv1.TokenRequestStatus{Token: token, ExpirationTimestamp: metav1.NewTime(exp)}
	q.respond(http.StatusCreated, out)
	return nil
}

// validateTokenRequest defaults expirationSeconds and checks the request
// with kube-apiserver's rules and messages.
func validateTokenRequest(tr *authenticationv1.TokenRequest, namespace, name string) field.ErrorList {
	var errs field.ErrorList
	if tr.Name != "" && tr.Name != name {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), tr.Name, "must match the service account name if specified"))
	}
	if tr.Namespace != "" && tr.Namespace != namespace {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "namespace"), tr.Namespace, "must match the service account namespace if specified"))
	}
	if tr.Spec.ExpirationSeconds == nil {
		seconds := int64(DefaultTokenExpirationSeconds)
		tr.Spec.ExpirationSeconds = &seconds
	}
	path := field.NewPath("spec", "expirationSeconds")
	switch seconds := *tr.Spec.ExpirationSeconds; {
	case seconds < minTokenExpirationSeconds:
		errs = append(errs, field.Invalid(path, seconds, "may not specify a duration less than 10 minutes"))
	case seconds > maxTokenExpirationSeconds:
		errs = append(errs, field.Invalid(path, seconds, "may not specify a duration larger than 2^32 seconds"))
	}
	return errs
}
