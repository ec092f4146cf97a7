package admission

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// DefaultTolerationSecondsPluginName is the name kube-apiserver gives the plugin.
const DefaultTolerationSecondsPluginName = "DefaultTolerationSeconds"

// DefaultTolerationSeconds gives every pod that does not already tolerate
// them NoExecute tolerations of 300 seconds for the node.kubernetes.io/not-ready
// and node.kubernetes.io/unreachable taints, as kube-apiserver's default-on
// plugin of that name does.
type DefaultTolerationSeconds struct{}

var _ MutationInterface = &DefaultTolerationSeconds{}

// NewDefaultTolerationSeconds returns the plugin.
func NewDefaultTolerationSeconds() *DefaultTolerationSeconds { return &DefaultTolerationSeconds{} }

// Name implements Plugin.
func (*DefaultTolerationSeconds) Name() string { return DefaultTolerationSecondsPluginName }

// defaultTolerationSeconds is the plugin's default for both taints.
const defaultTolerationSeconds = int64(300)

// Handles implements Handler: pod creations and updates, not subresources.
func (*DefaultTolerationSeconds) Handles(a *Attributes) bool {
	_, isPod := a.Object.(*corev1.Pod)
	return isPod && a.Subresource == "" && (a.Operation == Create || a.Operation == Update)
}

// Admit implements MutationInterface.
func (*DefaultTolerationSeconds) Admit(_ context.Context, a *Attributes) error {
	if a.Subresource != "" || (a.Operation != Create && a.Operation != Update) {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		if toleratesNoExecute(pod.Spec.Tolerations, key) {
			continue
		}
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{
			Key:               key,
			Operator:          corev1.TolerationOpExists,
			Effect:            corev1.TaintEffectNoExecute,
			TolerationSeconds: ptrTo(defaultTolerationSeconds),
		})
	}
	return nil
}

// toleratesNoExecute reports whether a toleration already covers key with
// effect NoExecute (or every effect), so the plugin leaves it alone.
func toleratesNoExecute(tolerations []corev1.Toleration, key string) bool {
	for _, t := range tolerations {
		if (t.Key == key || t.Key == "") &&
			(t.Effect == corev1.TaintEffectNoExecute || t.Effect == "") {
			return true
		}
	}
	return false
}
