package admission

import (
	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateReplicationController is ValidateReplicationController, and
// ValidateReplicationControllerUpdate when old is set: a non-empty
// selector that matches the template's labels, non-negative replicas and
// minReadySeconds, and a template with restartPolicy Always. Unlike a
// ReplicaSet's, an RC's selector may change.
func validateReplicationController(rc, old *corev1.ReplicationController) field.ErrorList {
	var errs field.ErrorList
	if old != nil {
		errs = apimachineryvalidation.ValidateObjectMetaUpdate(&rc.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	} else {
		errs = validateMeta(&rc.ObjectMeta, nil, true, apimachineryvalidation.NameIsDNSSubdomain)
	}
	specPath := field.NewPath("spec")
	s := &rc.Spec
	errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(s.MinReadySeconds), specPath.Child("minReadySeconds"))...)
	if labels.Set(s.Selector).AsSelector().Empty() {
		errs = append(errs, field.Required(specPath.Child("selector"), ""))
	}
	errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(replicasOf(s.Replicas)), specPath.Child("replicas"))...)
	return append(errs, validatePodTemplateSpecForRC(s.Template, s.Selector, specPath.Child("template"))...)
}

// validatePodTemplateSpecForRC is ValidatePodTemplateSpecForRC.
func validatePodTemplateSpecForRC(t *corev1.PodTemplateSpec, selector map[string]string, fld *field.Path) field.ErrorList {
	if t == nil {
		return field.ErrorList{field.Required(fld, "")}
	}
	var errs field.ErrorList
	if sel := labels.Set(selector).AsSelector(); !sel.Empty() && !sel.Matches(labels.Set(t.Labels)) {
		errs = append(errs, field.Invalid(fld.Child("metadata", "labels"), t.Labels, "`selector` does not match template `labels`"))
	}
	errs = append(errs, validatePodTemplateSpec(t, fld)...)
	if t.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(fld.Child("spec", "restartPolicy"), t.Spec.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
	}
	if t.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(fld.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in ReplicationController is not Supported"))
	}
	return errs
}

// validateReplicationControllerStatusUpdate is
// ValidateReplicationControllerStatusUpdate: counts are non-negative and
// none exceeds the replicas it is part of.
func validateReplicationControllerStatusUpdate(rc, old *corev1.ReplicationController) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&rc.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	p := field.NewPath("status")
	st := rc.Status
	for _, f := range []struct {
		v    int64
		name string
	}{{int64(st.Replicas), "replicas"}, {int64(st.FullyLabeledReplicas), "fullyLabeledReplicas"}, {int64(st.ReadyReplicas), "readyReplicas"},
		{int64(st.AvailableReplicas), "availableReplicas"}, {st.ObservedGeneration, "observedGeneration"}} {
		errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(f.v, p.Child(f.name))...)
	}
	const msg = "cannot be greater than status.replicas"
	if st.FullyLabeledReplicas > st.Replicas {
		errs = append(errs, field.Invalid(p.Child("fullyLabeledReplicas"), st.FullyLabeledReplicas, msg))
	}
	if st.ReadyReplicas > st.Replicas {
		errs = append(errs, field.Invalid(p.Child("readyReplicas"), st.ReadyReplicas, msg))
	}
	if st.AvailableReplicas > st.Replicas {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), st.AvailableReplicas, msg))
	}
	if st.AvailableReplicas > st.ReadyReplicas {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), st.AvailableReplicas, "cannot be greater than readyReplicas"))
	}
	return errs
}
