package node

import (
	"context"
	"fmt"
	"maps"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/glassplane/glassplane/controlplane/apiserver/admission"
	"github.com/glassplane/glassplane/controlplane/apiserver/auth"
)

// RestrictionPluginName is the admission plugin's name, as in Kubernetes.
const RestrictionPluginName = "NodeRestriction"

// mirrorPodAnnotation marks a pod a node created from a static manifest.
const mirrorPodAnnotation = "kubernetes.io/config.mirror"

// Restriction is Kubernetes' NodeRestriction admission plugin: a node may
// change only its own Node and Lease and the pods bound to it, and on its
// Node neither its taints nor labels reserved to the cluster's admins; it
// may ask for certificates (PodCertificateRequests) only for pods bound to
// it, under their service accounts.
type Restriction struct{ objects Objects }

// Objects reads the objects the plugin checks requests against; each
// returns a NotFound error for an object that does not exist.
type Objects interface {
	Node(ctx context.Context, name string) (*corev1.Node, error)
	Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
}

var _ admission.ValidationInterface = Restriction{}

// NewRestriction returns the NodeRestriction plugin.
func NewRestriction(objects Objects) Restriction { return Restriction{objects: objects} }

// Name implements admission.Plugin.
func (Restriction) Name() string { return RestrictionPluginName }

// Validate implements admission.ValidationInterface; requests of users that
// are not nodes pass untouched.
func (r Restriction) Validate(ctx context.Context, a *admission.Attributes) error {
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
		return admitNode(nodeName, a)
	case certificatesv1.Resource("podcertificaterequests"):
		return r.admitPodCertificateRequest(ctx, nodeName, a)
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

// admitPodCertificateRequest is upstream's rule for a node's
// PodCertificateRequest: created (never changed) by the node it names, with
// that node's UID, for a pod bound to it (not a mirror pod) and the pod's
// service account, UIDs matching. What the node may get right by asking
// again (a UID that changed, an object not found) is a Conflict, not
// Forbidden.
func (r Restriction) admitPodCertificateRequest(ctx context.Context, nodeName string, a *admission.Attributes) error {
	if a.Operation != admission.Create {
		return forbidden(a, fmt.Errorf("unexpected operation %v", a.Operation))
	}
	if a.Subresource != "" {
		return forbidden(a, fmt.Errorf("unexpected subresource %v", a.Subresource))
	}
	req, ok := a.Object.(*certificatesv1.PodCertificateRequest)
	if !ok {
		return forbidden(a, fmt.Errorf("unexpected type %T", a.Object))
	}
	if string(req.Spec.NodeName) != nodeName {
		return forbidden(a, fmt.Errorf("PodCertificateRequest.Spec.NodeName=%q, which is not the requesting node %q", req.Spec.NodeName, nodeName))
	}
	if r.objects == nil {
		return forbidden(a, fmt.Errorf("cannot check the pod named in the PodCertificateRequest"))
	}
	ns, podName := a.Namespace, a.Namespace+"/"+req.Spec.PodName
	// retry refuses with a Conflict what the node may get right by asking
	// again (upstream returns a plain error, not Forbidden, for these).
	retry := func(err error) error { return apierrors.NewConflict(a.Resource.GroupResource(), a.Name, err) }
	node, err := r.objects.Node(ctx, nodeName)
	if err != nil {
		return retry(fmt.Errorf("while retrieving node %q named in the PodCertificateRequest: %w", nodeName, err))
	}
	if node.UID != req.Spec.NodeUID {
		return retry(fmt.Errorf("PodCertificateRequest for pod %q names node UID %q, inconsistent with the running node (%q)", podName, req.Spec.NodeUID, node.UID))
	}
	pod, err := r.objects.Pod(ctx, ns, req.Spec.PodName)
	if err != nil {
		return retry(fmt.Errorf("while retrieving pod %q named in the PodCertificateRequest: %w", podName, err))
	}
	if req.Spec.PodUID != pod.UID {
		return retry(fmt.Errorf("PodCertificateRequest for pod %q contains pod UID (%q) which differs from running pod %q", podName, req.Spec.PodUID, pod.UID))
	}
	if pod.Spec.NodeName != nodeName {
		return forbidden(a, fmt.Errorf("pod %q is not running on node %q named in the PodCertificateRequest", podName, nodeName))
	}
	if _, mirror := pod.Annotations[mirrorPodAnnotation]; mirror {
		return forbidden(a, fmt.Errorf("pod %q is a mirror pod", podName))
	}
	if req.Spec.ServiceAccountName != pod.Spec.ServiceAccountName {
		return forbidden(a, fmt.Errorf("PodCertificateRequest for pod %q contains serviceAccountName (%q) that differs from running pod (%q)", podName, req.Spec.ServiceAccountName, pod.Spec.ServiceAccountName))
	}
	sa, err := r.objects.ServiceAccount(ctx, ns, req.Spec.ServiceAccountName)
	if err != nil {
		return retry(fmt.Errorf("while retrieving service account %q named in the PodCertificateRequest: %w", ns+"/"+req.Spec.ServiceAccountName, err))
	}
	if req.Spec.ServiceAccountUID != sa.UID {
		return retry(fmt.Errorf("PodCertificateRequest for pod %q contains serviceAccountUID (%q) that differs from the service account (%q)", podName, req.Spec.ServiceAccountUID, sa.UID))
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

// admitNode lets a node change only its own Node, and neither its taints
// (after it registered) nor labels outside the set kubelets may set: either
// would let it steer workloads meant for other nodes to itself.
func admitNode(nodeName string, a *admission.Attributes) error {
	if a.Name != nodeName {
		return forbidden(a, fmt.Errorf("node %q is not allowed to modify node %q", nodeName, a.Name))
	}
	switch a.Operation {
	case admission.Create:
		node, ok := a.Object.(*corev1.Node)
		if !ok {
			return forbidden(a, fmt.Errorf("unexpected type %T", a.Object))
		}
		if node.Spec.ConfigSource != nil {
			return forbidden(a, fmt.Errorf("node %q is not allowed to create pods with a non-nil configSource", nodeName))
		}
		if labels := forbiddenLabels(modifiedLabels(node.Labels, nil)); len(labels) > 0 {
			return forbidden(a, fmt.Errorf("node %q is not allowed to set the following labels: %s", nodeName, strings.Join(labels, ", ")))
		}
	case admission.Update:
		node, ok := a.Object.(*corev1.Node)
		if !ok {
			return forbidden(a, fmt.Errorf("unexpected type %T", a.Object))
		}
		old, ok := a.OldObject.(*corev1.Node)
		if !ok {
			return forbidden(a, fmt.Errorf("unexpected type %T", a.Object))
		}
		if node.Spec.ConfigSource != nil && !apiequality.Semantic.DeepEqual(node.Spec.ConfigSource, old.Spec.ConfigSource) {
			return forbidden(a, fmt.Errorf("node %q is not allowed to update configSource to a new non-nil configSource", nodeName))
		}
		if !apiequality.Semantic.DeepEqual(node.Spec.Taints, old.Spec.Taints) {
			return forbidden(a, fmt.Errorf("node %q is not allowed to modify taints", nodeName))
		}
		if labels := forbiddenLabels(modifiedLabels(node.Labels, old.Labels)); len(labels) > 0 {
			return forbidden(a, fmt.Errorf("is not allowed to modify labels: %s", strings.Join(labels, ", ")))
		}
	}
	return nil
}

// modifiedLabels returns the keys whose values differ between a and b,
// including keys only one of them has.
func modifiedLabels(a, b map[string]string) sets.Set[string] {
	modified := sets.New[string]()
	for k, v := range a {
		if w, ok := b[k]; !ok || v != w {
			modified.Insert(k)
		}
	}
	for k, v := range b {
		if w, ok := a[k]; !ok || v != w {
			modified.Insert(k)
		}
	}
	return modified
}

// forbiddenLabels returns, sorted, the modified labels a node may not add,
// remove or change on itself: those in node-restriction.kubernetes.io, and
// those in the kubernetes.io and k8s.io domains that are not kubelet labels.
func forbiddenLabels(modified sets.Set[string]) []string {
	forbidden := sets.New[string]()
	for label := range modified {
		namespace := labelNamespace(label)
		if namespace == corev1.LabelNamespaceNodeRestriction || strings.HasSuffix(namespace, "."+corev1.LabelNamespaceNodeRestriction) {
			forbidden.Insert(label)
		}
		if isKubernetesLabel(label) && !isKubeletLabel(label) {
			forbidden.Insert(label)
		}
	}
	return sets.List(forbidden)
}

// isKubernetesLabel tells whether key is in the kubernetes.io or k8s.io
// domains or a subdomain of them.
func isKubernetesLabel(key string) bool {
	namespace := labelNamespace(key)
	return namespace == "kubernetes.io" || strings.HasSuffix(namespace, ".kubernetes.io") ||
		namespace == "k8s.io" || strings.HasSuffix(namespace, ".k8s.io")
}

// kubeletLabels are the labels kubelets may set on their own Node, as
// k8s.io/kubelet/pkg/apis lists them.
var kubeletLabels = sets.New(
	corev1.LabelHostname,
	corev1.LabelTopologyZone,
	corev1.LabelTopologyRegion,
	corev1.LabelFailureDomainBetaZone,
	corev1.LabelFailureDomainBetaRegion,
	corev1.LabelInstanceType,
	corev1.LabelInstanceTypeStable,
	corev1.LabelOSStable,
	corev1.LabelArchStable,
	"beta.kubernetes.io/os",
	"beta.kubernetes.io/arch",
)

// kubeletLabelNamespaces are the label domains (with their subdomains)
// kubelets may set on their own Node.
var kubeletLabelNamespaces = []string{corev1.LabelNamespaceSuffixKubelet, corev1.LabelNamespaceSuffixNode}

// isKubeletLabel is k8s.io/kubelet's IsKubeletLabel: whether a kubelet may
// set key on its own Node.
func isKubeletLabel(key string) bool {
	if kubeletLabels.Has(key) {
		return true
	}
	namespace := labelNamespace(key)
	for _, allowed := range kubeletLabelNamespaces {
		if namespace == allowed || strings.HasSuffix(namespace, "."+allowed) {
			return true
		}
	}
	return false
}

// labelNamespace is the prefix of a label key before its slash, or "".
func labelNamespace(key string) string {
	if prefix, _, ok := strings.Cut(key, "/"); ok {
		return prefix
	}
	return ""
}

// forbidden is admission.NewForbidden: a 403 naming the resource and object.
func forbidden(a *admission.Attributes, err error) error {
	return apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, err)
}
