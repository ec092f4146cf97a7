package admission

import (
	policyv1 "k8s.io/api/policy/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// supportedUnhealthyPodEvictionPolicies are the values
// spec.unhealthyPodEvictionPolicy may take, sorted as Kubernetes lists them.
var supportedUnhealthyPodEvictionPolicies = []string{string(policyv1.AlwaysAllow), string(policyv1.IfHealthyBudget)}

// validatePodDisruptionBudget is ValidatePodDisruptionBudget, and
// ValidatePodDisruptionBudgetUpdate when old is set (the spec is mutable in
// policy/v1).
func validatePodDisruptionBudget(pdb, old *policyv1.PodDisruptionBudget) field.ErrorList {
	var errs field.ErrorList
	if old != nil {
		errs = apimachineryvalidation.ValidateObjectMetaUpdate(&pdb.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	}
	errs = append(errs, validatePodDisruptionBudgetSpec(&pdb.Spec, field.NewPath("spec"))...)
	return append(errs, validateMeta(&pdb.ObjectMeta, nil, true, apimachineryvalidation.NameIsDNSSubdomain)...)
}

// validatePodDisruptionBudgetSpec is ValidatePodDisruptionBudgetSpec: at most
// one of minAvailable and maxUnavailable, each a non-negative integer or a
// percentage up to 100%, a valid selector and a known eviction policy.
func validatePodDisruptionBudgetSpec(spec *policyv1.PodDisruptionBudgetSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.MinAvailable != nil && spec.MaxUnavailable != nil {
		errs = append(errs, field.Invalid(fld, spec, "minAvailable and maxUnavailable cannot be both set"))
	}
	for _, f := range []struct {
		name string
		v    *intstr.IntOrString
	}{{"minAvailable", spec.MinAvailable}, {"maxUnavailable", spec.MaxUnavailable}} {
		if f.v == nil {
			continue
		}
		errs = append(errs, validatePositiveIntOrPercent(*f.v, fld.Child(f.name))...)
		if n, isPercent := percentValue(*f.v); isPercent && n > 100 {
			errs = append(errs, field.Invalid(fld.Child(f.name), *f.v, "must not be greater than 100%"))
		}
	}
	errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, fld.Child("selector"))...)
	if p := spec.UnhealthyPodEvictionPolicy; p != nil && *p != policyv1.IfHealthyBudget && *p != policyv1.AlwaysAllow {
		errs = append(errs, field.NotSupported(fld.Child("unhealthyPodEvictionPolicy"), *p, supportedUnhealthyPodEvictionPolicies))
	}
	return errs
}

// validatePodDisruptionBudgetStatusUpdate is
// ValidatePodDisruptionBudgetStatusUpdate for policy/v1: valid conditions and
// non-negative counts.
func validatePodDisruptionBudgetStatusUpdate(pdb, old *policyv1.PodDisruptionBudget) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&pdb.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	fld := field.NewPath("status")
	st := pdb.Status
	errs = append(errs, metav1validation.ValidateConditions(st.Conditions, fld.Child("conditions"))...)
	for _, f := range []struct {
		name string
		v    int32
	}{{"disruptionsAllowed", st.DisruptionsAllowed}, {"currentHealthy", st.CurrentHealthy}, {"desiredHealthy", st.DesiredHealthy}, {"expectedPods", st.ExpectedPods}} {
		errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(f.v), fld.Child(f.name))...)
	}
	return errs
}
