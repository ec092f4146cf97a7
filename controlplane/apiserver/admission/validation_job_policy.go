package admission

import (
	"fmt"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Limits of Kubernetes' job validation for the failure and success
// policies.
const (
	maxParallelismForIndexedJob             = 100_000
	maxFailedIndexesForIndexedJob           = 100_000
	completionsSoftLimit                    = 100_000
	parallelismLimitForHighCompletions      = 10_000
	maxFailedIndexesLimitForHighCompletions = 10_000
	maxPodFailurePolicyRules                = 20
	maxPodFailurePolicyOnExitCodesValues    = 255
	maxPodFailurePolicyOnPodConditions      = 20
	maxSuccessPolicySucceededIndexesLength  = 64 * 1024
	maxSuccessPolicyRules                   = 20
)

var (
	podFailurePolicyActions = sets.New(batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyActionFailIndex,
		batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyActionIgnore)
	podFailurePolicyOperators = sets.New(batchv1.PodFailurePolicyOnExitCodesOpIn, batchv1.PodFailurePolicyOnExitCodesOpNotIn)
	podConditionStatuses      = sets.New(corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionUnknown)
	podReplacementPolicies    = sets.New(batchv1.Failed, batchv1.TerminatingOrFailed)
)

// validateJobPolicies is the part of Kubernetes' validateJobSpec about
// failures and success: backoffLimitPerIndex and maxFailedIndexes (Indexed
// jobs only, with their limits), the Indexed parallelism cap,
// podFailurePolicy (with restartPolicy Never and podReplacementPolicy
// Failed), successPolicy (Indexed jobs only) and podReplacementPolicy.
func validateJobPolicies(s *batchv1.JobSpec, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.BackoffLimitPerIndex != nil {
		errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(*s.BackoffLimitPerIndex), specPath.Child("backoffLimitPerIndex"))...)
	}
	if s.MaxFailedIndexes != nil {
		errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(*s.MaxFailedIndexes), specPath.Child("maxFailedIndexes"))...)
		if s.BackoffLimitPerIndex == nil {
			errs = append(errs, field.Required(specPath.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
		}
	}
	indexed := s.CompletionMode != nil && *s.CompletionMode == batchv1.IndexedCompletion
	if indexed {
		errs = append(errs, validateIndexedJobLimits(s, specPath)...)
	} else {
		if s.BackoffLimitPerIndex != nil {
			errs = append(errs, field.Invalid(specPath.Child("backoffLimitPerIndex"), *s.BackoffLimitPerIndex, "requires indexed completion mode"))
		}
		if s.MaxFailedIndexes != nil {
			errs = append(errs, field.Invalid(specPath.Child("maxFailedIndexes"), *s.MaxFailedIndexes, "requires indexed completion mode"))
		}
	}
	if s.PodFailurePolicy != nil {
		errs = append(errs, validatePodFailurePolicy(s, specPath.Child("podFailurePolicy"))...)
		if p := s.Template.Spec.RestartPolicy; p == corev1.RestartPolicyOnFailure {
			errs = append(errs, field.Invalid(specPath.Child("template", "spec", "restartPolicy"), p, fmt.Sprintf("only %q is supported when podFailurePolicy is specified", corev1.RestartPolicyNever)))
		}
	}
	if s.SuccessPolicy != nil {
		if !indexed {
			errs = append(errs, field.Invalid(specPath.Child("successPolicy"), *s.SuccessPolicy, "requires indexed completion mode"))
		} else {
			errs = append(errs, validateSuccessPolicy(s, specPath.Child("successPolicy"))...)
		}
	}
	if p := s.PodReplacementPolicy; p != nil {
		switch {
		case s.PodFailurePolicy != nil && *p != batchv1.Failed:
			errs = append(errs, field.NotSupported(specPath.Child("podReplacementPolicy"), *p, []batchv1.PodReplacementPolicy{batchv1.Failed}))
		case s.PodFailurePolicy == nil && !podReplacementPolicies.Has(*p):
			errs = append(errs, field.NotSupported(specPath.Child("podReplacementPolicy"), *p, sets.List(podReplacementPolicies)))
		}
	}
	return errs
}

// validateIndexedJobLimits caps an Indexed job's parallelism and failed
// indexes, as Kubernetes does to bound its status.
func validateIndexedJobLimits(s *batchv1.JobSpec, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Parallelism != nil && *s.Parallelism > maxParallelismForIndexedJob {
		errs = append(errs, field.Invalid(specPath.Child("parallelism"), *s.Parallelism, fmt.Sprintf("must be less than or equal to %d when completion mode is %s", maxParallelismForIndexedJob, batchv1.IndexedCompletion)))
	}
	if s.Completions != nil && s.MaxFailedIndexes != nil && *s.MaxFailedIndexes > *s.Completions {
		errs = append(errs, field.Invalid(specPath.Child("maxFailedIndexes"), *s.MaxFailedIndexes, "must be less than or equal to completions"))
	}
	if s.MaxFailedIndexes != nil && *s.MaxFailedIndexes > maxFailedIndexesForIndexedJob {
		errs = append(errs, field.Invalid(specPath.Child("maxFailedIndexes"), *s.MaxFailedIndexes, fmt.Sprintf("must be less than or equal to %d", maxFailedIndexesForIndexedJob)))
	}
	if s.Completions != nil && *s.Completions > completionsSoftLimit && s.BackoffLimitPerIndex != nil {
		if s.MaxFailedIndexes == nil {
			errs = append(errs, field.Required(specPath.Child("maxFailedIndexes"), fmt.Sprintf("must be specified when completions is above %d", completionsSoftLimit)))
		}
		if s.Parallelism != nil && *s.Parallelism > parallelismLimitForHighCompletions {
			errs = append(errs, field.Invalid(specPath.Child("parallelism"), *s.Parallelism, fmt.Sprintf("must be less than or equal to %d when completions are above %d and used with backoff limit per index", parallelismLimitForHighCompletions, completionsSoftLimit)))
		}
		if s.MaxFailedIndexes != nil && *s.MaxFailedIndexes > maxFailedIndexesLimitForHighCompletions {
			errs = append(errs, field.Invalid(specPath.Child("maxFailedIndexes"), *s.MaxFailedIndexes, fmt.Sprintf("must be less than or equal to %d when completions are above %d and used with backoff limit per index", maxFailedIndexesLimitForHighCompletions, completionsSoftLimit)))
		}
	}
	return errs
}

// validatePodFailurePolicy is Kubernetes' validatePodFailurePolicy: at most
// 20 rules, each with a supported action (FailIndex only with
// backoffLimitPerIndex) and exactly one of onExitCodes and
// onPodConditions.
func validatePodFailurePolicy(s *batchv1.JobSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	rulesPath := fld.Child("rules")
	if len(s.PodFailurePolicy.Rules) > maxPodFailurePolicyRules {
		errs = append(errs, field.TooMany(rulesPath, len(s.PodFailurePolicy.Rules), maxPodFailurePolicyRules))
	}
	containers := sets.New[string]()
	for _, c := range s.Template.Spec.Containers {
		containers.Insert(c.Name)
	}
	for _, c := range s.Template.Spec.InitContainers {
		containers.Insert(c.Name)
	}
	for i := range s.PodFailurePolicy.Rules {
		rule := &s.PodFailurePolicy.Rules[i]
		rulePath := rulesPath.Index(i)
		actionPath := rulePath.Child("action")
		switch {
		case rule.Action == "":
			errs = append(errs, field.Required(actionPath, fmt.Sprintf("valid values: %q", sets.List(podFailurePolicyActions))))
		case rule.Action == batchv1.PodFailurePolicyActionFailIndex && s.BackoffLimitPerIndex == nil:
			errs = append(errs, field.Invalid(actionPath, rule.Action, "requires the backoffLimitPerIndex to be set"))
		case !podFailurePolicyActions.Has(rule.Action):
			errs = append(errs, field.NotSupported(actionPath, rule.Action, sets.List(podFailurePolicyActions)))
		}
		if rule.OnExitCodes != nil {
			errs = append(errs, validateOnExitCodes(rule.OnExitCodes, rulePath.Child("onExitCodes"), containers)...)
		}
		if len(rule.OnPodConditions) > 0 {
			errs = append(errs, validateOnPodConditions(rule.OnPodConditions, rulePath.Child("onPodConditions"))...)
		}
		if rule.OnExitCodes != nil && len(rule.OnPodConditions) > 0 {
			errs = append(errs, field.Invalid(rulePath, field.OmitValueType{}, "specifying both OnExitCodes and OnPodConditions is not supported"))
		}
		if rule.OnExitCodes == nil && len(rule.OnPodConditions) == 0 {
			errs = append(errs, field.Invalid(rulePath, field.OmitValueType{}, "specifying one of OnExitCodes and OnPodConditions is required"))
		}
	}
	return errs
}

// validateOnExitCodes checks an onExitCodes requirement: a supported
// operator, a container of the template, and 1 to 255 unique, ordered
// values (no 0 for In).
func validateOnExitCodes(req *batchv1.PodFailurePolicyOnExitCodesRequirement, fld *field.Path, containers sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	operatorPath := fld.Child("operator")
	if req.Operator == "" {
		errs = append(errs, field.Required(operatorPath, fmt.Sprintf("valid values: %q", sets.List(podFailurePolicyOperators))))
	} else if !podFailurePolicyOperators.Has(req.Operator) {
		errs = append(errs, field.NotSupported(operatorPath, req.Operator, sets.List(podFailurePolicyOperators)))
	}
	if req.ContainerName != nil && !containers.Has(*req.ContainerName) {
		errs = append(errs, field.Invalid(fld.Child("containerName"), *req.ContainerName, "must be one of the container or initContainer names in the pod template"))
	}
	valuesPath := fld.Child("values")
	if len(req.Values) == 0 {
		errs = append(errs, field.Invalid(valuesPath, req.Values, "at least one value is required"))
	} else if len(req.Values) > maxPodFailurePolicyOnExitCodesValues {
		errs = append(errs, field.TooMany(valuesPath, len(req.Values), maxPodFailurePolicyOnExitCodesValues))
	}
	ordered := true
	seen := sets.New[int32]()
	for j, v := range req.Values {
		if req.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && v == 0 {
			errs = append(errs, field.Invalid(valuesPath.Index(j), v, "must not be 0 for the In operator"))
		}
		if seen.Has(v) {
			errs = append(errs, field.Duplicate(valuesPath.Index(j), v))
		}
		seen.Insert(v)
		if j > 0 && req.Values[j-1] > v {
			ordered = false
		}
	}
	if !ordered {
		errs = append(errs, field.Invalid(valuesPath, req.Values, "must be ordered"))
	}
	return errs
}

// validateOnPodConditions checks onPodConditions: at most 20 patterns,
// each a qualified condition type and a True, False or Unknown status.
func validateOnPodConditions(patterns []batchv1.PodFailurePolicyOnPodConditionsPattern, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(patterns) > maxPodFailurePolicyOnPodConditions {
		errs = append(errs, field.TooMany(fld, len(patterns), maxPodFailurePolicyOnPodConditions))
	}
	for j, p := range patterns {
		errs = append(errs, validateQualifiedName(string(p.Type), fld.Index(j).Child("type"))...)
		statusPath := fld.Index(j).Child("status")
		if p.Status == "" {
			errs = append(errs, field.Required(statusPath, fmt.Sprintf("valid values: %q", sets.List(podConditionStatuses))))
		} else if !podConditionStatuses.Has(p.Status) {
			errs = append(errs, field.NotSupported(statusPath, p.Status, sets.List(podConditionStatuses)))
		}
	}
	return errs
}

// validateSuccessPolicy is Kubernetes' validateSuccessPolicy: 1 to 20
// rules, each with succeededIndexes (ordered intervals below completions)
// or succeededCount (at most completions, and at most the indexes it
// counts among).
func validateSuccessPolicy(s *batchv1.JobSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	rulesPath := fld.Child("rules")
	if len(s.SuccessPolicy.Rules) == 0 {
		errs = append(errs, field.Required(rulesPath, "at least one rules must be specified when the successPolicy is specified"))
	}
	if len(s.SuccessPolicy.Rules) > maxSuccessPolicyRules {
		errs = append(errs, field.TooMany(rulesPath, len(s.SuccessPolicy.Rules), maxSuccessPolicyRules))
	}
	if s.Completions == nil {
		return errs // reported as required for an Indexed job
	}
	completions := *s.Completions
	for i, rule := range s.SuccessPolicy.Rules {
		rulePath := rulesPath.Index(i)
		if rule.SucceededCount == nil && rule.SucceededIndexes == nil {
			errs = append(errs, field.Required(rulePath, "at least one of succeededCount or succeededIndexes must be specified"))
		}
		var total int32
		if rule.SucceededIndexes != nil {
			ixPath := rulePath.Child("succeededIndexes")
			if len(*rule.SucceededIndexes) > maxSuccessPolicySucceededIndexesLength {
				errs = append(errs, field.TooLong(ixPath, "", maxSuccessPolicySucceededIndexesLength))
			}
			var err error
			if total, err = countIndexes(*rule.SucceededIndexes, completions); err != nil {
				errs = append(errs, field.Invalid(ixPath, *rule.SucceededIndexes, fmt.Sprintf("error parsing succeededIndexes: %s", err.Error())))
			}
		}
		if rule.SucceededCount != nil {
			countPath := rulePath.Child("succeededCount")
			errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(*rule.SucceededCount), countPath)...)
			if *rule.SucceededCount > completions {
				errs = append(errs, field.Invalid(countPath, *rule.SucceededCount, fmt.Sprintf("must be less than or equal to %d (the number of specified completions)", completions)))
			}
			if rule.SucceededIndexes != nil && *rule.SucceededCount > total {
				errs = append(errs, field.Invalid(countPath, *rule.SucceededCount, fmt.Sprintf("must be less than or equal to %d (the number of indexes in the specified succeededIndexes field)", total)))
			}
		}
	}
	return errs
}

// countIndexes is Kubernetes' validateIndexesFormat: an increasing list
// of indexes and "a-b" intervals below completions, and how many indexes
// it names.
func countIndexes(s string, completions int32) (int32, error) {
	if s == "" {
		return 0, nil
	}
	var total int32
	last := int32(-1)
	for _, part := range strings.Split(s, ",") {
		x, y, err := parseIndexInterval(part, completions)
		if err != nil {
			return 0, err
		}
		if last >= x {
			return 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", last, x)
		}
		total += y - x + 1
		last = y
	}
	return total, nil
}

func parseIndexInterval(s string, completions int32) (int32, int32, error) {
	limits := strings.Split(s, "-")
	if len(limits) > 2 {
		return 0, 0, fmt.Errorf("the fragment %q violates the requirement that an index interval can have at most two parts separated by '-'", s)
	}
	x, err := strconv.Atoi(limits[0])
	if err != nil {
		return 0, 0, fmt.Errorf("cannot convert string to integer for index: %q", limits[0])
	}
	if x >= int(completions) {
		return 0, 0, fmt.Errorf("too large index: %q", limits[0])
	}
	if len(limits) == 1 {
		return int32(x), int32(x), nil
	}
	y, err := strconv.Atoi(limits[1])
	if err != nil {
		return 0, 0, fmt.Errorf("cannot convert string to integer for index: %q", limits[1])
	}
	if y >= int(completions) {
		return 0, 0, fmt.Errorf("too large index: %q", limits[1])
	}
	if x >= y {
		return 0, 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", x, y)
	}
	return int32(x), int32(y), nil
}

// validateJobPoliciesUpdate keeps podFailurePolicy, backoffLimitPerIndex
// and successPolicy immutable, as Kubernetes' ValidateJobSpecUpdate.
func validateJobPoliciesUpdate(s, old *batchv1.JobSpec, specPath *field.Path) field.ErrorList {
	errs := apimachineryvalidation.ValidateImmutableField(s.PodFailurePolicy, old.PodFailurePolicy, specPath.Child("podFailurePolicy"))
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(s.BackoffLimitPerIndex, old.BackoffLimitPerIndex, specPath.Child("backoffLimitPerIndex"))...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(s.SuccessPolicy, old.SuccessPolicy, specPath.Child("successPolicy"))...)
}
