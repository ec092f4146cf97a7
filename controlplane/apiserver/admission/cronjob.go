package admission

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// defaultCronJob is SetDefaults_CronJob: Allow concurrent runs, not
// suspended, keep 3 successful and 1 failed Job; the job template's pod
// spec gets the pod defaults.
func defaultCronJob(cj *batchv1.CronJob) {
	if cj.Spec.ConcurrencyPolicy == "" {
		cj.Spec.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if cj.Spec.Suspend == nil {
		cj.Spec.Suspend = ptrTo(false)
	}
	if cj.Spec.SuccessfulJobsHistoryLimit == nil {
		cj.Spec.SuccessfulJobsHistoryLimit = ptrTo(int32(3))
	}
	if cj.Spec.FailedJobsHistoryLimit == nil {
		cj.Spec.FailedJobsHistoryLimit = ptrTo(int32(1))
	}
	defaultPodTemplateSpec(&cj.Spec.JobTemplate.Spec.Template)
}

// cronJobNameMaxLength is DNS1035LabelMaxLength minus the 11 characters
// ("-" and the scheduled minutes) the controller appends to name a Job.
const cronJobNameMaxLength = 63 - 11

// validateCronJob is ValidateCronJobCreate, and ValidateCronJobUpdate when
// old is set (which skips the 52-character name limit so older cron jobs
// can still be updated).
func validateCronJob(cj, old *batchv1.CronJob) field.ErrorList {
	var errs field.ErrorList
	var oldSpec *batchv1.CronJobSpec
	if old != nil {
		errs = apimachineryvalidation.ValidateObjectMetaUpdate(&cj.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
		oldSpec = &old.Spec
	} else {
		errs = validateMeta(&cj.ObjectMeta, nil, true, apimachineryvalidation.NameIsDNSSubdomain)
	}
	errs = append(errs, validateCronJobSpec(&cj.Spec, oldSpec, field.NewPath("spec"))...)
	if old == nil && len(cj.Name) > cronJobNameMaxLength {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), cj.Name, fmt.Sprintf("must be no more than %d characters", cronJobNameMaxLength)))
	}
	return errs
}

func validateCronJobSpec(spec, oldSpec *batchv1.CronJobSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.Schedule == "" {
		errs = append(errs, field.Required(fld.Child("schedule"), ""))
	} else {
		// A schedule stored with TZ before the timeZone field existed may
		// keep it.
		allowTZ := oldSpec != nil && strings.Contains(oldSpec.Schedule, "TZ")
		errs = append(errs, validateScheduleFormat(spec.Schedule, allowTZ, spec.TimeZone, fld.Child("schedule"))...)
	}
	if spec.StartingDeadlineSeconds != nil {
		errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(*spec.StartingDeadlineSeconds, fld.Child("startingDeadlineSeconds"))...)
	}
	if oldSpec == nil || !equalStringPtr(oldSpec.TimeZone, spec.TimeZone) {
		errs = append(errs, validateTimeZone(spec.TimeZone, fld.Child("timeZone"))...)
	}
	switch spec.ConcurrencyPolicy {
	case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
	case "":
		errs = append(errs, field.Required(fld.Child("concurrencyPolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(fld.Child("concurrencyPolicy"), spec.ConcurrencyPolicy,
			[]batchv1.ConcurrencyPolicy{batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent}))
	}
	errs = append(errs, validateJobTemplateSpec(&spec.JobTemplate, fld.Child("jobTemplate"))...)
	if spec.SuccessfulJobsHistoryLimit != nil {
		errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(*spec.SuccessfulJobsHistoryLimit), fld.Child("successfulJobsHistoryLimit"))...)
	}
	if spec.FailedJobsHistoryLimit != nil {
		errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(*spec.FailedJobsHistoryLimit), fld.Child("failedJobsHistoryLimit"))...)
	}
	return errs
}

func equalStringPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// validateScheduleFormat parses the schedule with cron.ParseStandard, as
// the controller will, and refuses TZ= or CRON_TZ= in it.
func validateScheduleFormat(schedule string, allowTZ bool, timeZone *string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if _, err := cron.ParseStandard(schedule); err != nil {
		errs = append(errs, field.Invalid(fld, schedule, err.Error()))
	}
	switch {
	case allowTZ && strings.Contains(schedule, "TZ") && timeZone != nil:
		errs = append(errs, field.Invalid(fld, schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
	case !allowTZ && strings.Contains(schedule, "TZ"):
		errs = append(errs, field.Invalid(fld, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
	}
	return errs
}

// validTimeZoneCharacters is one component of an IANA time zone name, as
// https://data.iana.org/time-zones/theory.html#naming allows it (with the
// digits and + of legacy names).
var validTimeZoneCharacters = regexp.MustCompile(`^[A-Za-z\.\-_0-9+]{1,14}$`)

// validateTimeZone refuses an empty or "Local" zone and any name
// time.LoadLocation does not know.
func validateTimeZone(timeZone *string, fld *field.Path) field.ErrorList {
	if timeZone == nil {
		return nil
	}
	if *timeZone == "" {
		return field.ErrorList{field.Invalid(fld, timeZone, "timeZone must be nil or non-empty string")}
	}
	for _, part := range strings.Split(*timeZone, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !validTimeZoneCharacters.MatchString(part) {
			return field.ErrorList{field.Invalid(fld, timeZone, fmt.Sprintf("unknown time zone %s", *timeZone))}
		}
	}
	var errs field.ErrorList
	if strings.EqualFold(*timeZone, "Local") {
		errs = append(errs, field.Invalid(fld, timeZone, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
	}
	if _, err := time.LoadLocation(*timeZone); err != nil {
		errs = append(errs, field.Invalid(fld, timeZone, err.Error()))
	}
	return errs
}

// validateJobTemplateSpec is ValidateJobTemplateSpec: a valid job spec
// without a selector (the API server generates it for each Job).
func validateJobTemplateSpec(t *batchv1.JobTemplateSpec, fld *field.Path) field.ErrorList {
	specPath := fld.Child("spec")
	s := &t.Spec
	var errs field.ErrorList
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
	tPath := specPath.Child("template")
	errs = append(errs, validatePodTemplateSpec(&s.Template, tPath)...)
	if p := s.Template.Spec.RestartPolicy; p != corev1.RestartPolicyOnFailure && p != corev1.RestartPolicyNever {
		errs = append(errs, field.NotSupported(tPath.Child("spec", "restartPolicy"), p, []string{string(corev1.RestartPolicyOnFailure), string(corev1.RestartPolicyNever)}))
	}
	errs = append(errs, validateJobPolicies(s, specPath)...)
	if s.Selector != nil {
		errs = append(errs, field.Invalid(specPath.Child("selector"), s.Selector, "`selector` will be auto-generated"))
	}
	if s.ManualSelector != nil && *s.ManualSelector {
		errs = append(errs, field.NotSupported(specPath.Child("manualSelector"), s.ManualSelector, []string{"nil", "false"}))
	}
	return errs
}
