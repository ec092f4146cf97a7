package node

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/glassplane/glassplane/controlplane/apiserver/auth"
	"github.com/glassplane/glassplane/controlplane/apiserver/auth/rbac"
)

const (
	// GroupNodes is the group of every node identity.
	GroupNodes = "system:nodes"
	// UserPrefix starts a node's user name: system:node:<name>.
	UserPrefix = "system:node:"
)

// Identity returns the node a user is, as Kubernetes' NodeIdentifier does:
// isNode when the user is in system:nodes, and the node name when the user
// name is system:node:<name> ("" when it is not).
func Identity(u *auth.User) (name string, isNode bool) {
	if u == nil || !slices.Contains(u.Groups, GroupNodes) {
		return "", false
	}
	name, ok := strings.CutPrefix(u.Name, UserPrefix)
	if !ok {
		return "", true
	}
	return name, true
}

// Graph answers the question Kubernetes' node authorizer asks its graph of
// pods and the objects they use.
type Graph interface {
	// Related reports whether a pod bound to nodeName uses the object of
	// resource (see References) named namespace/name.
	Related(ctx context.Context, nodeName, namespace, resource, name string) (bool, error)
}

// Authorizer is Kubernetes' Node authorizer. It has no opinion on users that
// are not nodes.
type Authorizer struct {
	graph Graph
	rules []rbacv1.PolicyRule
}

var _ auth.Authorizer = (*Authorizer)(nil)

// NewAuthorizer returns a Node authorizer with Kubernetes' node rules.
func NewAuthorizer(graph Graph) *Authorizer {
	return &Authorizer{graph: graph, rules: rbac.NodeRules()}
}

// Authorize implements auth.Authorizer.
func (a *Authorizer) Authorize(ctx context.Context, attrs auth.Attributes) (auth.Decision, string, error) {
	nodeName, isNode := Identity(attrs.User)
	if !isNode {
		return auth.DecisionNoOpinion, "", nil
	}
	if nodeName == "" {
		return auth.DecisionNoOpinion, fmt.Sprintf("unknown node for user %q", attrs.User.Name), nil
	}
	if attrs.ResourceRequest {
		switch {
		case attrs.APIGroup == "" && (attrs.Resource == "secrets" || attrs.Resource == "configmaps"):
			return a.authorizeRead(ctx, nodeName, attrs)
		case attrs.APIGroup == "" && attrs.Resource == "persistentvolumeclaims" && attrs.Subresource == "":
			if attrs.Verb != "get" {
				return auth.DecisionNoOpinion, "can only get individual resources of this type", nil
			}
			return a.authorizeRelated(ctx, nodeName, attrs)
		case attrs.APIGroup == "" && attrs.Resource == "serviceaccounts" && attrs.Verb == "get" && attrs.Subresource == "":
			// The service account of a pod on the node (its UID goes
			// into the pod's PodCertificateRequests).
			return a.authorizeRelated(ctx, nodeName, attrs)
		case attrs.APIGroup == "" && attrs.Resource == "serviceaccounts":
			if attrs.Verb != "create" || attrs.Name == "" {
				return auth.DecisionNoOpinion, "can only create tokens for individual service accounts", nil
			}
			if attrs.Subresource != "token" {
				return auth.DecisionNoOpinion, "can only create token subresource of serviceaccount", nil
			}
			return a.authorizeRelated(ctx, nodeName, attrs)
		case attrs.APIGroup == "coordination.k8s.io" && attrs.Resource == "leases":
			return authorizeLease(nodeName, attrs)
		}
	}
	if rbac.RulesAllow(attrs, a.rules...) {
		return auth.DecisionAllow, "", nil
	}
	return auth.DecisionNoOpinion, "", nil
}

// authorizeRead allows get, list and watch of one named secret or configmap
// a pod on the node uses.
func (a *Authorizer) authorizeRead(ctx context.Context, nodeName string, attrs auth.Attributes) (auth.Decision, string, error) {
	switch attrs.Verb {
	case "get", "list", "watch":
	default:
		return auth.DecisionNoOpinion, "can only read resources of this type", nil
	}
	if attrs.Subresource != "" {
		return auth.DecisionNoOpinion, "cannot read subresource", nil
	}
	if attrs.Namespace == "" {
		return auth.DecisionNoOpinion, "can only read namespaced object of this type", nil
	}
	return a.authorizeRelated(ctx, nodeName, attrs)
}

// authorizeRelated allows the request when a pod bound to the node refers
// to the named object.
func (a *Authorizer) authorizeRelated(ctx context.Context, nodeName string, attrs auth.Attributes) (auth.Decision, string, error) {
	if attrs.Name == "" {
		return auth.DecisionNoOpinion, "No Object name found", nil
	}
	related, err := a.graph.Related(ctx, nodeName, attrs.Namespace, attrs.Resource, attrs.Name)
	if err != nil {
		return auth.DecisionNoOpinion, "", fmt.Errorf("failed to read the pods of node %q: %w", nodeName, err)
	}
	if related {
		return auth.DecisionAllow, "", nil
	}
	return auth.DecisionNoOpinion, fmt.Sprintf("no relationship found between node '%s' and this object", nodeName), nil
}

// authorizeLease allows a node its own Lease in kube-node-lease.
func authorizeLease(nodeName string, attrs auth.Attributes) (auth.Decision, string, error) {
	switch attrs.Verb {
	case "get", "create", "update", "patch", "delete":
	default:
		return auth.DecisionNoOpinion, "can only get, create, update, patch, or delete a node lease", nil
	}
	if attrs.Namespace != corev1.NamespaceNodeLease {
		return auth.DecisionNoOpinion, fmt.Sprintf("can only access leases in the %q system namespace", corev1.NamespaceNodeLease), nil
	}
	if attrs.Verb != "create" && attrs.Name != nodeName {
		return auth.DecisionNoOpinion, "can only access node lease with the same name as the requesting node", nil
	}
	return auth.DecisionAllow, "", nil
}

// RelatedResources are the resources a node reads through its pods.
var RelatedResources = []string{"secrets", "configmaps", "persistentvolumeclaims", "serviceaccounts"}

// References lists the names of the objects of resource (one of
// RelatedResources) that pod uses, in its namespace.
func References(pod *corev1.Pod, resource string) []string {
	var names []string
	add := func(n string) {
		if n != "" {
			names = append(names, n)
		}
	}
	spec := &pod.Spec
	switch resource {
	case "serviceaccounts":
		add(spec.ServiceAccountName)
		return names
	case "secrets":
		for _, s := range spec.ImagePullSecrets {
			add(s.Name)
		}
	}
	for _, vol := range spec.Volumes {
		switch resource {
		case "secrets":
			if vol.Secret != nil {
				add(vol.Secret.SecretName)
			}
		case "configmaps":
			if vol.ConfigMap != nil {
				add(vol.ConfigMap.Name)
			}
		case "persistentvolumeclaims":
			if vol.PersistentVolumeClaim != nil {
				add(vol.PersistentVolumeClaim.ClaimName)
			}
		}
		if vol.Projected != nil {
			for _, src := range vol.Projected.Sources {
				if resource == "secrets" && src.Secret != nil {
					add(src.Secret.Name)
				}
				if resource == "configmaps" && src.ConfigMap != nil {
					add(src.ConfigMap.Name)
				}
			}
		}
	}
	containers := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	for _, c := range spec.EphemeralContainers {
		containers = append(containers, corev1.Container{Env: c.Env, EnvFrom: c.EnvFrom})
	}
	for _, c := range containers {
		for _, e := range c.EnvFrom {
			if resource == "secrets" && e.SecretRef != nil {
				add(e.SecretRef.Name)
			}
			if resource == "configmaps" && e.ConfigMapRef != nil {
				add(e.ConfigMapRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if resource == "secrets" && e.ValueFrom.SecretKeyRef != nil {
				add(e.ValueFrom.SecretKeyRef.Name)
			}
			if resource == "configmaps" && e.ValueFrom.ConfigMapKeyRef != nil {
				add(e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
	}
	return names
}
