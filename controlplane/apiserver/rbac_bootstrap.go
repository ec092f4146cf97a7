package apiserver

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/glassplane/glassplane/controlplane/apiserver/auth/rbac"
)

// bootstrapRBAC creates the bootstrap roles, cluster roles and bindings that are
// missing and brings back the rules and subjects of those still marked
// rbac.authorization.kubernetes.io/autoupdate=true, as kube-apiserver's
// rbac/bootstrap-roles post-start hook does. It is idempotent.
func (s *Server) bootstrapRBAC(ctx context.Context) error {
	type bootstrap struct {
		res  *resource
		want runtime.Object
		fix  func(cur runtime.Object) bool
	}
	var all []bootstrap
	resource := func(name string) *resource { return s.byPath[rbacv1.SchemeGroupVersion.WithResource(name)] }
	for _, want := range rbac.ClusterRoles() {
		all = append(all, bootstrap{resource("clusterroles"), want, fixRules(want.Rules, func(o runtime.Object) *[]rbacv1.PolicyRule { return &o.(*rbacv1.ClusterRole).Rules })})
	}
	for _, want := range rbac.Roles() {
		all = append(all, bootstrap{resource("roles"), want, fixRules(want.Rules, func(o runtime.Object) *[]rbacv1.PolicyRule { return &o.(*rbacv1.Role).Rules })})
	}
	for _, want := range rbac.ClusterRoleBindings() {
		all = append(all, bootstrap{resource("clusterrolebindings"), want, fixSubjects(want.RoleRef, want.Subjects, func(o runtime.Object) (rbacv1.RoleRef, *[]rbacv1.Subject) {
			b := o.(*rbacv1.ClusterRoleBinding)
			return b.RoleRef, &b.Subjects
		})})
	}
	for _, b := range all {
		if err := s.reconcile(ctx, b.res, b.want, b.fix); err != nil {
			return err
		}
	}
	return nil
}

// fixRules brings back a role's rules (reached by rules) to want.
func fixRules(want []rbacv1.PolicyRule, rules func(runtime.Object) *[]rbacv1.PolicyRule) func(runtime.Object) bool {
	return func(cur runtime.Object) bool {
		r := rules(cur)
		if equality.Semantic.DeepEqual(*r, want) {
			return false
		}
		*r = want
		return true
	}
}

// fixSubjects brings back a binding's subjects to want, unless it now
// refers to another role (a roleRef cannot change).
func fixSubjects(ref rbacv1.RoleRef, want []rbacv1.Subject, of func(runtime.Object) (rbacv1.RoleRef, *[]rbacv1.Subject)) func(runtime.Object) bool {
	return func(cur runtime.Object) bool {
		curRef, subjects := of(cur)
		if curRef != ref || equality.Semantic.DeepEqual(*subjects, want) {
			return false
		}
		*subjects = want
		return true
	}
}

// reconcile creates want when missing; when it exists and may be
// auto-updated, fix changes it and reports whether it did.
func (s *Server) reconcile(ctx context.Context, res *resource, want runtime.Object, fix func(cur runtime.Object) bool) error {
	obj := want.DeepCopyObject()
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	namespace, name := m.GetNamespace(), m.GetName()
	prepareForCreate(res, obj)
	_, err = s.createInStore(ctx, res, obj)
	if err == nil {
		s.log.Debug("created bootstrap object", "resource", res.Resource, "name", name)
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create %s %q: %w", res.Resource, name, err)
	}
	for range maxWriteAttempts {
		kv, err := s.store.Get(ctx, key(res, namespace, name))
		if err != nil {
			return fmt.Errorf("failed to read %s %q: %w", res.Resource, name, storageError(res, name, err))
		}
		cur, err := decodeStored(res, kv.Value, kv.ModRevision)
		if err != nil {
			return err
		}
		cm, err := meta.Accessor(cur)
		if err != nil {
			return err
		}
		if cm.GetAnnotations()[rbac.AnnotationAutoupdate] == "false" || !fix(cur) {
			return nil
		}
		value, err := encodeForStorage(res, cur)
		if err != nil {
			return err
		}
		if _, err := s.store.Update(ctx, kv.Key, value, kv.ModRevision); err == nil {
			s.log.Info("reconciled bootstrap object", "resource", res.Resource, "name", name)
			return nil
		} else if !apierrors.IsConflict(storageError(res, name, err)) {
			return fmt.Errorf("failed to update %s %q: %w", res.Resource, name, err)
		}
	}
	return fmt.Errorf("failed to update %s %q: %w", res.Resource, name, errModified)
}
