package apiserver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// systemPriorityClasses are the PriorityClasses kube-apiserver creates at
// start-up.
var systemPriorityClasses = []schedulingv1.PriorityClass{
	{
		ObjectMeta:  metav1.ObjectMeta{Name: "system-node-critical"},
		Value:       2000001000,
		Description: "Used for system critical pods that must not be moved from their current node.",
	},
	{
		ObjectMeta:  metav1.ObjectMeta{Name: "system-cluster-critical"},
		Value:       2000000000,
		Description: "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
	},
}

// bootstrapPriorityClasses creates the system PriorityClasses that are
// missing.
func (s *Server) bootstrapPriorityClasses(ctx context.Context) error {
	res := s.byPath[schedulingv1.SchemeGroupVersion.WithResource("priorityclasses")]
	for i := range systemPriorityClasses {
		pc := systemPriorityClasses[i].DeepCopy()
		policy := corev1.PreemptLowerPriority
		pc.PreemptionPolicy = &policy
		prepareForCreate(res, pc)
		_, err := s.createInStore(ctx, res, pc)
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("failed to create priorityclass %q: %w", pc.Name, err)
		}
		if err == nil {
			s.log.Info("created priorityclass", "priorityclass", pc.Name, "value", pc.Value)
		}
	}
	return nil
}

// GetPriorityClass implements admission.PriorityClassLister. The object is
// shared: callers must not modify it.
func (l namespaceLister) GetPriorityClass(ctx context.Context, name string) (*schedulingv1.PriorityClass, bool, error) {
	obj, found, err := l.s.lookups.priorityClasses.get(ctx, l.s, "", name)
	if !found || err != nil {
		return nil, false, err
	}
	return obj.(*schedulingv1.PriorityClass), true, nil
}
