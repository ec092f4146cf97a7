package admission

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// RuntimeClassPluginName is the name RuntimeClass reports in Steps, as
// kube-apiserver's plugin.
const RuntimeClassPluginName = "RuntimeClass"

// RuntimeClassLister reads RuntimeClasses for the RuntimeClass plugin.
type RuntimeClassLister interface {
	// GetRuntimeClass returns the class named name; found is false when
	// there is none.
	GetRuntimeClass(ctx context.Context, name string) (rc *nodev1.RuntimeClass, found bool, err error)
}

// RuntimeClass is kube-apiserver's RuntimeClass admission plugin: a pod
// created with spec.runtimeClassName is refused (403) when the class does
// not exist, gets the class's overhead.podFixed as spec.overhead, and its
// scheduling.nodeSelector and tolerations merged into its own, with
// upstream's messages for a conflict.
type RuntimeClass struct {
	classes RuntimeClassLister
}

var (
	_ MutationInterface   = &RuntimeClass{}
	_ ValidationInterface = &RuntimeClass{}
)

// NewRuntimeClass returns the plugin reading classes from classes.
func NewRuntimeClass(classes RuntimeClassLister) *RuntimeClass {
	return &RuntimeClass{classes: classes}
}

// Name implements Plugin.
func (*RuntimeClass) Name() string { return RuntimeClassPluginName }

// Handles reports whether a is a pod's create.
func (*RuntimeClass) Handles(a *Attributes) bool {
	return a.Operation == Create && a.Resource.GroupResource() == corev1.Resource("pods") && a.Subresource == ""
}

// podClass returns a's pod and its RuntimeClass (nil when it names none).
func (p *RuntimeClass) podClass(ctx context.Context, a *Attributes) (*corev1.Pod, *nodev1.RuntimeClass, error) {
	pod, ok := a.Object.(*corev1.Pod)
	if !ok || !p.Handles(a) || pod.Spec.RuntimeClassName == nil || *pod.Spec.RuntimeClassName == "" {
		return nil, nil, nil
	}
	name := *pod.Spec.RuntimeClassName
	rc, found, err := p.classes.GetRuntimeClass(ctx, name)
	if err != nil {
		return nil, nil, apierrors.NewInternalError(fmt.Errorf("failed to read RuntimeClass %q: %w", name, err))
	}
	if !found {
		return nil, nil, p.forbidden(a, fmt.Sprintf("pod rejected: RuntimeClass %q not found", name))
	}
	return pod, rc, nil
}

func (*RuntimeClass) forbidden(a *Attributes, msg string) error {
	return apierrors.NewForbidden(a.Resource.GroupResource(), objectNameForError(a), fmt.Errorf("%s", msg))
}

// Admit sets the pod's overhead and merges the class's scheduling.
func (p *RuntimeClass) Admit(ctx context.Context, a *Attributes) error {
	pod, rc, err := p.podClass(ctx, a)
	if err != nil || rc == nil {
		return err
	}
	if rc.Overhead != nil {
		if len(pod.Spec.Overhead) > 0 && !apiequality.Semantic.DeepEqual(pod.Spec.Overhead, rc.Overhead.PodFixed) {
			return p.forbidden(a, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
		}
		pod.Spec.Overhead = maps.Clone(rc.Overhead.PodFixed)
	}
	if rc.Scheduling == nil {
		return nil
	}
	if len(rc.Scheduling.NodeSelector) > 0 {
		if pod.Spec.NodeSelector == nil {
			pod.Spec.NodeSelector = map[string]string{}
		}
		for k, v := range rc.Scheduling.NodeSelector {
			if cur, ok := pod.Spec.NodeSelector[k]; ok && cur != v {
				return p.forbidden(a, fmt.Sprintf("conflict: runtimeClass.scheduling.nodeSelector[%s] = %s; pod.spec.nodeSelector[%s] = %s", k, v, k, cur))
			}
			pod.Spec.NodeSelector[k] = v
		}
	}
	for _, t := range rc.Scheduling.Tolerations {
		if !hasToleration(pod.Spec.Tolerations, t) {
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, t)
		}
	}
	return nil
}

// Validate refuses an overhead the class does not define, as upstream's
// validation half of the plugin.
func (p *RuntimeClass) Validate(ctx context.Context, a *Attributes) error {
	pod, rc, err := p.podClass(ctx, a)
	if err != nil || pod == nil {
		return err
	}
	if rc.Overhead == nil && len(pod.Spec.Overhead) > 0 {
		return p.forbidden(a, "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
	}
	if rc.Overhead != nil && !apiequality.Semantic.DeepEqual(pod.Spec.Overhead, rc.Overhead.PodFixed) {
		return p.forbidden(a, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
	}
	return nil
}

func hasToleration(list []corev1.Toleration, t corev1.Toleration) bool {
	for _, have := range list {
		if have.MatchToleration(&t) && have.Value == t.Value && apiequality.Semantic.DeepEqual(have.TolerationSeconds, t.TolerationSeconds) {
			return true
		}
	}
	return false
}
