package rbac

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/glassplane/glassplane/controlplane/apiserver/auth"
)

// Authorizer is Kubernetes' RBAC authorizer: it allows a request when a rule
// bound to the user allows it, and otherwise has no opinion.
type Authorizer struct {
	src Source
}

var _ auth.Authorizer = (*Authorizer)(nil)

// New returns an RBAC authorizer reading roles and bindings from src.
func New(src Source) *Authorizer { return &Authorizer{src: src} }

// Authorize implements auth.Authorizer. An allow's reason names the binding,
// role and subject that allowed it; a denial's reason is empty unless a
// binding named a role that could not be resolved.
func (a *Authorizer) Authorize(_ context.Context, attrs auth.Attributes) (auth.Decision, string, error) {
	if attrs.User == nil {
		return auth.DecisionNoOpinion, "", nil
	}
	var (
		reason string
		errs   []error
	)
	visitRulesFor(a.src, attrs.User, attrs.Namespace, func(source fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil && RuleAllows(attrs, rule) {
			reason = "RBAC: allowed by " + source.String()
			return false
		}
		if err != nil {
			errs = append(errs, err)
		}
		return true
	})
	if reason != "" {
		return auth.DecisionAllow, reason, nil
	}
	if len(errs) > 0 {
		return auth.DecisionNoOpinion, fmt.Sprintf("RBAC: %v", utilerrors.NewAggregate(errs)), nil
	}
	return auth.DecisionNoOpinion, "", nil
}

// RulesFor returns every rule u holds in namespace, for
// SelfSubjectRulesReview and the escalation check.
func (a *Authorizer) RulesFor(u *auth.User, namespace string) ([]rbacv1.PolicyRule, []error) {
	return RulesFor(a.src, u, namespace)
}

// RoleRefRules resolves a binding's roleRef in namespace ("" for a
// ClusterRoleBinding); the error is a NotFound for a missing role.
func (a *Authorizer) RoleRefRules(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	return roleRefRules(a.src, ref, namespace)
}

// ConfirmNoEscalation returns nil when u holds every permission in rules in
// namespace, and otherwise Kubernetes' error naming what u lacks:
// user "alice" (groups=[...]) is attempting to grant RBAC permissions not
// currently held: ...
func (a *Authorizer) ConfirmNoEscalation(u *auth.User, namespace string, rules []rbacv1.PolicyRule) error {
	owner, errs := a.RulesFor(u, namespace)
	ok, missing := Covers(owner, rules)
	if ok {
		return nil
	}
	var descs []string
	for _, r := range CompactRules(missing) {
		d := CompactString(r)
		if !slices.Contains(descs, d) {
			descs = append(descs, d)
		}
	}
	slices.Sort(descs)
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s", u.Name, u.Groups, strings.Join(descs, "\n"))
	if len(errs) > 0 {
		msg += fmt.Sprintf("; resolution errors: %v", errs)
	}
	return errors.New(msg)
}
