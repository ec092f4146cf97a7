package daemonset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllerutil"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/helper"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/nodeaffinity"
)

// daemonTolerations are the tolerations Kubernetes adds to every daemon
// pod (AddOrUpdateDaemonPodTolerations), so a daemon keeps running on a
// node that is not ready, unreachable, under pressure or cordoned.
var daemonTolerations = []v1.Toleration{
	{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute},
	{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute},
	{Key: v1.TaintNodeDiskPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule},
	{Key: v1.TaintNodeMemoryPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule},
	{Key: v1.TaintNodePIDPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule},
	{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule},
}

// networkUnavailableToleration is added to host-network daemon pods.
var networkUnavailableToleration = v1.Toleration{Key: v1.TaintNodeNetworkUnavailable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}

// addDaemonTolerations adds the daemon tolerations to spec, replacing a
// toleration of the same key and effect.
func addDaemonTolerations(spec *v1.PodSpec) {
	add := daemonTolerations
	if spec.HostNetwork {
		add = append(append([]v1.Toleration(nil), add...), networkUnavailableToleration)
	}
	for _, t := range add {
		replaced := false
		for i := range spec.Tolerations {
			if spec.Tolerations[i].Key == t.Key && spec.Tolerations[i].Effect == t.Effect {
				spec.Tolerations[i] = t
				replaced = true
			}
		}
		if !replaced {
			spec.Tolerations = append(spec.Tolerations, t)
		}
	}
}

// newDaemonPod returns the pod the DaemonSet runs: its template with the
// daemon tolerations. With nodeName set, the pod is bound to that node the
// way Kubernetes does it since 1.12, by a required node affinity on
// metadata.name that the scheduler honours.
func newDaemonPod(ds *appsv1.DaemonSet, hash, nodeName string) *v1.Pod {
	template := ds.Spec.Template.DeepCopy()
	if template.Labels == nil {
		template.Labels = map[string]string{}
	}
	template.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
	addDaemonTolerations(&template.Spec)
	pod := controllerutil.PodFromTemplate(template, ds, controllerutil.NewControllerRef(ds, controllerKind))
	if nodeName != "" {
		pod.Spec.Affinity = replaceNodeNameAffinity(pod.Spec.Affinity, nodeName)
	}
	return pod
}

// replaceNodeNameAffinity is ReplaceDaemonSetPodNodeNameNodeAffinity: the
// required node affinity becomes the single term metadata.name In
// [nodeName]; the controller has checked the node fits the rest already.
func replaceNodeNameAffinity(affinity *v1.Affinity, nodeName string) *v1.Affinity {
	selector := &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchFields: []v1.NodeSelectorRequirement{{Key: metav1.ObjectNameField, Operator: v1.NodeSelectorOpIn, Values: []string{nodeName}}},
	}}}
	if affinity == nil {
		affinity = &v1.Affinity{}
	}
	if affinity.NodeAffinity == nil {
		affinity.NodeAffinity = &v1.NodeAffinity{}
	}
	affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = selector
	return affinity
}

// targetNodeName is the node a daemon pod is for: its spec.nodeName, or
// the node its metadata.name affinity names while it is unscheduled.
func targetNodeName(pod *v1.Pod) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, r := range term.MatchFields {
			if r.Key == metav1.ObjectNameField && r.Operator == v1.NodeSelectorOpIn && len(r.Values) == 1 {
				return r.Values[0]
			}
		}
	}
	return ""
}

// nodeShouldRunDaemonPod is Kubernetes' NodeShouldRunDaemonPod:
// shouldRun when the node fits the template's nodeName, node selector and
// required node affinity and its NoSchedule and NoExecute taints are all
// tolerated; shouldContinueRunning also when only NoSchedule taints are
// not, so a pod already there stays.
func nodeShouldRunDaemonPod(ctx context.Context, node *v1.Node, ds *appsv1.DaemonSet) (shouldRun, shouldContinueRunning bool) {
	pod := newDaemonPod(ds, "", "")
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != node.Name {
		return false, false
	}
	if !nodeaffinity.GetRequiredNodeAffinity(pod).Match(node) {
		return false, false
	}
	_, untolerated := helper.FindMatchingUntoleratedTaint(ctx, node.Spec.Taints, pod.Spec.Tolerations, func(t *v1.Taint) bool {
		return t.Effect == v1.TaintEffectNoExecute || t.Effect == v1.TaintEffectNoSchedule
	})
	if !untolerated {
		return true, true
	}
	_, untoleratedNoExecute := helper.FindMatchingUntoleratedTaint(ctx, node.Spec.Taints, pod.Spec.Tolerations, func(t *v1.Taint) bool {
		return t.Effect == v1.TaintEffectNoExecute
	})
	return false, !untoleratedNoExecute
}

// isPodUpdated is Kubernetes' IsPodUpdated by revision hash: the pod
// carries the current revision's controller-revision-hash.
func isPodUpdated(pod *v1.Pod, hash string) bool {
	return hash != "" && pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash
}
