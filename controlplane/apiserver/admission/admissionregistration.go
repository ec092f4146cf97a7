package admission

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/glassplane/glassplane/controlplane/apiserver/admission/registration"
)

// defaultAdmissionRegistration applies the admissionregistration.k8s.io/v1
// defaults (k8s.io/kubernetes pkg/apis/admissionregistration/v1/defaults.go)
// and reports whether obj is one of its kinds.
func defaultAdmissionRegistration(obj runtime.Object) bool {
	switch o := obj.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for i := range o.Webhooks {
			w := &o.Webhooks[i]
			defaultWebhook(&w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds, w.Rules, &w.ClientConfig)
			if w.ReinvocationPolicy == nil {
				w.ReinvocationPolicy = ptrTo(admissionregistrationv1.NeverReinvocationPolicy)
			}
		}
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for i := range o.Webhooks {
			w := &o.Webhooks[i]
			defaultWebhook(&w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds, w.Rules, &w.ClientConfig)
		}
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		if o.Spec.FailurePolicy == nil {
			o.Spec.FailurePolicy = ptrTo(admissionregistrationv1.Fail)
		}
		defaultMatchResources(o.Spec.MatchConstraints)
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		defaultMatchResources(o.Spec.MatchResources)
	case *admissionregistrationv1.MutatingAdmissionPolicy:
		if o.Spec.FailurePolicy == nil {
			o.Spec.FailurePolicy = ptrTo(admissionregistrationv1.Fail)
		}
		defaultMatchResources(o.Spec.MatchConstraints)
	case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
		defaultMatchResources(o.Spec.MatchResources)
	default:
		return false
	}
	return true
}

func defaultWebhook(failurePolicy **admissionregistrationv1.FailurePolicyType, matchPolicy **admissionregistrationv1.MatchPolicyType,
	namespaceSelector, objectSelector **metav1.LabelSelector, timeout **int32,
	rules []admissionregistrationv1.RuleWithOperations, cc *admissionregistrationv1.WebhookClientConfig) {
	if *failurePolicy == nil {
		*failurePolicy = ptrTo(admissionregistrationv1.Fail)
	}
	if *matchPolicy == nil {
		*matchPolicy = ptrTo(admissionregistrationv1.Equivalent)
	}
	if *namespaceSelector == nil {
		*namespaceSelector = &metav1.LabelSelector{}
	}
	if *objectSelector == nil {
		*objectSelector = &metav1.LabelSelector{}
	}
	if *timeout == nil {
		*timeout = ptrTo(int32(10))
	}
	for i := range rules {
		if rules[i].Scope == nil {
			rules[i].Scope = ptrTo(admissionregistrationv1.AllScopes)
		}
	}
	if cc.Service != nil && cc.Service.Port == nil {
		cc.Service.Port = ptrTo(int32(443))
	}
}

func defaultMatchResources(m *admissionregistrationv1.MatchResources) {
	if m == nil {
		return
	}
	if m.MatchPolicy == nil {
		m.MatchPolicy = ptrTo(admissionregistrationv1.Equivalent)
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	for _, rules := range [][]admissionregistrationv1.NamedRuleWithOperations{m.ResourceRules, m.ExcludeResourceRules} {
		for i := range rules {
			if rules[i].Scope == nil {
				rules[i].Scope = ptrTo(admissionregistrationv1.AllScopes)
			}
		}
	}
}

// validateAdmissionRegistration validates the admissionregistration.k8s.io/v1
// kinds with kube-apiserver's rules (old is nil on create) and reports
// whether obj is one of them.
func validateAdmissionRegistration(obj, old runtime.Object) (field.ErrorList, bool) {
	switch o := obj.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		if prev, ok := old.(*admissionregistrationv1.MutatingWebhookConfiguration); ok {
			return append(metaUpdate(o, prev), registration.ValidateMutatingWebhookConfigurationUpdate(o, prev)...), true
		}
		return registration.ValidateMutatingWebhookConfiguration(o), true
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		if prev, ok := old.(*admissionregistrationv1.ValidatingWebhookConfiguration); ok {
			return append(metaUpdate(o, prev), registration.ValidateValidatingWebhookConfigurationUpdate(o, prev)...), true
		}
		return registration.ValidateValidatingWebhookConfiguration(o), true
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		if prev, ok := old.(*admissionregistrationv1.ValidatingAdmissionPolicy); ok {
			return append(metaUpdate(o, prev), registration.ValidateValidatingAdmissionPolicyUpdate(o, prev)...), true
		}
		return registration.ValidateValidatingAdmissionPolicy(o), true
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		if prev, ok := old.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding); ok {
			return append(metaUpdate(o, prev), registration.ValidateValidatingAdmissionPolicyBindingUpdate(o, prev)...), true
		}
		return registration.ValidateValidatingAdmissionPolicyBinding(o), true
	case *admissionregistrationv1.MutatingAdmissionPolicy:
		if prev, ok := old.(*admissionregistrationv1.MutatingAdmissionPolicy); ok {
			return append(metaUpdate(o, prev), registration.ValidateMutatingAdmissionPolicyUpdate(o, prev)...), true
		}
		return registration.ValidateMutatingAdmissionPolicy(o), true
	case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
		if prev, ok := old.(*admissionregistrationv1.MutatingAdmissionPolicyBinding); ok {
			return append(metaUpdate(o, prev), registration.ValidateMutatingAdmissionPolicyBindingUpdate(o, prev)...), true
		}
		return registration.ValidateMutatingAdmissionPolicyBinding(o), true
	}
	return nil, false
}

// metaUpdate is what the generic registry checks of metadata on any update.
func metaUpdate(obj, old metav1.Object) field.ErrorList {
	return apimachineryvalidation.ValidateObjectMetaAccessorUpdate(obj, old, field.NewPath("metadata"))
}
