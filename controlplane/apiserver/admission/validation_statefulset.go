package admission

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// statefulSetSpecForbidden is what Kubernetes answers an update that
// changes a part of a StatefulSet's spec other than those it lets change.
const statefulSetSpecForbidden = "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', " +
	"'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"

// validateStatefulSet is ValidateStatefulSet, and ValidateStatefulSetUpdate
// when old is set: the name is a DNS label (each pod's hostname is
// <name>-<ordinal>), and on update only replicas, ordinals, template,
// updateStrategy, persistentVolumeClaimRetentionPolicy and minReadySeconds
// may change.
func validateStatefulSet(ss, old *appsv1.StatefulSet) field.ErrorList {
	var errs field.ErrorList
	if old != nil {
		errs = apimachineryvalidation.ValidateObjectMetaUpdate(&ss.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	} else {
		errs = validateMeta(&ss.ObjectMeta, nil, true, apimachineryvalidation.NameIsDNSLabel)
	}
	errs = append(errs, validateStatefulSetSpec(&ss.Spec, field.NewPath("spec"))...)
	if old == nil {
		return errs
	}
	clone := ss.Spec.DeepCopy()
	clone.Replicas = old.Spec.Replicas
	clone.Template = old.Spec.Template
	clone.UpdateStrategy = old.Spec.UpdateStrategy
	clone.MinReadySeconds = old.Spec.MinReadySeconds
	clone.Ordinals = old.Spec.Ordinals
	clone.PersistentVolumeClaimRetentionPolicy = old.Spec.PersistentVolumeClaimRetentionPolicy
	if !equality.Semantic.DeepEqual(*clone, old.Spec) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), statefulSetSpecForbidden))
	}
	return errs
}

// validateStatefulSetSpec is ValidateStatefulSetSpec. As upstream, the pod
// template's spec is not validated here (its volumes may name claims of
// volumeClaimTemplates), only its labels and annotations; a bad spec shows
// as the controller's FailedCreate events.
func validateStatefulSetSpec(spec *appsv1.StatefulSetSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch spec.PodManagementPolicy {
	case "":
		errs = append(errs, field.Required(fld.Child("podManagementPolicy"), ""))
	case appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
	default:
		errs = append(errs, field.Invalid(fld.Child("podManagementPolicy"), spec.PodManagementPolicy,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement)))
	}
	switch spec.UpdateStrategy.Type {
	case "":
		errs = append(errs, field.Required(fld.Child("updateStrategy"), ""))
	case appsv1.OnDeleteStatefulSetStrategyType:
		if spec.UpdateStrategy.RollingUpdate != nil {
			errs = append(errs, field.Invalid(fld.Child("updateStrategy", "rollingUpdate"), spec.UpdateStrategy.RollingUpdate,
				fmt.Sprintf("only allowed for updateStrategy '%s'", appsv1.RollingUpdateStatefulSetStrategyType)))
		}
	case appsv1.RollingUpdateStatefulSetStrategyType:
		if ru := spec.UpdateStrategy.RollingUpdate; ru != nil {
			errs = append(errs, validateRollingUpdateStatefulSet(ru, fld.Child("updateStrategy", "rollingUpdate"))...)
		}
	default:
		errs = append(errs, field.Invalid(fld.Child("updateStrategy"), spec.UpdateStrategy,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.RollingUpdateStatefulSetStrategyType, appsv1.OnDeleteStatefulSetStrategyType)))
	}
	if p := spec.PersistentVolumeClaimRetentionPolicy; p != nil {
		pf := fld.Child("persistentVolumeClaimRetentionPolicy")
		errs = append(errs, validateRetentionPolicyType(p.WhenDeleted, pf.Child("whenDeleted"))...)
		errs = append(errs, validateRetentionPolicyType(p.WhenScaled, pf.Child("whenScaled"))...)
	}
	if spec.ServiceName != "" {
		for _, msg := range apimachineryvalidation.NameIsDNS1035Label(spec.ServiceName, false) {
			errs = append(errs, field.Invalid(fld.Child("serviceName"), spec.ServiceName, msg))
		}
	}
	errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(replicasOf(spec.Replicas)), fld.Child("replicas"))...)
	errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), fld.Child("minReadySeconds"))...)
	if spec.Ordinals != nil {
		errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(spec.Ordinals.Start), fld.Child("ordinals.start"))...)
	}
	if spec.Selector == nil {
		errs = append(errs, field.Required(fld.Child("selector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, fld.Child("selector"))...)
		if len(spec.Selector.MatchLabels)+len(spec.Selector.MatchExpressions) == 0 {
			errs = append(errs, field.Invalid(fld.Child("selector"), spec.Selector, "empty selector is invalid for statefulset"))
		}
	}
	selector, err := metav1.LabelSelectorAsSelector(spec.Selector)
	if err != nil {
		errs = append(errs, field.Invalid(fld.Child("selector"), spec.Selector, ""))
	} else {
		errs = append(errs, validateStatefulSetTemplate(&spec.Template, selector, fld.Child("template"))...)
	}
	tSpec := fld.Child("template", "spec")
	if spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(tSpec.Child("restartPolicy"), spec.Template.Spec.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
	}
	if spec.Template.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(tSpec.Child("activeDeadlineSeconds"), "activeDeadlineSeconds in StatefulSet is not Supported"))
	}
	return errs
}

// validateStatefulSetTemplate is ValidatePodTemplateSpecForStatefulSet:
// the selector matches the template's labels, which (with its
// annotations) are valid.
func validateStatefulSetTemplate(t *corev1.PodTemplateSpec, selector labels.Selector, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !selector.Empty() && !selector.Matches(labels.Set(t.Labels)) {
		errs = append(errs, field.Invalid(fld.Child("metadata", "labels"), t.Labels, "`selector` does not match template `labels`"))
	}
	errs = append(errs, metav1validation.ValidateLabels(t.Labels, fld.Child("labels"))...)
	errs = append(errs, apimachineryvalidation.ValidateAnnotations(t.Annotations, fld.Child("annotations"))...)
	return errs
}

func validateRollingUpdateStatefulSet(ru *appsv1.RollingUpdateStatefulSetStrategy, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ru.Partition != nil {
		errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(*ru.Partition), fld.Child("partition"))...)
	}
	if ru.MaxUnavailable != nil {
		mu := *ru.MaxUnavailable
		fm := fld.Child("maxUnavailable")
		errs = append(errs, validatePositiveIntOrPercent(mu, fm)...)
		if intOrPercentValue(mu) == 0 {
			errs = append(errs, field.Invalid(fm, mu, "must be greater than zero"))
		}
		if v, isPercent := percentValue(mu); isPercent && v > 100 {
			errs = append(errs, field.Invalid(fm, mu, "must not be greater than 100%"))
		}
	}
	return errs
}

func validateRetentionPolicyType(p appsv1.PersistentVolumeClaimRetentionPolicyType, fld *field.Path) field.ErrorList {
	switch p {
	case appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType:
		return nil
	}
	return field.ErrorList{field.NotSupported(fld, p, []string{string(appsv1.RetainPersistentVolumeClaimRetentionPolicyType),
		string(appsv1.DeletePersistentVolumeClaimRetentionPolicyType)})}
}

// validateStatefulSetStatusUpdate is ValidateStatefulSetStatusUpdate:
// counts non-negative and within status.replicas, and a collision count
// that never goes down.
func validateStatefulSetStatusUpdate(ss, old *appsv1.StatefulSet) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&ss.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	st := ss.Status
	fld := field.NewPath("status")
	for _, f := range []struct {
		name string
		v    int64
	}{{"replicas", int64(st.Replicas)}, {"readyReplicas", int64(st.ReadyReplicas)}, {"currentReplicas", int64(st.CurrentReplicas)},
		{"updatedReplicas", int64(st.UpdatedReplicas)}, {"availableReplicas", int64(st.AvailableReplicas)}, {"observedGeneration", st.ObservedGeneration}} {
		errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(f.v, fld.Child(f.name))...)
	}
	if st.CollisionCount != nil {
		errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(*st.CollisionCount), fld.Child("collisionCount"))...)
	}
	msg := "cannot be greater than status.replicas"
	for _, f := range []struct {
		name string
		v    int32
	}{{"readyReplicas", st.ReadyReplicas}, {"currentReplicas", st.CurrentReplicas}, {"updatedReplicas", st.UpdatedReplicas}, {"availableReplicas", st.AvailableReplicas}} {
		if f.v > st.Replicas {
			errs = append(errs, field.Invalid(fld.Child(f.name), f.v, msg))
		}
	}
	if st.AvailableReplicas > st.ReadyReplicas {
		errs = append(errs, field.Invalid(fld.Child("availableReplicas"), st.AvailableReplicas, "cannot be greater than status.readyReplicas"))
	}
	if old.Status.CollisionCount != nil && (st.CollisionCount == nil || *st.CollisionCount < *old.Status.CollisionCount) {
		var v int32
		if st.CollisionCount != nil {
			v = *st.CollisionCount
		}
		errs = append(errs, field.Invalid(fld.Child("collisionCount"), v, "cannot be decremented"))
	}
	return errs
}
