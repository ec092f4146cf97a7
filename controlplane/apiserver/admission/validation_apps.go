package admission

import (
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func replicasOf(r *int32) int32 {
	if r == nil {
		return 0
	}
	return *r
}

// validateDeployment is ValidateDeployment, and ValidateDeploymentUpdate when
// old is set (the selector is immutable in apps/v1).
func validateDeployment(d, old *appsv1.Deployment) field.ErrorList {
	specPath := field.NewPath("spec")
	var errs field.ErrorList
	if old != nil {
		errs = apimachineryvalidation.ValidateObjectMetaUpdate(&d.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	} else {
		errs = validateMeta(&d.ObjectMeta, nil, true, apimachineryvalidation.NameIsDNSSubdomain)
	}
	errs = append(errs, validateWorkloadSelector(d.Spec.Replicas, d.Spec.MinReadySeconds, d.Spec.Selector, &d.Spec.Template, specPath)...)
	errs = append(errs, validateDeploymentStrategy(&d.Spec.Strategy, specPath.Child("strategy"))...)
	if d.Spec.RevisionHistoryLimit != nil {
		errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(*d.Spec.RevisionHistoryLimit), specPath.Child("revisionHistoryLimit"))...)
	}
	if d.Spec.ProgressDeadlineSeconds != nil {
		errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(*d.Spec.ProgressDeadlineSeconds), specPath.Child("progressDeadlineSeconds"))...)
		if *d.Spec.ProgressDeadlineSeconds <= d.Spec.MinReadySeconds {
			errs = append(errs, field.Invalid(specPath.Child("progressDeadlineSeconds"), d.Spec.ProgressDeadlineSeconds, "must be greater than minReadySeconds"))
		}
	}
	if old != nil {
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(d.Spec.Selector, old.Spec.Selector, specPath.Child("selector"))...)
	}
	return errs
}

// validateReplicaSet is ValidateReplicaSet, and ValidateReplicaSetUpdate when
// old is set.
func validateReplicaSet(rs, old *appsv1.ReplicaSet) field.ErrorList {
	specPath := field.NewPath("spec")
	var errs field.ErrorList
	if old != nil {
		errs = apimachineryvalidation.ValidateObjectMetaUpdate(&rs.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	} else {
		errs = validateMeta(&rs.ObjectMeta, nil, true, apimachineryvalidation.NameIsDNSSubdomain)
	}
	errs = append(errs, validateWorkloadSelector(rs.Spec.Replicas, rs.Spec.MinReadySeconds, rs.Spec.Selector, &rs.Spec.Template, specPath)...)
	if old != nil {
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(rs.Spec.Selector, old.Spec.Selector, specPath.Child("selector"))...)
	}
	return errs
}

// validateWorkloadSelector holds what ValidateDeploymentSpec and
// ValidateReplicaSetSpec share: replicas and minReadySeconds non-negative,
// a non-empty valid selector that matches the template's labels, and a
// template that is a valid pod template with restartPolicy Always.
func validateWorkloadSelector(replicas *int32, minReady int32, sel *metav1.LabelSelector, t *corev1.PodTemplateSpec, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(replicasOf(replicas)), specPath.Child("replicas"))...)
	errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(minReady), specPath.Child("minReadySeconds"))...)
	if sel == nil {
		errs = append(errs, field.Required(specPath.Child("selector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, specPath.Child("selector"))...)
		if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
			errs = append(errs, field.Invalid(specPath.Child("selector"), sel, "empty selector is invalid for deployment"))
		}
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return append(errs, field.Invalid(specPath.Child("selector"), sel, "invalid label selector"))
	}
	tPath := specPath.Child("template")
	if !selector.Empty() && !selector.Matches(labels.Set(t.Labels)) {
		errs = append(errs, field.Invalid(tPath.Child("metadata", "labels"), t.Labels, "`selector` does not match template `labels`"))
	}
	errs = append(errs, validatePodTemplateSpec(t, tPath)...)
	if t.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(tPath.Child("spec", "restartPolicy"), t.Spec.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
	}
	if t.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Invalid(tPath.Child("spec", "activeDeadlineSeconds"), t.Spec.ActiveDeadlineSeconds, "activeDeadlineSeconds in ReplicaSet is not Supported"))
	}
	return errs
}

func validateDeploymentStrategy(s *appsv1.DeploymentStrategy, fld *field.Path) field.ErrorList {
	switch s.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if s.RollingUpdate != nil {
			return field.ErrorList{field.Forbidden(fld.Child("rollingUpdate"), fmt.Sprintf("may not be specified when strategy `type` is '%s'", appsv1.RecreateDeploymentStrategyType))}
		}
		return nil
	case appsv1.RollingUpdateDeploymentStrategyType:
		if s.RollingUpdate == nil {
			return field.ErrorList{field.Required(fld.Child("rollingUpdate"), "this should be defaulted and never be nil")}
		}
		return validateRollingUpdateDeployment(s.RollingUpdate, fld.Child("rollingUpdate"))
	default:
		return field.ErrorList{field.NotSupported(fld, s, []string{string(appsv1.RecreateDeploymentStrategyType), string(appsv1.RollingUpdateDeploymentStrategyType)})}
	}
}

func validateRollingUpdateDeployment(ru *appsv1.RollingUpdateDeployment, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	maxUnavailable := intOrZero(ru.MaxUnavailable)
	maxSurge := intOrZero(ru.MaxSurge)
	errs = append(errs, validatePositiveIntOrPercent(maxUnavailable, fld.Child("maxUnavailable"))...)
	errs = append(errs, validatePositiveIntOrPercent(maxSurge, fld.Child("maxSurge"))...)
	if intOrPercentValue(maxUnavailable) == 0 && intOrPercentValue(maxSurge) == 0 {
		errs = append(errs, field.Invalid(fld.Child("maxUnavailable"), maxUnavailable, "may not be 0 when `maxSurge` is 0"))
	}
	if v, isPercent := percentValue(maxUnavailable); isPercent && v > 100 {
		errs = append(errs, field.Invalid(fld.Child("maxUnavailable"), maxUnavailable, "must not be greater than 100%"))
	}
	return errs
}

func intOrZero(v *intstr.IntOrString) intstr.IntOrString {
	if v == nil {
		return intstr.FromInt32(0)
	}
	return *v
}

func validatePositiveIntOrPercent(v intstr.IntOrString, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if v.Type == intstr.String {
		for _, msg := range validation.IsValidPercent(v.StrVal) {
			errs = append(errs, field.Invalid(fld, v, msg))
		}
		return errs
	}
	return apimachineryvalidation.ValidateNonnegativeField(int64(v.IntValue()), fld)
}

func percentValue(v intstr.IntOrString) (int, bool) {
	if v.Type != intstr.String {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
	if err != nil || !strings.HasSuffix(v.StrVal, "%") {
		return 0, false
	}
	return n, true
}

func intOrPercentValue(v intstr.IntOrString) int {
	if n, ok := percentValue(v); ok {
		return n
	}
	return v.IntValue()
}

// validateDeploymentStatusUpdate is ValidateDeploymentStatusUpdate.
func validateDeploymentStatusUpdate(d, old *appsv1.Deployment) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&d.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	st := d.Status
	fld := field.NewPath("status")
	for _, f := range []struct {
		name string
		v    int64
	}{{"observedGeneration", st.ObservedGeneration}, {"replicas", int64(st.Replicas)}, {"updatedReplicas", int64(st.UpdatedReplicas)},
		{"readyReplicas", int64(st.ReadyReplicas)}, {"availableReplicas", int64(st.AvailableReplicas)}, {"unavailableReplicas", int64(st.UnavailableReplicas)}} {
		errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(f.v, fld.Child(f.name))...)
	}
	if st.CollisionCount != nil {
		errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(*st.CollisionCount), fld.Child("collisionCount"))...)
	}
	msg := "cannot be greater than status.replicas"
	if st.UpdatedReplicas > st.Replicas {
		errs = append(errs, field.Invalid(fld.Child("updatedReplicas"), st.UpdatedReplicas, msg))
	}
	if st.ReadyReplicas > st.Replicas {
		errs = append(errs, field.Invalid(fld.Child("readyReplicas"), st.ReadyReplicas, msg))
	}
	if st.AvailableReplicas > st.Replicas {
		errs = append(errs, field.Invalid(fld.Child("availableReplicas"), st.AvailableReplicas, msg))
	}
	if st.AvailableReplicas > st.ReadyReplicas {
		errs = append(errs, field.Invalid(fld.Child("availableReplicas"), st.AvailableReplicas, "cannot be greater than readyReplicas"))
	}
	return errs
}

// validateReplicaSetStatusUpdate is ValidateReplicaSetStatusUpdate.
func validateReplicaSetStatusUpdate(rs, old *appsv1.ReplicaSet) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&rs.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	st := rs.Status
	fld := field.NewPath("status")
	for _, f := range []struct {
		name string
		v    int64
	}{{"replicas", int64(st.Replicas)}, {"fullyLabeledReplicas", int64(st.FullyLabeledReplicas)}, {"readyReplicas", int64(st.ReadyReplicas)},
		{"availableReplicas", int64(st.AvailableReplicas)}, {"observedGeneration", st.ObservedGeneration}} {
		errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(f.v, fld.Child(f.name))...)
	}
	msg := "cannot be greater than status.replicas"
	if st.FullyLabeledReplicas > st.Replicas {
		errs = append(errs, field.Invalid(fld.Child("fullyLabeledReplicas"), st.FullyLabeledReplicas, msg))
	}
	if st.ReadyReplicas > st.Replicas {
		errs = append(errs, field.Invalid(fld.Child("readyReplicas"), st.ReadyReplicas, msg))
	}
	if st.AvailableReplicas > st.Replicas {
		errs = append(errs, field.Invalid(fld.Child("availableReplicas"), st.AvailableReplicas, msg))
	}
	if st.AvailableReplicas > st.ReadyReplicas {
		errs = append(errs, field.Invalid(fld.Child("availableReplicas"), st.AvailableReplicas, "cannot be greater than readyReplicas"))
	}
	return errs
}
