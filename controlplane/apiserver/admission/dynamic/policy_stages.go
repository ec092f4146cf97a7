package dynamic

import (
	"encoding/json"
	"regexp"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	policymutating "k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	policyvalidating "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	admissionlisters "k8s.io/client-go/listers/admissionregistration/v1"
)

// policyBindings finds the policy bindings a request meets, with
// k8s.io/apiserver's own policy matcher (match constraints, namespace and
// object selectors), so that each is a Stage. The policy plugins evaluate
// every binding in one pass and report only the first refusal; so a
// policy's Stage carries that pass's duration, a binding the refusal does
// not name is allowed, and a mutating pass's patch is on each binding that
// took part. Match conditions (CEL) are the policies' own and not
// evaluated here: a binding whose conditions excluded the request shows as
// allowed.
type policyBindings struct {
	matcher     generic.PolicyMatcher
	validating  admissionlisters.ValidatingAdmissionPolicyLister
	vBindings   admissionlisters.ValidatingAdmissionPolicyBindingLister
	mutating    admissionlisters.MutatingAdmissionPolicyLister
	mBindings   admissionlisters.MutatingAdmissionPolicyBindingLister
	objectIface k8sadmission.ObjectInterfaces
}

// policyBinding names one binding of one policy.
type policyBinding struct{ policy, binding string }

// validatingMatches lists the ValidatingAdmissionPolicy bindings a meets.
func (p *policyBindings) validatingMatches(a k8sadmission.Attributes) []policyBinding {
	policies, _ := p.validating.List(labels.Everything())
	bindings, _ := p.vBindings.List(labels.Everything())
	sort.Slice(policies, func(i, j int) bool { return policies[i].Name < policies[j].Name })
	sort.Slice(bindings, func(i, j int) bool { return bindings[i].Name < bindings[j].Name })
	var out []policyBinding
	for _, pol := range policies {
		if ok, _, _, err := p.matcher.DefinitionMatches(a, p.objectIface, policyvalidating.NewValidatingAdmissionPolicyAccessor(pol)); err != nil || !ok {
			continue
		}
		for _, b := range bindings {
			if b.Spec.PolicyName != pol.Name {
				continue
			}
			if ok, err := p.matcher.BindingMatches(a, p.objectIface, policyvalidating.NewValidatingAdmissionPolicyBindingAccessor(b)); err == nil && ok {
				out = append(out, policyBinding{pol.Name, b.Name})
			}
		}
	}
	return out
}

// mutatingMatches lists the MutatingAdmissionPolicy bindings a meets.
func (p *policyBindings) mutatingMatches(a k8sadmission.Attributes) []policyBinding {
	policies, _ := p.mutating.List(labels.Everything())
	bindings, _ := p.mBindings.List(labels.Everything())
	sort.Slice(policies, func(i, j int) bool { return policies[i].Name < policies[j].Name })
	sort.Slice(bindings, func(i, j int) bool { return bindings[i].Name < bindings[j].Name })
	var out []policyBinding
	for _, pol := range policies {
		if ok, _, _, err := p.matcher.DefinitionMatches(a, p.objectIface, policymutating.NewMutatingAdmissionPolicyAccessor(pol)); err != nil || !ok {
			continue
		}
		for _, b := range bindings {
			if b.Spec.PolicyName != pol.Name {
				continue
			}
			if ok, err := p.matcher.BindingMatches(a, p.objectIface, policymutating.NewMutatingAdmissionPolicyBindingAccessor(b)); err == nil && ok {
				out = append(out, policyBinding{pol.Name, b.Name})
			}
		}
	}
	return out
}

// policyRefusal reads the policy and binding out of k8s.io/apiserver's
// refusals: "ValidatingAdmissionPolicy 'p' with binding 'b' denied
// request: m" and, from the mutating plugin, "policy 'p' with binding 'b'
// denied request: m"; without a binding, the policy itself failed.
var policyRefusal = regexp.MustCompile(`(?:ValidatingAdmissionPolicy |policy )['"]([^'"]+)['"](?: with binding '([^']+)')? denied request: (.*)$`)

// policyStages makes the Stages of one policy plugin's pass over matched,
// which took took and ended in err; patch is what it changed.
func policyStages(kind string, matched []policyBinding, took time.Duration, err error, patch json.RawMessage) []Stage {
	stages := make([]Stage, 0, len(matched))
	for _, m := range matched {
		st := Stage{Kind: kind, Configuration: m.policy, Name: m.binding, DurationMicros: took.Microseconds(), Result: ResultAllowed}
		if len(patch) > 0 {
			st.Result, st.Patch = ResultPatched, patch
		}
		stages = append(stages, st)
	}
	if err == nil {
		return stages
	}
	refusal := policyRefusal.FindStringSubmatch(err.Error())
	if refusal == nil {
		// Not one binding's doing (the plugin was not ready, a namespace
		// lookup failed): every binding failed with it.
		if len(stages) == 0 {
			stages = append(stages, Stage{Kind: kind, DurationMicros: took.Microseconds()})
		}
		for i := range stages {
			stages[i].Result, stages[i].Message, stages[i].Patch = ResultError, err.Error(), nil
		}
		return stages
	}
	policy, binding, message := refusal[1], refusal[2], refusal[3]
	result := ResultDenied
	if kind == KindMutatingAdmissionPolicy || binding == "" || isConfigurationFailure(message) {
		result = ResultError
	}
	found := false
	for i := range stages {
		if stages[i].Configuration == policy && (binding == "" || stages[i].Name == binding) {
			stages[i].Result, stages[i].Message, stages[i].Patch = result, message, nil
			found = true
		}
	}
	if !found {
		stages = append(stages, Stage{Kind: kind, Configuration: policy, Name: binding, DurationMicros: took.Microseconds(), Result: result, Message: message})
	}
	return stages
}

// isConfigurationFailure tells a binding that could not be evaluated (its
// parameters missing, say) from one whose validations refused.
func isConfigurationFailure(message string) bool {
	return configurationFailure.MatchString(message)
}

var configurationFailure = regexp.MustCompile(`^failed to configure (policy|binding): `)
