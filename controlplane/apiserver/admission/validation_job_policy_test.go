package admission

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

func TestValidateJobPolicies(t *testing.T) {
	indexed := func(j *batchv1.Job) {
		j.Spec.CompletionMode = ptrTo(batchv1.IndexedCompletion)
		j.Spec.Completions = ptrTo(int32(4))
	}
	exitCodes := func(action batchv1.PodFailurePolicyAction, op batchv1.PodFailurePolicyOnExitCodesOperator, values ...int32) batchv1.PodFailurePolicyRule {
		return batchv1.PodFailurePolicyRule{Action: action, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: op, Values: values}}
	}
	for _, tt := range []struct {
		name   string
		mutate func(*batchv1.Job)
		errs   []string
	}{
		{name: "valid pod failure policy", mutate: func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				exitCodes(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpIn, 1, 42),
				{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}},
			}}
		}},
		{name: "pod failure policy rules", mutate: func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				exitCodes(batchv1.PodFailurePolicyActionFailIndex, batchv1.PodFailurePolicyOnExitCodesOpIn, 0, 3, 2),
				{Action: "Retry"},
			}}
		}, errs: []string{
			`spec.podFailurePolicy.rules[0].action: Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set`,
			`spec.podFailurePolicy.rules[0].onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator`,
			`spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: [0,3,2]: must be ordered`,
			`spec.podFailurePolicy.rules[1].action: Unsupported value: "Retry": supported values: "Count", "FailIndex", "FailJob", "Ignore"`,
			`spec.podFailurePolicy.rules[1]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required`,
		}},
		{name: "pod failure policy with restartPolicy OnFailure", mutate: func(j *batchv1.Job) {
			j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{exitCodes(batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyOnExitCodesOpNotIn, 0)}}
		}, errs: []string{`spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified`}},
		{name: "valid backoff limit per index", mutate: func(j *batchv1.Job) {
			indexed(j)
			j.Spec.BackoffLimitPerIndex, j.Spec.MaxFailedIndexes = ptrTo(int32(1)), ptrTo(int32(2))
		}},
		{name: "backoff limit per index not Indexed", mutate: func(j *batchv1.Job) {
			j.Spec.BackoffLimitPerIndex, j.Spec.MaxFailedIndexes = ptrTo(int32(1)), ptrTo(int32(2))
		}, errs: []string{
			"spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode",
			"spec.maxFailedIndexes: Invalid value: 2: requires indexed completion mode",
		}},
		{name: "maxFailedIndexes above completions without backoffLimitPerIndex", mutate: func(j *batchv1.Job) {
			indexed(j)
			j.Spec.MaxFailedIndexes = ptrTo(int32(5))
		}, errs: []string{
			"spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified",
			"spec.maxFailedIndexes: Invalid value: 5: must be less than or equal to completions",
		}},
		{name: "valid success policy", mutate: func(j *batchv1.Job) {
			indexed(j)
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptrTo("0,2-3"), SucceededCount: ptrTo(int32(2))}, {SucceededCount: ptrTo(int32(1))}}}
		}},
		{name: "success policy rules", mutate: func(j *batchv1.Job) {
			indexed(j)
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{}, {SucceededIndexes: ptrTo("2,1")}, {SucceededIndexes: ptrTo("0-1"), SucceededCount: ptrTo(int32(3))}, {SucceededIndexes: ptrTo("4")}}}
		}, errs: []string{
			"spec.successPolicy.rules[0]: Required value: at least one of succeededCount or succeededIndexes must be specified",
			`spec.successPolicy.rules[1].succeededIndexes: Invalid value: "2,1": error parsing succeededIndexes: non-increasing order, previous: 2, current: 1`,
			"spec.successPolicy.rules[2].succeededCount: Invalid value: 3: must be less than or equal to 2 (the number of indexes in the specified succeededIndexes field)",
			`spec.successPolicy.rules[3].succeededIndexes: Invalid value: "4": error parsing succeededIndexes: too large index: "4"`,
		}},
		{name: "success policy not Indexed", mutate: func(j *batchv1.Job) {
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededCount: ptrTo(int32(1))}}}
		}, errs: []string{`spec.successPolicy: Invalid value: {"rules":[{"succeededCount":1}]}: requires indexed completion mode`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range Validate(createdJob(t, tt.mutate), nil) {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tt.errs, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.errs, "\n"))
			}
		})
	}
}

func TestValidateJobUpdateKeepsThePolicies(t *testing.T) {
	old := createdJob(t, func(j *batchv1.Job) {
		j.Spec.CompletionMode, j.Spec.Completions = ptrTo(batchv1.IndexedCompletion), ptrTo(int32(4))
		j.Spec.BackoffLimitPerIndex = ptrTo(int32(1))
	})
	old.ResourceVersion = "7"
	next := old.DeepCopy()
	next.Spec.BackoffLimitPerIndex = ptrTo(int32(2))
	next.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededCount: ptrTo(int32(1))}}}
	var fields []string
	for _, e := range Validate(next, old) {
		fields = append(fields, e.Field)
	}
	if strings.Join(fields, ",") != "spec.backoffLimitPerIndex,spec.successPolicy" {
		t.Fatalf("errors on %v, want backoffLimitPerIndex and successPolicy immutable", fields)
	}
}
