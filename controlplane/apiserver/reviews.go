package apiserver

import (
	"errors"
	"fmt"
	"net/http"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/glassplane/glassplane/controlplane/apiserver/auth"
	"github.com/glassplane/glassplane/controlplane/apiserver/auth/node"
)

// authorizationResources are the rbac.authorization.k8s.io/v1 resources
// (stored under /registry/roles, /registry/rolebindings,
// /registry/clusterroles and /registry/clusterrolebindings) and the
// create-only review resources of authorization.k8s.io/v1 and
// authentication.k8s.io/v1, which are answered and never stored.
func authorizationResources() []*resource {
	rbacKind := func(kind string) schema.GroupVersionKind { return rbacv1.SchemeGroupVersion.WithKind(kind) }
	authz := func(kind string) schema.GroupVersionKind { return authorizationv1.SchemeGroupVersion.WithKind(kind) }
	create := []string{"create"}
	return []*resource{
		{GVK: rbacKind("ClusterRoleBinding"), Resource: "clusterrolebindings", Singular: "clusterrolebinding", Verbs: verbsAll, StorageResource: "clusterrolebindings"},
		{GVK: rbacKind("ClusterRole"), Resource: "clusterroles", Singular: "clusterrole", Verbs: verbsAll, StorageResource: "clusterroles"},
		{GVK: rbacKind("RoleBinding"), Resource: "rolebindings", Singular: "rolebinding", Namespaced: true, Verbs: verbsAll, StorageResource: "rolebindings"},
		{GVK: rbacKind("Role"), Resource: "roles", Singular: "role", Namespaced: true, Verbs: verbsAll, StorageResource: "roles"},
		{GVK: authz("LocalSubjectAccessReview"), Resource: "localsubjectaccessreviews", Singular: "localsubjectaccessreview", Namespaced: true, Verbs: create},
		{GVK: authz("SelfSubjectAccessReview"), Resource: "selfsubjectaccessreviews", Singular: "selfsubjectaccessreview", Verbs: create},
		{GVK: authz("SelfSubjectRulesReview"), Resource: "selfsubjectrulesreviews", Singular: "selfsubjectrulesreview", Verbs: create},
		{GVK: authz("SubjectAccessReview"), Resource: "subjectaccessreviews", Singular: "subjectaccessreview", Verbs: create},
		{GVK: authenticationv1.SchemeGroupVersion.WithKind("SelfSubjectReview"), Resource: "selfsubjectreviews", Singular: "selfsubjectreview", Verbs: create},
		{GVK: authenticationv1.SchemeGroupVersion.WithKind("TokenReview"), Resource: "tokenreviews", Singular: "tokenreview", Verbs: create},
	}
}

// reviewFunc answers one review object.
type reviewFunc func(q *request, in runtime.Object) (runtime.Object, error)

// reviews maps each review resource to its handler.
var reviews = map[string]reviewFunc{
	"selfsubjectaccessreviews":  (*request).selfSubjectAccessReview,
	"subjectaccessreviews":      (*request).subjectAccessReview,
	"localsubjectaccessreviews": (*request).localSubjectAccessReview,
	"selfsubjectrulesreviews":   (*request).selfSubjectRulesReview,
	"selfsubjectreviews":        (*request).selfSubjectReview,
	"tokenreviews":              (*request).tokenReview,
}

// review returns the handler when the request's resource is a review.
func (q *request) review() reviewFunc {
	if q.res.StorageResource != "" {
		return nil
	}
	return reviews[q.res.Resource]
}

// serveReview serves POST on a review resource: it decodes the review,
// fills in its status and answers 201 with it, storing nothing.
func (q *request) serveReview(handle reviewFunc) error {
	if q.info.Verb != "create" || q.info.Name != "" {
		return apierrors.NewMethodNotSupported(q.res.GroupResource(), q.info.Verb)
	}
	if q.res.Namespaced && q.info.Namespace == "" {
		return errNoRoute()
	}
	// A review has no table or metadata-only form: kube-apiserver's
	// storage for it converts to neither, and answers 406.
	if wantsAs(q.r.Header.Get("Accept")) != "" {
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable,
			Message: "the server was unable to respond with a content type that the client supports",
		}}
	}
	q.enter(stageDecoding)
	body, err := q.readBody()
	if err != nil {
		return err
	}
	in, raw, err := q.decodeBody(body, q.res.GVK)
	if err != nil {
		return err
	}
	q.recordObject(raw)
	out, err := handle(q, in)
	if err != nil {
		return err
	}
	out.GetObjectKind().SetGroupVersionKind(q.res.GVK)
	q.respond(http.StatusCreated, out)
	return nil
}

// reviewAttributes turns a review's spec into authorization attributes.
func reviewAttributes(u *auth.User, ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) auth.Attributes {
	if ra != nil {
		return auth.Attributes{
			User: u, Verb: ra.Verb, ResourceRequest: true, APIGroup: ra.Group, APIVersion: ra.Version,
			Namespace: ra.Namespace, Resource: ra.Resource, Subresource: ra.Subresource, Name: ra.Name,
		}
	}
	return auth.Attributes{User: u, Verb: nra.Verb, Path: nra.Path}
}

// decide answers an access review for attrs.
func (q *request) decide(attrs auth.Attributes) authorizationv1.SubjectAccessReviewStatus {
	d, reason, err := q.s.authz.Authorize(q.ctx, attrs)
	st := authorizationv1.SubjectAccessReviewStatus{Allowed: d == auth.DecisionAllow, Denied: d == auth.DecisionDeny, Reason: reason}
	if err != nil {
		st.EvaluationError = err.Error()
	}
	return st
}

func errNoAttributes(kind string) error {
	return apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind(kind).GroupKind(), "",
		field.ErrorList{field.Required(field.NewPath("spec", "resourceAttributes"), "exactly one of nonResourceAttributes or resourceAttributes must be specified")})
}

func (q *request) selfSubjectAccessReview(in runtime.Object) (runtime.Object, error) {
	r := in.(*authorizationv1.SelfSubjectAccessReview)
	if (r.Spec.ResourceAttributes == nil) == (r.Spec.NonResourceAttributes == nil) {
		return nil, errNoAttributes("SelfSubjectAccessReview")
	}
	r.Status = q.decide(reviewAttributes(q.user, r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes))
	return r, nil
}

// specUser is the user a SubjectAccessReview asks about.
func specUser(spec *authorizationv1.SubjectAccessReviewSpec) *auth.User {
	u := &auth.User{Name: spec.User, UID: spec.UID, Groups: spec.Groups}
	if len(spec.Extra) > 0 {
		u.Extra = map[string][]string{}
		for k, v := range spec.Extra {
			u.Extra[k] = []string(v)
		}
	}
	return u
}

func (q *request) subjectAccessReview(in runtime.Object) (runtime.Object, error) {
	r := in.(*authorizationv1.SubjectAccessReview)
	gk := authorizationv1.SchemeGroupVersion.WithKind("SubjectAccessReview").GroupKind()
	if (r.Spec.ResourceAttributes == nil) == (r.Spec.NonResourceAttributes == nil) {
		return nil, errNoAttributes("SubjectAccessReview")
	}
	if r.Spec.User == "" && len(r.Spec.Groups) == 0 {
		return nil, apierrors.NewInvalid(gk, "", field.ErrorList{field.Invalid(field.NewPath("spec", "user"), r.Spec.User, "at least one of user or group must be specified")})
	}
	r.Status = q.decide(reviewAttributes(specUser(&r.Spec), r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes))
	return r, nil
}

func (q *request) localSubjectAccessReview(in runtime.Object) (runtime.Object, error) {
	r := in.(*authorizationv1.LocalSubjectAccessReview)
	gk := authorizationv1.SchemeGroupVersion.WithKind("LocalSubjectAccessReview").GroupKind()
	if r.Spec.ResourceAttributes == nil || r.Spec.NonResourceAttributes != nil {
		return nil, apierrors.NewInvalid(gk, "", field.ErrorList{field.Required(field.NewPath("spec", "resourceAttributes"), "resourceAttributes are required for a LocalSubjectAccessReview")})
	}
	if r.Spec.User == "" && len(r.Spec.Groups) == 0 {
		return nil, apierrors.NewInvalid(gk, "", field.ErrorList{field.Invalid(field.NewPath("spec", "user"), r.Spec.User, "at least one of user or group must be specified")})
	}
	if r.Namespace == "" {
		r.Namespace = q.info.Namespace
	}
	if r.Spec.ResourceAttributes.Namespace == "" {
		r.Spec.ResourceAttributes.Namespace = q.info.Namespace
	}
	if r.Namespace != q.info.Namespace || r.Spec.ResourceAttributes.Namespace != q.info.Namespace {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("spec.resourceAttributes.namespace must match namespace: %v", q.info.Namespace))
	}
	r.Status = q.decide(reviewAttributes(specUser(&r.Spec), r.Spec.ResourceAttributes, nil))
	return r, nil
}

func (q *request) selfSubjectRulesReview(in runtime.Object) (runtime.Object, error) {
	r := in.(*authorizationv1.SelfSubjectRulesReview)
	if q.s.rbac == nil {
		r.Status = authorizationv1.SubjectRulesReviewStatus{
			ResourceRules:    []authorizationv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
			NonResourceRules: []authorizationv1.NonResourceRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
		}
		return r, nil
	}
	rules, errs := q.s.rbac.RulesFor(q.user, r.Spec.Namespace)
	st := authorizationv1.SubjectRulesReviewStatus{ResourceRules: []authorizationv1.ResourceRule{}, NonResourceRules: []authorizationv1.NonResourceRule{}}
	for _, rule := range rules {
		if len(rule.Resources) > 0 {
			st.ResourceRules = append(st.ResourceRules, authorizationv1.ResourceRule{
				Verbs: rule.Verbs, APIGroups: rule.APIGroups, Resources: rule.Resources, ResourceNames: rule.ResourceNames,
			})
		}
		if len(rule.NonResourceURLs) > 0 {
			st.NonResourceRules = append(st.NonResourceRules, authorizationv1.NonResourceRule{Verbs: rule.Verbs, NonResourceURLs: rule.NonResourceURLs})
		}
	}
	if _, isNode := node.Identity(q.user); isNode {
		st.Incomplete = true
		errs = append(errs, fmt.Errorf("node authorizer does not support user rule resolution"))
	}
	if len(errs) > 0 {
		msgs := make([]string, 0, len(errs))
		for _, err := range errs {
			msgs = append(msgs, err.Error())
		}
		slices.Sort(msgs)
		st.EvaluationError = fmt.Sprintf("%v", msgs)
	}
	r.Status = st
	return r, nil
}

func (q *request) selfSubjectReview(in runtime.Object) (runtime.Object, error) {
	r := in.(*authenticationv1.SelfSubjectReview)
	info := authenticationv1.UserInfo{Username: q.user.Name, UID: q.user.UID, Groups: q.user.Groups}
	if len(q.user.Extra) > 0 {
		info.Extra = map[string]authenticationv1.ExtraValue{}
		for k, v := range q.user.Extra {
			info.Extra[k] = v
		}
	}
	r.Status = authenticationv1.SelfSubjectReviewStatus{UserInfo: info}
	r.CreationTimestamp = metav1.Now()
	return r, nil
}

// tokenReview answers a TokenReview as kube-apiserver's: the token is put
// through the server's bearer-token authenticators (service account
// tokens, the static token file) and the user it stands for is returned;
// a token that does not authenticate is authenticated: false with why.
// Audiences are the API's own (service account tokens are valid for no
// other): status.audiences is spec.audiences' overlap with them, and a
// review asking only for others is not authenticated.
func (q *request) tokenReview(in runtime.Object) (runtime.Object, error) {
	r := in.(*authenticationv1.TokenReview)
	if r.Spec.Token == "" {
		return nil, apierrors.NewBadRequest("token is required for TokenReview in authentication")
	}
	apiAudiences := []string(nil)
	if q.s.saTokens != nil {
		apiAudiences = q.s.saTokens.Audiences()
	}
	audiences := apiAudiences
	if len(r.Spec.Audiences) > 0 {
		audiences = nil
		for _, a := range r.Spec.Audiences {
			if slices.Contains(apiAudiences, a) {
				audiences = append(audiences, a)
			}
		}
	}
	r.CreationTimestamp = metav1.Now()
	if len(audiences) == 0 && len(r.Spec.Audiences) > 0 {
		r.Status = authenticationv1.TokenReviewStatus{Error: fmt.Sprintf("token audiences %q is invalid for the target audiences %q", apiAudiences, r.Spec.Audiences)}
		return r, nil
	}
	probe, err := http.NewRequestWithContext(q.ctx, http.MethodGet, "/", nil)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	probe.Header.Set("Authorization", "Bearer "+r.Spec.Token)
	u, err := q.s.authn.Authenticate(probe)
	if err != nil || u == nil {
		msg := "[invalid bearer token, token lookup failed]"
		if err != nil && !errors.Is(err, auth.ErrNoIdentity) {
			msg = "[invalid bearer token, " + err.Error() + "]"
		}
		r.Status = authenticationv1.TokenReviewStatus{Error: msg}
		return r, nil
	}
	info := authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		info.Extra = map[string]authenticationv1.ExtraValue{}
		for k, v := range u.Extra {
			info.Extra[k] = v
		}
	}
	r.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: info, Audiences: audiences}
	return r, nil
}
