package apiserver

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/glassplane/glassplane/controlplane/apiserver/admission"
	"github.com/glassplane/glassplane/controlplane/apiserver/auth"
)

// preventEscalation refuses a Role, ClusterRole, RoleBinding or
// ClusterRoleBinding write that would grant permissions the user does not
// hold, as kube-apiserver's RBAC storage does: system:masters may write
// anything; a role may be written by a user allowed to "escalate" it or
// holding all its rules; a binding by a user allowed to "bind" its role or
// holding all the role's rules. An update that leaves the rules (or the
// roleRef) as they were is not checked, so that controllers may change
// metadata.
func (q *request) preventEscalation(op admission.Operation, obj, old runtime.Object) error {
	if q.s.rbac == nil || q.res.GVK.Group != rbacv1.GroupName || obj == nil || (op != admission.Create && op != admission.Update) {
		return nil
	}
	if slices.Contains(q.user.Groups, auth.GroupMasters) {
		return nil
	}
	q.enter(stageAuthorization)
	var (
		name, namespace string
		rules           []rbacv1.PolicyRule
		ref             *rbacv1.RoleRef
		unchanged       bool
	)
	switch o := obj.(type) {
	case *rbacv1.Role:
		name, namespace, rules = o.Name, o.Namespace, o.Rules
		if prev, ok := old.(*rbacv1.Role); ok {
			unchanged = equality.Semantic.DeepEqual(prev.Rules, o.Rules)
		}
	case *rbacv1.ClusterRole:
		name, rules = o.Name, o.Rules
		if prev, ok := old.(*rbacv1.ClusterRole); ok {
			unchanged = equality.Semantic.DeepEqual(prev.Rules, o.Rules)
		}
	case *rbacv1.RoleBinding:
		name, namespace, ref = o.Name, o.Namespace, &o.RoleRef
		if prev, ok := old.(*rbacv1.RoleBinding); ok {
			unchanged = prev.RoleRef == o.RoleRef
		}
	case *rbacv1.ClusterRoleBinding:
		name, ref = o.Name, &o.RoleRef
		if prev, ok := old.(*rbacv1.ClusterRoleBinding); ok {
			unchanged = prev.RoleRef == o.RoleRef
		}
	default:
		return nil
	}
	if unchanged {
		return nil
	}
	if ref == nil {
		ok, _, err := q.s.allowed(q.ctx, auth.Attributes{
			User: q.user, Verb: "escalate", ResourceRequest: true, APIGroup: rbacv1.GroupName, APIVersion: "v1",
			Resource: q.res.Resource, Namespace: namespace, Name: name,
		})
		if ok {
			return nil
		}
		if err != nil {
			return apierrors.NewInternalError(err)
		}
	} else {
		roleResource := "clusterroles"
		if ref.Kind == "Role" {
			roleResource = "roles"
		}
		ok, _, err := q.s.allowed(q.ctx, auth.Attributes{
			User: q.user, Verb: "bind", ResourceRequest: true, APIGroup: rbacv1.GroupName, APIVersion: "v1",
			Resource: roleResource, Namespace: namespace, Name: ref.Name,
		})
		if ok {
			return nil
		}
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		rules, err = q.s.rbac.RoleRefRules(*ref, namespace)
		if err != nil {
			return err
		}
	}
	if err := q.s.rbac.ConfirmNoEscalation(q.user, namespace, rules); err != nil {
		return apierrors.NewForbidden(q.res.GroupResource(), name, err)
	}
	return nil
}
