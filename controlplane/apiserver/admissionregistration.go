package apiserver

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// admissionRegistrationResources are the admissionregistration.k8s.io/v1
// resources: the webhook configurations and the admission policies with
// their bindings, stored at kube-apiserver's keys
// (/registry/validatingwebhookconfigurations/<name>, ...). Their generation
// grows with their webhooks or spec, as upstream's strategies have it; the
// dynamic admission plugins (admission/dynamic) act on what they hold.
func admissionRegistrationResources() []*resource {
	kind := func(k string) schema.GroupVersionKind { return admissionregistrationv1.SchemeGroupVersion.WithKind(k) }
	categories := []string{"api-extensions"}
	return []*resource{
		{
			GVK: kind("MutatingWebhookConfiguration"), Resource: "mutatingwebhookconfigurations", Singular: "mutatingwebhookconfiguration",
			Categories: categories, Verbs: verbsAll, StorageResource: "mutatingwebhookconfigurations",
			TracksGeneration: true,
			Generational: func(obj runtime.Object) any {
				return obj.(*admissionregistrationv1.MutatingWebhookConfiguration).Webhooks
			},
		},
		{
			GVK: kind("ValidatingWebhookConfiguration"), Resource: "validatingwebhookconfigurations", Singular: "validatingwebhookconfiguration",
			Categories: categories, Verbs: verbsAll, StorageResource: "validatingwebhookconfigurations",
			TracksGeneration: true,
			Generational: func(obj runtime.Object) any {
				return obj.(*admissionregistrationv1.ValidatingWebhookConfiguration).Webhooks
			},
		},
		{
			GVK: kind("ValidatingAdmissionPolicy"), Resource: "validatingadmissionpolicies", Singular: "validatingadmissionpolicy",
			Categories: categories, Verbs: verbsAll, StorageResource: "validatingadmissionpolicies",
			HasStatus: true, TracksGeneration: true,
			Subresources: []*subresource{statusSubresource()},
		},
		{
			GVK: kind("ValidatingAdmissionPolicyBinding"), Resource: "validatingadmissionpolicybindings", Singular: "validatingadmissionpolicybinding",
			Categories: categories, Verbs: verbsAll, StorageResource: "validatingadmissionpolicybindings",
			TracksGeneration: true,
		},
		{
			GVK: kind("MutatingAdmissionPolicy"), Resource: "mutatingadmissionpolicies", Singular: "mutatingadmissionpolicy",
			Categories: categories, Verbs: verbsAll, StorageResource: "mutatingadmissionpolicies",
			TracksGeneration: true,
		},
		{
			GVK: kind("MutatingAdmissionPolicyBinding"), Resource: "mutatingadmissionpolicybindings", Singular: "mutatingadmissionpolicybinding",
			Categories: categories, Verbs: verbsAll, StorageResource: "mutatingadmissionpolicybindings",
			TracksGeneration: true,
		},
	}
}

// The columns kubectl shows for the admissionregistration.k8s.io resources,
// as kube-apiserver's printers define them.
var (
	webhookConfigurationPrinter = printer{
		columns: []metav1.TableColumnDefinition{nameCol,
			col("Webhooks", "integer", "Webhooks indicates the number of webhooks registered in this configuration", 0),
			ageCol,
		},
		cells: func(obj runtime.Object) []any {
			switch o := obj.(type) {
			case *admissionregistrationv1.MutatingWebhookConfiguration:
				return []any{o.Name, int64(len(o.Webhooks)), age(o.CreationTimestamp)}
			case *admissionregistrationv1.ValidatingWebhookConfiguration:
				return []any{o.Name, int64(len(o.Webhooks)), age(o.CreationTimestamp)}
			}
			return nil
		},
	}
	validatingAdmissionPolicyPrinter = printer{
		columns: []metav1.TableColumnDefinition{nameCol,
			col("Validations", "integer", "Validations indicates the number of validation rules defined in this configuration", 0),
			col("ParamKind", "string", "ParamKind specifies the kind of resources used to parameterize this policy", 0),
			ageCol,
		},
		cells: func(obj runtime.Object) []any {
			p := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy)
			paramKind := "<unset>"
			if p.Spec.ParamKind != nil {
				paramKind = p.Spec.ParamKind.APIVersion + "/" + p.Spec.ParamKind.Kind
			}
			return []any{p.Name, int64(len(p.Spec.Validations)), paramKind, age(p.CreationTimestamp)}
		},
	}
	mutatingAdmissionPolicyPrinter = printer{
		columns: []metav1.TableColumnDefinition{nameCol,
			col("Mutations", "integer", "Mutation indicates the number of mutations rules defined in this configuration", 0),
			col("ParamKind", "string", "ParamKind specifies the kind of resources used to parameterize this policy", 0),
			ageCol,
		},
		cells: func(obj runtime.Object) []any {
			p := obj.(*admissionregistrationv1.MutatingAdmissionPolicy)
			paramKind := "<unset>"
			if p.Spec.ParamKind != nil {
				paramKind = p.Spec.ParamKind.APIVersion + "/" + p.Spec.ParamKind.Kind
			}
			return []any{p.Name, int64(len(p.Spec.Mutations)), paramKind, age(p.CreationTimestamp)}
		},
	}
	mutatingAdmissionPolicyBindingPrinter = printer{
		columns: []metav1.TableColumnDefinition{nameCol,
			col("PolicyName", "string", "PolicyName indicates the policy definition which the policy binding binded to", 0),
			col("ParamRef", "string", "ParamRef indicates the param resource which sets the configuration param", 0),
			ageCol,
		},
		cells: func(obj runtime.Object) []any {
			b := obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding)
			return []any{b.Name, b.Spec.PolicyName, paramRefString(b.Spec.ParamRef), age(b.CreationTimestamp)}
		},
	}
	validatingAdmissionPolicyBindingPrinter = printer{
		columns: []metav1.TableColumnDefinition{nameCol,
			col("PolicyName", "string", "PolicyName indicates the policy definition which the policy binding binded to", 0),
			col("ParamRef", "string", "ParamRef indicates the param resource which sets the configuration param", 0),
			ageCol,
		},
		cells: func(obj runtime.Object) []any {
			b := obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
			return []any{b.Name, b.Spec.PolicyName, paramRefString(b.Spec.ParamRef), age(b.CreationTimestamp)}
		},
	}
)

// paramRefString is a binding's ParamRef column.
func paramRefString(pr *admissionregistrationv1.ParamRef) string {
	switch {
	case pr == nil:
		return "<unset>"
	case pr.Name != "" && pr.Namespace != "":
		return pr.Namespace + "/" + pr.Name
	case pr.Name != "":
		// Whether the param is cluster-scoped is not known here.
		return "*/" + pr.Name
	case pr.Selector != nil:
		return metav1.FormatLabelSelector(pr.Selector)
	}
	return "<unset>"
}

func init() {
	printers["mutatingwebhookconfigurations"] = webhookConfigurationPrinter
	printers["validatingwebhookconfigurations"] = webhookConfigurationPrinter
	printers["validatingadmissionpolicies"] = validatingAdmissionPolicyPrinter
	printers["validatingadmissionpolicybindings"] = validatingAdmissionPolicyBindingPrinter
	printers["mutatingadmissionpolicies"] = mutatingAdmissionPolicyPrinter
	printers["mutatingadmissionpolicybindings"] = mutatingAdmissionPolicyBindingPrinter
}
