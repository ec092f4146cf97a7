package apiserver

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
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

// highestUserDefinablePriority is the largest value a PriorityClass that
// is not a system one may have.
const highestUserDefinablePriority = 1000000000

// validatePriorityClass is upstream's ValidatePriorityClass(Update): the
// "system-" prefix is kept for the system classes (with their values), a
// user class's value is at most a billion, the preemption policy known;
// the value and the preemption policy never change.
func validatePriorityClass(_ context.Context, _ string, obj, old runtime.Object) field.ErrorList {
	pc := obj.(*schedulingv1.PriorityClass)
	var errs field.ErrorList
	if prev, ok := old.(*schedulingv1.PriorityClass); ok {
		errs = apimachineryvalidation.ValidateObjectMetaUpdate(&pc.ObjectMeta, &prev.ObjectMeta, field.NewPath("metadata"))
		if pc.Value != prev.Value {
			errs = append(errs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
		}
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(pc.PreemptionPolicy, prev.PreemptionPolicy, field.NewPath("preemptionPolicy"))...)
		return errs
	}
	errs = apimachineryvalidation.ValidateObjectMeta(&pc.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	if strings.HasPrefix(pc.Name, "system-") {
		known := false
		for _, sys := range systemPriorityClasses {
			known = known || sys.Name == pc.Name && sys.Value == pc.Value && sys.GlobalDefault == pc.GlobalDefault
		}
		if !known {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "name"), "priority class names with 'system-' prefix are reserved for system use only. error: "+
				fmt.Sprintf("%v is not a known system priority class", pc.Name)))
		}
	} else if pc.Value > highestUserDefinablePriority {
		errs = append(errs, field.Forbidden(field.NewPath("value"), fmt.Sprintf("maximum allowed value of a user defined priority is %v", highestUserDefinablePriority)))
	}
	if p := pc.PreemptionPolicy; p != nil && *p != corev1.PreemptLowerPriority && *p != corev1.PreemptNever {
		errs = append(errs, field.NotSupported(field.NewPath("preemptionPolicy"), *p, []string{string(corev1.PreemptLowerPriority), string(corev1.PreemptNever)}))
	}
	return errs
}
