package apiserver

import (
	"context"

	resourcev1 "k8s.io/api/resource/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// deviceTaintRuleResource is resource.k8s.io/v1 DeviceTaintRule, stored and
// served with upstream's strategy: a generation that counts spec changes,
// the status written through /status, the taint's timeAdded set when it
// is missing or the effect changes. No eviction controller acts on it
// (the scheduler does not allocate devices).
func deviceTaintRuleResource() *resource {
	return &resource{
		GVK: resourcev1.SchemeGroupVersion.WithKind("DeviceTaintRule"), Resource: "devicetaintrules", Singular: "devicetaintrule",
		Verbs: verbsAll, StorageResource: "devicetaintrules", HasStatus: true, TracksGeneration: true,
		Subresources: []*subresource{statusSubresource()},
		PrepareCreate: func(_ context.Context, obj runtime.Object) {
			r := obj.(*resourcev1.DeviceTaintRule)
			r.Status = resourcev1.DeviceTaintRuleStatus{}
			if r.Spec.Taint.TimeAdded == nil {
				now := metav1.Now().Rfc3339Copy()
				r.Spec.Taint.TimeAdded = &now
			}
		},
		PrepareUpdate: func(_ context.Context, old, next runtime.Object) {
			prev, r := old.(*resourcev1.DeviceTaintRule), next.(*resourcev1.DeviceTaintRule)
			t := &r.Spec.Taint
			if t.TimeAdded == nil || (t.Effect != prev.Spec.Taint.Effect && t.TimeAdded.Equal(prev.Spec.Taint.TimeAdded)) {
				now := metav1.Now().Rfc3339Copy()
				t.TimeAdded = &now
			}
		},
		Validate: validateDeviceTaintRule,
	}
}

// deviceTaintEffects are the effects a DeviceTaintRule may ask for.
var deviceTaintEffects = []string{string(resourcev1.DeviceTaintEffectNone), string(resourcev1.DeviceTaintEffectNoSchedule), string(resourcev1.DeviceTaintEffectNoExecute)}

// validateDeviceTaintRule checks the rule's name and taint as upstream:
// the key a label name, the value a label value, a known effect (a stored
// unknown effect may stay), and a selector's driver a DNS subdomain.
func validateDeviceTaintRule(_ context.Context, sub string, obj, old runtime.Object) field.ErrorList {
	r := obj.(*resourcev1.DeviceTaintRule)
	var errs field.ErrorList
	prev, updating := old.(*resourcev1.DeviceTaintRule)
	if updating {
		errs = apimachineryvalidation.ValidateObjectMetaUpdate(&r.ObjectMeta, &prev.ObjectMeta, field.NewPath("metadata"))
	} else {
		errs = apimachineryvalidation.ValidateObjectMeta(&r.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	}
	if sub == "status" {
		return errs
	}
	taint := field.NewPath("spec", "taint")
	t := r.Spec.Taint
	if t.Key == "" {
		errs = append(errs, field.Required(taint.Child("key"), ""))
	} else {
		for _, msg := range validation.IsQualifiedName(t.Key) {
			errs = append(errs, field.Invalid(taint.Child("key"), t.Key, msg))
		}
	}
	for _, msg := range validation.IsValidLabelValue(t.Value) {
		errs = append(errs, field.Invalid(taint.Child("value"), t.Value, msg))
	}
	known := false
	for _, e := range deviceTaintEffects {
		known = known || string(t.Effect) == e
	}
	switch {
	case t.Effect == "":
		errs = append(errs, field.Required(taint.Child("effect"), ""))
	case !known && !(updating && t.Effect == prev.Spec.Taint.Effect):
		errs = append(errs, field.NotSupported(taint.Child("effect"), t.Effect, deviceTaintEffects))
	}
	if s := r.Spec.DeviceSelector; s != nil && s.Driver != nil {
		for _, msg := range validation.IsDNS1123Subdomain(*s.Driver) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "deviceSelector", "driver"), *s.Driver, msg))
		}
	}
	return errs
}
