package admission

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateJob is ValidateJob, and ValidateJobUpdate when old is set: the
// generated selector, non-negative counts, a selector that matches the
// template, restartPolicy OnFailure or Never, valid failure and success
// policies (validateJobPolicies), and on update an immutable selector,
// completionMode, policies and (unless suspended) template.
func validateJob(j, old *batchv1.Job) field.ErrorList {
	specPath := field.NewPath("spec")
	var errs field.ErrorList
	if old != nil {
		errs = apimachineryvalidation.ValidateObjectMetaUpdate(&j.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	} else {
		errs = validateMeta(&j.ObjectMeta, nil, true, apimachineryvalidation.NameIsDNSSubdomain)
		errs = append(errs, validateGeneratedJobSelector(j)...)
	}
	s := &j.Spec
	for _, f := range []struct {
		v    *int32
		name string
	}{{s.Parallelism, "parallelism"}, {s.Completions, "completions"}, {s.BackoffLimit, "backoffLimit"}, {s.TTLSecondsAfterFinished, "ttlSecondsAfterFinished"}} {
		if f.v != nil {
			errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(*f.v), specPath.Child(f.name))...)
		}
	}
	if s.ActiveDeadlineSeconds != nil {
		errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(*s.ActiveDeadlineSeconds, specPath.Child("activeDeadlineSeconds"))...)
	}
	if s.CompletionMode != nil && *s.CompletionMode != batchv1.NonIndexedCompletion && *s.CompletionMode != batchv1.IndexedCompletion {
		errs = append(errs, field.NotSupported(specPath.Child("completionMode"), *s.CompletionMode, []string{string(batchv1.NonIndexedCompletion), string(batchv1.IndexedCompletion)}))
	}
	if s.CompletionMode != nil && *s.CompletionMode == batchv1.IndexedCompletion && s.Completions == nil {
		errs = append(errs, field.Required(specPath.Child("completions"), fmt.Sprintf("when completion mode is %s", batchv1.IndexedCompletion)))
	}
	errs = append(errs, validateSelectorMatchesTemplate(s.Selector, &s.Template, specPath, "job")...)
	tPath := specPath.Child("template")
	errs = append(errs, validatePodTemplateSpec(&s.Template, tPath)...)
	if p := s.Template.Spec.RestartPolicy; p != corev1.RestartPolicyOnFailure && p != corev1.RestartPolicyNever {
		errs = append(errs, field.NotSupported(tPath.Child("spec", "restartPolicy"), p, []string{string(corev1.RestartPolicyOnFailure), string(corev1.RestartPolicyNever)}))
	}
	errs = append(errs, validateJobPolicies(s, specPath)...)
	if old == nil {
		return errs
	}
	errs = append(errs, validateJobPoliciesUpdate(s, &old.Spec, specPath)...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(s.Selector, old.Spec.Selector, specPath.Child("selector"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(s.CompletionMode, old.Spec.CompletionMode, specPath.Child("completionMode"))...)
	if old.Spec.Suspend == nil || !*old.Spec.Suspend {
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(s.Template, old.Spec.Template, tPath)...)
	}
	if s.CompletionMode == nil || *s.CompletionMode == batchv1.NonIndexedCompletion {
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(s.Completions, old.Spec.Completions, specPath.Child("completions"))...)
	}
	return errs
}

// validateGeneratedJobSelector is ValidateGeneratedSelector: a job
// without manualSelector must select, and label its pods with, its own uid.
func validateGeneratedJobSelector(j *batchv1.Job) field.ErrorList {
	if j.Spec.ManualSelector != nil && *j.Spec.ManualSelector {
		return nil
	}
	if j.Spec.Selector == nil {
		return nil
	}
	var errs field.ErrorList
	uid := string(j.UID)
	labelsPath := field.NewPath("spec", "template", "metadata", "labels")
	for _, k := range []string{legacyControllerUIDLabel, batchv1.ControllerUidLabel} {
		if v, ok := j.Spec.Template.Labels[k]; ok && v != uid {
			errs = append(errs, field.Invalid(labelsPath.Key(k), v, fmt.Sprintf("must be '%s'", uid)))
		}
	}
	for _, k := range []string{legacyJobNameLabel, batchv1.JobNameLabel} {
		if v, ok := j.Spec.Template.Labels[k]; ok && v != j.Name {
			errs = append(errs, field.Invalid(labelsPath.Key(k), v, fmt.Sprintf("must be '%s'", j.Name)))
		}
	}
	if v := j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]; v != uid {
		errs = append(errs, field.Invalid(field.NewPath("spec", "selector").Child("matchLabels").Key(batchv1.ControllerUidLabel), v, fmt.Sprintf("must be '%s'", uid)))
	}
	return errs
}

// validateDaemonSet is ValidateDaemonSet, and ValidateDaemonSetUpdate when
// old is set (the selector is immutable in apps/v1).
func validateDaemonSet(ds, old *appsv1.DaemonSet) field.ErrorList {
	specPath := field.NewPath("spec")
	var errs field.ErrorList
	if old != nil {
		errs = apimachineryvalidation.ValidateObjectMetaUpdate(&ds.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	} else {
		errs = validateMeta(&ds.ObjectMeta, nil, true, apimachineryvalidation.NameIsDNSSubdomain)
	}
	s := &ds.Spec
	errs = append(errs, validateSelectorMatchesTemplate(s.Selector, &s.Template, specPath, "daemonset")...)
	tPath := specPath.Child("template")
	errs = append(errs, validatePodTemplateSpec(&s.Template, tPath)...)
	if s.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(tPath.Child("spec", "restartPolicy"), s.Template.Spec.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
	}
	if s.Template.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Invalid(tPath.Child("spec", "activeDeadlineSeconds"), s.Template.Spec.ActiveDeadlineSeconds, "activeDeadlineSeconds in DaemonSet is not Supported"))
	}
	errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(s.MinReadySeconds), specPath.Child("minReadySeconds"))...)
	if s.RevisionHistoryLimit != nil {
		errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(*s.RevisionHistoryLimit), specPath.Child("revisionHistoryLimit"))...)
	}
	errs = append(errs, validateDaemonSetUpdateStrategy(&s.UpdateStrategy, specPath.Child("updateStrategy"))...)
	if old != nil {
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(s.Selector, old.Spec.Selector, specPath.Child("selector"))...)
	}
	return errs
}

func validateDaemonSetUpdateStrategy(u *appsv1.DaemonSetUpdateStrategy, fld *field.Path) field.ErrorList {
	switch u.Type {
	case appsv1.OnDeleteDaemonSetStrategyType:
		return nil
	case appsv1.RollingUpdateDaemonSetStrategyType:
		if u.RollingUpdate == nil {
			return field.ErrorList{field.Required(fld.Child("rollingUpdate"), "this should be defaulted and never be nil")}
		}
		rPath := fld.Child("rollingUpdate")
		maxUnavailable, maxSurge := intOrZero(u.RollingUpdate.MaxUnavailable), intOrZero(u.RollingUpdate.MaxSurge)
		errs := validatePositiveIntOrPercent(maxUnavailable, rPath.Child("maxUnavailable"))
		errs = append(errs, validatePositiveIntOrPercent(maxSurge, rPath.Child("maxSurge"))...)
		if intOrPercentValue(maxUnavailable) == 0 && intOrPercentValue(maxSurge) == 0 {
			errs = append(errs, field.Invalid(rPath.Child("maxUnavailable"), maxUnavailable, "may not be 0 when `maxSurge` is 0"))
		}
		if v, isPercent := percentValue(maxUnavailable); isPercent && v > 100 {
			errs = append(errs, field.Invalid(rPath.Child("maxUnavailable"), maxUnavailable, "must not be greater than 100%"))
		}
		return errs
	default:
		return field.ErrorList{field.NotSupported(fld.Child("type"), u.Type, []string{string(appsv1.RollingUpdateDaemonSetStrategyType), string(appsv1.OnDeleteDaemonSetStrategyType)})}
	}
}

// validateSelectorMatchesTemplate checks that sel is set, valid, not empty
// and selects the template's labels, with the messages of the job and
// daemon set validators (kind names the owner in "empty selector is
// invalid for <kind>").
func validateSelectorMatchesTemplate(sel *metav1.LabelSelector, t *corev1.PodTemplateSpec, specPath *field.Path, kind string) field.ErrorList {
	if sel == nil {
		return field.ErrorList{field.Required(specPath.Child("selector"), "")}
	}
	errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, specPath.Child("selector"))
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return append(errs, field.Invalid(specPath.Child("selector"), sel, "invalid label selector"))
	}
	if selector.Empty() {
		return append(errs, field.Invalid(specPath.Child("selector"), sel, "empty selector is invalid for "+kind))
	}
	if !selector.Matches(labels.Set(t.Labels)) {
		errs = append(errs, field.Invalid(specPath.Child("template", "metadata", "labels"), t.Labels, "`selector` does not match template `labels`"))
	}
	return errs
}
