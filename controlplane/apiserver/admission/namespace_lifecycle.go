package admission

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/glassplane/glassplane/controlplane/apiserver/auth/rbac"
)

// NamespaceLifecyclePluginName is the name kube-apiserver gives the plugin.
const NamespaceLifecyclePluginName = "NamespaceLifecycle"

// NamespaceLister reports the phase of a namespace, reading storage (not a
// possibly stale cache) so a just-deleted namespace is seen as Terminating.
type NamespaceLister interface {
	GetNamespacePhase(ctx context.Context, name string) (phase corev1.NamespacePhase, found bool, err error)
}

// NamespaceLifecycle refuses writes into namespaces that do not exist,
// creates in namespaces being terminated, and deletion of the namespaces
// kube-apiserver keeps forever (default, kube-system, kube-public) and of
// Glassplane's own (glassplane-system).
type NamespaceLifecycle struct {
	namespaces NamespaceLister
	immortal   sets.Set[string]
}

var _ ValidationInterface = &NamespaceLifecycle{}

// NewNamespaceLifecycle returns the plugin reading namespaces through lister.
func NewNamespaceLifecycle(namespaces NamespaceLister) *NamespaceLifecycle {
	return &NamespaceLifecycle{
		namespaces: namespaces,
		immortal:   sets.New(metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, rbac.NamespaceGlassplaneSystem),
	}
}

// Name implements Plugin.
func (l *NamespaceLifecycle) Name() string { return NamespaceLifecyclePluginName }

var namespaceGroupKind = schema.GroupKind{Kind: "Namespace"}

// Validate implements ValidationInterface with the rules of kube-apiserver's
// NamespaceLifecycle plugin and its exact error texts.
func (l *NamespaceLifecycle) Validate(ctx context.Context, a *Attributes) error {
	if a.Operation != Create && a.Operation != Update && a.Operation != Delete {
		return nil
	}
	isNamespace := a.Kind.GroupKind() == namespaceGroupKind
	if a.Operation == Delete && isNamespace && l.immortal.Has(a.Name) {
		return apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, fmt.Errorf("this namespace may not be deleted"))
	}
	if isNamespace || a.Namespace == "" || a.Operation == Delete {
		return nil
	}
	if a.Resource.Group == "authorization.k8s.io" && a.Resource.Resource == "localsubjectaccessreviews" {
		return nil
	}
	phase, found, err := l.namespaces.GetNamespacePhase(ctx, a.Namespace)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("failed to get namespace %q: %w", a.Namespace, err))
	}
	if !found {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, a.Namespace)
	}
	if a.Operation == Create && phase == corev1.NamespaceTerminating {
		serr := apierrors.NewForbidden(a.Resource.GroupResource(), objectNameForError(a),
			fmt.Errorf("unable to create new content in namespace %s because it is being terminated", a.Namespace))
		serr.ErrStatus.Details.Causes = append(serr.ErrStatus.Details.Causes, metav1.StatusCause{
			Type:    corev1.NamespaceTerminatingCause,
			Message: fmt.Sprintf("namespace %s is being terminated", a.Namespace),
			Field:   "metadata.namespace",
		})
		return serr
	}
	return nil
}

// objectNameForError names the object in a Forbidden error the way
// kube-apiserver's admission.NewForbidden does: its name, else its
// generateName, else "Unknown".
func objectNameForError(a *Attributes) string {
	if a.Object != nil {
		if m, err := meta.Accessor(a.Object); err == nil {
			if m.GetName() != "" {
				return m.GetName()
			}
			if m.GetGenerateName() != "" {
				return m.GetGenerateName()
			}
		}
	}
	if a.Name != "" {
		return a.Name
	}
	return "Unknown"
}
