package apiserver

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/glassplane/glassplane/controlplane/apiserver/audit"
	"github.com/glassplane/glassplane/controlplane/apiserver/auth"
)

// Impersonation headers, as kubectl --as, --as-group and --as-uid send them.
const (
	headerImpersonateUser        = authenticationv1.ImpersonateUserHeader
	headerImpersonateGroup       = authenticationv1.ImpersonateGroupHeader
	headerImpersonateUID         = authenticationv1.ImpersonateUIDHeader
	headerImpersonateExtraPrefix = authenticationv1.ImpersonateUserExtraHeaderPrefix
)

const (
	serviceAccountPrefix = "system:serviceaccount:"
	userAnonymous        = "system:anonymous"
	groupUnauthenticated = "system:unauthenticated"
)

// impersonate honours the impersonation headers as kube-apiserver's
// WithImpersonation filter does: the authenticated user must be allowed to
// "impersonate" each user (or service account), group, uid and extra value
// asked for, and the request then proceeds as that user. It answers the
// request and returns false when impersonation is refused.
func (q *request) impersonate() bool {
	h := q.r.Header
	userName := h.Get(headerImpersonateUser)
	groups := h.Values(headerImpersonateGroup)
	uid := h.Get(headerImpersonateUID)
	extra := map[string][]string{}
	for key, values := range h {
		if !strings.HasPrefix(key, headerImpersonateExtraPrefix) {
			continue
		}
		k, err := url.PathUnescape(strings.TrimPrefix(key, headerImpersonateExtraPrefix))
		if err != nil {
			q.fail(stageAuthentication, apierrors.NewBadRequest(fmt.Sprintf("malformed %s header %q: %v", headerImpersonateExtraPrefix, key, err)))
			return false
		}
		extra[strings.ToLower(k)] = append(extra[strings.ToLower(k)], values...)
	}
	if userName == "" {
		if len(groups) > 0 || uid != "" || len(extra) > 0 {
			q.fail(stageAuthentication, apierrors.NewBadRequest("requested impersonation of groups, a uid or extra values without impersonating a user"))
			return false
		}
		return true
	}
	q.enter(stageAuthorization)
	var checks []auth.Attributes
	check := func(a auth.Attributes) {
		a.User, a.Verb, a.ResourceRequest = q.user, "impersonate", true
		checks = append(checks, a)
	}
	sa, isSA := strings.CutPrefix(userName, serviceAccountPrefix)
	saNamespace, saName, saOK := strings.Cut(sa, ":")
	if isSA && saOK {
		check(auth.Attributes{Resource: "serviceaccounts", Namespace: saNamespace, Name: saName, APIVersion: "v1"})
		if len(groups) == 0 {
			groups = []string{"system:serviceaccounts", "system:serviceaccounts:" + saNamespace}
		}
	} else {
		check(auth.Attributes{Resource: "users", Name: userName, APIVersion: "v1"})
	}
	for _, g := range h.Values(headerImpersonateGroup) {
		check(auth.Attributes{Resource: "groups", Name: g, APIVersion: "v1"})
	}
	if uid != "" {
		check(auth.Attributes{Resource: "uids", Name: uid, APIGroup: authenticationv1.GroupName, APIVersion: "v1"})
	}
	for k, values := range extra {
		for _, v := range values {
			check(auth.Attributes{Resource: "userextras", Subresource: k, Name: v, APIGroup: authenticationv1.GroupName, APIVersion: "v1"})
		}
	}
	for _, a := range checks {
		ok, reason, err := q.s.allowed(q.ctx, a)
		if ok {
			continue
		}
		if err != nil {
			q.fail(stageAuthorization, apierrors.NewInternalError(err))
			return false
		}
		q.ev.Annotations[audit.AnnotationDecision] = "forbid"
		if reason != "" {
			q.ev.Annotations[audit.AnnotationReason] = reason
		}
		q.fail(stageAuthorization, forbidden(a, reason))
		return false
	}
	if userName == userAnonymous {
		if !slices.Contains(groups, groupUnauthenticated) {
			groups = append(groups, groupUnauthenticated)
		}
	} else if !slices.Contains(groups, auth.GroupAuthenticated) {
		groups = append(groups, auth.GroupAuthenticated)
	}
	as := &auth.User{Name: userName, UID: uid, Groups: groups, Authenticator: q.user.Authenticator}
	if len(extra) > 0 {
		as.Extra = extra
	}
	q.ev.ImpersonatedUser = &audit.UserInfo{Username: as.Name, UID: as.UID, Groups: as.Groups, Extra: audit.ExtraOf(as.Extra)}
	q.user = as
	q.ctx = auth.WithUser(q.ctx, as)
	return true
}
