package rbac

import (
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/glassplane/glassplane/controlplane/apiserver/auth"
)

// Source is where roles and bindings are read from; *Cache is one.
type Source interface {
	GetRole(namespace, name string) (*rbacv1.Role, error)
	GetClusterRole(name string) (*rbacv1.ClusterRole, error)
	ListRoleBindings(namespace string) []*rbacv1.RoleBinding
	ListClusterRoleBindings() []*rbacv1.ClusterRoleBinding
}

// visitor sees each rule that applies to a user with the binding it came
// from, or an error resolving a binding's role; returning false stops.
type visitor func(source fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool

// visitRulesFor walks the rules that apply to u in namespace ("" for the
// cluster scope): first those of cluster role bindings, then those of the
// namespace's role bindings, as Kubernetes' DefaultRuleResolver does.
func visitRulesFor(src Source, u *auth.User, namespace string, visit visitor) {
	for _, b := range src.ListClusterRoleBindings() {
		i, ok := appliesTo(u, b.Subjects, "")
		if !ok {
			continue
		}
		rules, err := roleRefRules(src, b.RoleRef, "")
		if err != nil {
			if !visit(nil, nil, err) {
				return
			}
			continue
		}
		d := &clusterRoleBindingDescriber{binding: b, subject: &b.Subjects[i]}
		for j := range rules {
			if !visit(d, &rules[j], nil) {
				return
			}
		}
	}
	if namespace == "" {
		return
	}
	for _, b := range src.ListRoleBindings(namespace) {
		i, ok := appliesTo(u, b.Subjects, namespace)
		if !ok {
			continue
		}
		rules, err := roleRefRules(src, b.RoleRef, namespace)
		if err != nil {
			if !visit(nil, nil, err) {
				return
			}
			continue
		}
		d := &roleBindingDescriber{binding: b, subject: &b.Subjects[i]}
		for j := range rules {
			if !visit(d, &rules[j], nil) {
				return
			}
		}
	}
}

// RulesFor returns every rule u holds in namespace ("" for cluster scope
// only), and the errors met resolving bindings (the rules are then
// incomplete but still valid: rules only ever add permissions).
func RulesFor(src Source, u *auth.User, namespace string) ([]rbacv1.PolicyRule, []error) {
	var rules []rbacv1.PolicyRule
	var errs []error
	visitRulesFor(src, u, namespace, func(_ fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil {
			rules = append(rules, *rule)
		}
		if err != nil {
			errs = append(errs, err)
		}
		return true
	})
	return rules, errs
}

// roleRefRules resolves a binding's roleRef to its rules.
func roleRefRules(src Source, ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	switch ref.Kind {
	case "Role":
		r, err := src.GetRole(namespace, ref.Name)
		if err != nil {
			return nil, err
		}
		return r.Rules, nil
	case "ClusterRole":
		r, err := src.GetClusterRole(ref.Name)
		if err != nil {
			return nil, err
		}
		return r.Rules, nil
	}
	return nil, fmt.Errorf("unsupported role reference kind: %q", ref.Kind)
}

// appliesTo returns the index of the first subject that names u.
func appliesTo(u *auth.User, subjects []rbacv1.Subject, namespace string) (int, bool) {
	for i := range subjects {
		if appliesToUser(u, &subjects[i], namespace) {
			return i, true
		}
	}
	return 0, false
}

func appliesToUser(u *auth.User, s *rbacv1.Subject, namespace string) bool {
	switch s.Kind {
	case rbacv1.UserKind:
		return u.Name == s.Name
	case rbacv1.GroupKind:
		return slices.Contains(u.Groups, s.Name)
	case rbacv1.ServiceAccountKind:
		ns := namespace
		if s.Namespace != "" {
			ns = s.Namespace
		}
		return ns != "" && u.Name == ServiceAccountUsername(ns, s.Name)
	}
	return false
}

// ServiceAccountUsername is the user name of a service account:
// system:serviceaccount:<namespace>:<name>.
func ServiceAccountUsername(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

func describeSubject(s *rbacv1.Subject, bindingNamespace string) string {
	if s.Kind == rbacv1.ServiceAccountKind {
		ns := s.Namespace
		if ns == "" {
			ns = bindingNamespace
		}
		return fmt.Sprintf("%s %q", s.Kind, s.Name+"/"+ns)
	}
	return fmt.Sprintf("%s %q", s.Kind, s.Name)
}

type clusterRoleBindingDescriber struct {
	binding *rbacv1.ClusterRoleBinding
	subject *rbacv1.Subject
}

func (d *clusterRoleBindingDescriber) String() string {
	return fmt.Sprintf("ClusterRoleBinding %q of %s %q to %s", d.binding.Name, d.binding.RoleRef.Kind, d.binding.RoleRef.Name, describeSubject(d.subject, ""))
}

type roleBindingDescriber struct {
	binding *rbacv1.RoleBinding
	subject *rbacv1.Subject
}

func (d *roleBindingDescriber) String() string {
	return fmt.Sprintf("RoleBinding %q of %s %q to %s", d.binding.Name+"/"+d.binding.Namespace, d.binding.RoleRef.Kind, d.binding.RoleRef.Name, describeSubject(d.subject, d.binding.Namespace))
}
