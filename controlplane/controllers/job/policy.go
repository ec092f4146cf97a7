package job

import (
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// matchPodFailurePolicy is Kubernetes' matchPodFailurePolicy: the first
// rule of spec.podFailurePolicy that matches a failed pod decides its
// action. It returns the job failure message for a FailJob match, whether
// the failure counts against the backoff limits (all but Ignore), and the
// matched action (nil when no rule matches, or there is no policy).
func matchPodFailurePolicy(policy *batchv1.PodFailurePolicy, pod *v1.Pod) (string, bool, *batchv1.PodFailurePolicyAction) {
	if policy == nil {
		return "", true, nil
	}
	for i, rule := range policy.Rules {
		action := rule.Action
		var failJobMsg string
		switch {
		case rule.OnExitCodes != nil:
			cs := matchOnExitCodes(&pod.Status, rule.OnExitCodes)
			if cs == nil {
				continue
			}
			failJobMsg = fmt.Sprintf("Container %s for pod %s/%s failed with exit code %v matching %v rule at index %d",
				cs.Name, pod.Namespace, pod.Name, cs.State.Terminated.ExitCode, action, i)
		case rule.OnPodConditions != nil:
			cond := matchOnPodConditions(&pod.Status, rule.OnPodConditions)
			if cond == nil {
				continue
			}
			failJobMsg = fmt.Sprintf("Pod %s/%s has condition %v matching %v rule at index %d",
				pod.Namespace, pod.Name, cond.Type, action, i)
		default:
			continue
		}
		switch action {
		case batchv1.PodFailurePolicyActionIgnore:
			return "", false, &action
		case batchv1.PodFailurePolicyActionFailIndex, batchv1.PodFailurePolicyActionCount:
			return "", true, &action
		case batchv1.PodFailurePolicyActionFailJob:
			return failJobMsg, true, &action
		}
	}
	return "", true, nil
}

// matchOnExitCodes returns the first container, app containers before init
// containers, that terminated with a non-zero exit code the requirement
// matches.
func matchOnExitCodes(status *v1.PodStatus, req *batchv1.PodFailurePolicyOnExitCodesRequirement) *v1.ContainerStatus {
	for _, list := range [][]v1.ContainerStatus{status.ContainerStatuses, status.InitContainerStatuses} {
		for i := range list {
			cs := &list[i]
			t := cs.State.Terminated
			if t == nil || t.ExitCode == 0 || (req.ContainerName != nil && *req.ContainerName != cs.Name) {
				continue
			}
			in := slices.Contains(req.Values, t.ExitCode)
			if (req.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && in) || (req.Operator == batchv1.PodFailurePolicyOnExitCodesOpNotIn && !in) {
				return cs
			}
		}
	}
	return nil
}

// matchOnPodConditions returns the first pod condition a pattern matches
// by type and status.
func matchOnPodConditions(status *v1.PodStatus, patterns []batchv1.PodFailurePolicyOnPodConditionsPattern) *v1.PodCondition {
	for i := range status.Conditions {
		for _, p := range patterns {
			if status.Conditions[i].Type == p.Type && status.Conditions[i].Status == p.Status {
				return &status.Conditions[i]
			}
		}
	}
	return nil
}

// failJobMessage is Kubernetes' getFailJobMessage: the message of the
// first failed pod whose failure matches a FailJob rule, or "".
func failJobMessage(job *batchv1.Job, pods []*v1.Pod) string {
	if job.Spec.PodFailurePolicy == nil {
		return ""
	}
	for _, p := range pods {
		if !isPodFailed(job, p) {
			continue
		}
		if msg, _, _ := matchPodFailurePolicy(job.Spec.PodFailurePolicy, p); msg != "" {
			return msg
		}
	}
	return ""
}

// matchSuccessPolicy is Kubernetes' matchSuccessPolicy for an Indexed job:
// the first rule whose succeededIndexes have all succeeded (or at least
// succeededCount of them), or, without succeededIndexes, whose
// succeededCount indexes have succeeded. It returns the condition message
// naming the rule.
func matchSuccessPolicy(policy *batchv1.SuccessPolicy, completions int32, succeeded sets.Set[int]) (string, bool) {
	if policy == nil || succeeded.Len() == 0 {
		return "", false
	}
	for i, rule := range policy.Rules {
		matched := false
		switch {
		case rule.SucceededIndexes != nil:
			required := parseIndexes(*rule.SucceededIndexes)
			for ix := range required {
				if ix >= int(completions) {
					required.Delete(ix)
				}
			}
			if required.Len() == 0 {
				continue
			}
			contains := required.Intersection(succeeded).Len()
			matched = contains == required.Len() || (rule.SucceededCount != nil && contains >= int(*rule.SucceededCount))
		case rule.SucceededCount != nil:
			matched = succeeded.Len() >= int(*rule.SucceededCount)
		}
		if matched {
			return fmt.Sprintf("Matched rules at index %d", i), true
		}
	}
	return "", false
}
