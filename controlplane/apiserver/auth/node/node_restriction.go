package node

import (
	"context"
	"fmt"
	"maps"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/glassplane/glassplane/controlplane/apiserver/admission"
	"github.com/glassplane/glassplane/controlplane/apiserver/auth"
)

// RestrictionPluginName is the admission plugin's name, as in Kubernetes.
const RestrictionPluginName = "NodeRestriction"

// mirrorPodAnnotation marks a pod a node created from a static manifest.
const mirrorPodAnnotation = "kubernetes.io/config.mirror"

// Restriction is Kubernetes' NodeRestriction admission plugin: a node may
// change only its own Node and Lease and the pods bound to it.
type Restriction struct{}

var _ admission.ValidationInterface = Restriction{}

// NewRestriction returns the NodeRestriction plugin.
func NewRestriction() Restriction { return Restriction{} }

// Name implements admission.Plugin.
func (Restriction) Name() string { return RestrictionPluginName }

// Validate implements admission.ValidationInterface; requests of users that
// are not nodes pass untouched.
func (Restriction) Validate(_ context.Context, a *admission.Attributes) error {
	nodeName, isNode := Identity(&auth.User{Name: a.UserName, Groups: a.UserGroups})
	if !isNode {
		return nil
	}
	if nodeName == "" {
		return forbidden(a, fmt.Errorf("could not determine node from user %q", a.UserName))
	}
	switch a.Resource.GroupResource() {
	case corev1.Resource("pods"):
		switch a.Subresource {
		case "":
			return admitPod(nodeName, a)
		case "status":
			return admitPodStatus(nodeName, a)
		case "eviction":
			return nil
		}
		return forbidden(a, fmt.Errorf("unexpected pod subresource %q, only 'status' and 'eviction' are allowed", a.Subresource))
	case corev1.Resource("nodes"):
		if a.Name != nodeName {
			return forbidden(a, fmt.Errorf("node %q is not allowed to modify node %q", nodeName, a.Name))
		}
		if n, ok := a.Object.(*corev1.Node); ok && a.Operation == admission.Create && n.Spec.ConfigSource != nil {
			return forbidden(a, fmt.Errorf("node %q is not allowed to create pods with a non-nil configSource", nodeName))
		}
		return nil
	case coordinationv1.Resource("leases"):
		if a.Namespace != corev1.NamespaceNodeLease {
			return forbidden(a, fmt.Errorf("can only access leases in the %q system namespace", corev1.NamespaceNodeLease))
		}
		if a.Name != nodeName {
			return forbidden(a, fmt.Errorf("can only access node lease with the same name as the requesting node"))
		}
		return nil
	}
	return nil
}

func admitPod(nodeName string, a *admission.Attributes) error {
	switch a.Operation {
	case admission.Create:
		pod, ok := a.Object.(*corev1.Pod)
		if !ok {
			return forbidden(a, fmt.Errorf("unexpected type %T", a.Object))
		}
		if _, mirror := pod.Annotations[mirrorPodAnnotation]; !mirror {
			return forbidden(a, fmt.Errorf("pod does not have %q annotation, node %q can only create mirror pods", mirrorPodAnnotation, nodeName))
		}
		if pod.Spec.NodeName != nodeName {
			return forbidden(a, fmt.Errorf("node %q can only create pods with spec.nodeName set to itself", nodeName))
		}
		if len(pod.OwnerReferences) != 1 || pod.OwnerReferences[0].Kind != "Node" || pod.OwnerReferences[0].Name != nodeName {
			return forbidden(a, fmt.Errorf("node %q can only create pods with an owner reference set to itself", nodeName))
		}
		if pod.Spec.ServiceAccountName != "" {
			return forbidden(a, fmt.Errorf("node %q can not create pods that reference a service account", nodeName))
		}
		for _, resource := range []string{"secrets", "configmaps", "persistentvolumeclaims"} {
			if len(References(pod, resource)) > 0 {
				return forbidden(a, fmt.Errorf("node %q can not create pods that reference %s", nodeName, resource))
			}
		}
		return nil
	case admission.Delete:
		pod, ok := a.OldObject.(*corev1.Pod)
		if !ok {
			return forbidden(a, fmt.Errorf("unexpected type %T", a.OldObject))
		}
		if pod.Spec.NodeName != nodeName {
			return forbidden(a, fmt.Errorf("node %q can only delete pods with spec.nodeName set to itself", nodeName))
		}
		return nil
	}
	return forbidden(a, fmt.Errorf("unexpected operation %q, node %q can only create and delete mirror pods", a.Operation, nodeName))
}

func admitPodStatus(nodeName string, a *admission.Attributes) error {
	if a.Operation != admission.Update {
		return forbidden(a, fmt.Errorf("unexpected operation %q", a.Operation))
	}
	old, ok := a.OldObject.(*corev1.Pod)
	if !ok {
		return forbidden(a, fmt.Errorf("unexpected type %T", a.OldObject))
	}
	if old.Spec.NodeName != nodeName {
		return forbidden(a, fmt.Errorf("node %q can only update pod status for pods with spec.nodeName set to itself", nodeName))
	}
	if next, ok := a.Object.(*corev1.Pod); ok && !maps.Equal(old.Labels, next.Labels) {
		return forbidden(a, fmt.Errorf("node %q cannot update labels through pod status", nodeName))
	}
	return nil
}

// forbidden is admission.NewForbidden: a 403 naming the resource and object.
func forbidden(a *admission.Attributes, err error) error {
	return apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, err)
}
