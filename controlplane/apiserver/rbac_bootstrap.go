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

// bootstrapRBAC creates the bootstrap cluster roles and bindings, and the
// roles and bindings of namespaces (rbac.Roles, rbac.RoleBindings), that are
// missing and brings back the rules and subjects of those still marked
// rbac.authorization.kubernetes.io/autoupdate=true, as kube-apiserver's
// rbac/bootstrap-roles post-start hook does. It is idempotent.
func (s *Server) bootstrapRBAC(ctx context.Context) error {
	roles := s.byPath[rbacv1.SchemeGroupVersion.WithResource("clusterroles")]
	bindings := s.byPath[rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings")]
	nsRoles := s.byPath[rbacv1.SchemeGroupVersion.WithResource("roles")]
	nsBindings := s.byPath[rbacv1.SchemeGroupVersion.WithResource("rolebindings")]
	for _, want := range rbac.ClusterRoles() {
		err := s.reconcile(ctx, roles, want, func(cur runtime.Object) bool {
			r := cur.(*rbacv1.ClusterRole)
			if equality.Semantic.DeepEqual(r.Rules, want.Rules) {
				return false
			}
			r.Rules = want.Rules
			return true
		})
		if err != nil {
			return err
		}
	}
	for _, want := range rbac.ClusterRoleBindings() {
		err := s.reconcile(ctx, bindings, want, func(cur runtime.Object) bool {
			b := cur.(*rbacv1.ClusterRoleBinding)
			if b.RoleRef != want.RoleRef || equality.Semantic.DeepEqual(b.Subjects, want.Subjects) {
				return false
			}
			b.Subjects = want.Subjects
			return true
		})
		if err != nil {
			return err
		}
	}
	for _, want := range rbac.Roles() {
		err := s.reconcile(ctx, nsRoles, want, func(cur runtime.Object) bool {
			r := cur.(*rbacv1.Role)
			if equality.Semantic.DeepEqual(r.Rules, want.Rules) {
				return false
			}
			r.Rules = want.Rules
			return true
		})
		if err != nil {
			return err
		}
	}
	for _, want := range rbac.RoleBindings() {
		err := s.reconcile(ctx, nsBindings, want, func(cur runtime.Object) bool {
			b := cur.(*rbacv1.RoleBinding)
			if b.RoleRef != want.RoleRef || equality.Semantic.DeepEqual(b.Subjects, want.Subjects) {
				return false
			}
			b.Subjects = want.Subjects
			return true
		})
		if err != nil {
			return err
		}
	}
	return nil
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
		s.log.Debug("created bootstrap RBAC object", "resource", res.Resource, "name", name)
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
			s.log.Info("reconciled bootstrap RBAC object", "resource", res.Resource, "name", name)
			return nil
		} else if !apierrors.IsConflict(storageError(res, name, err)) {
			return fmt.Errorf("failed to update %s %q: %w", res.Resource, name, err)
		}
	}
	return fmt.Errorf("failed to update %s %q: %w", res.Resource, name, errModified)
}
