package admission

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validatePolicyKind validates the kinds of issue 26's part 3 on create
// (old == nil) and update: ResourceQuota, LimitRange, Ingress,
// IngressClass, NetworkPolicy and events.k8s.io/v1 Event.
func validatePolicyKind(obj, old runtime.Object) field.ErrorList {
	switch o := obj.(type) {
	case *corev1.ResourceQuota:
		prev, _ := old.(*corev1.ResourceQuota)
		return validateResourceQuota(o, prev)
	case *corev1.LimitRange:
		return validateLimitRange(o, old)
	case *networkingv1.Ingress:
		prev, _ := old.(*networkingv1.Ingress)
		return validateIngress(o, prev)
	case *networkingv1.IngressClass:
		prev, _ := old.(*networkingv1.IngressClass)
		return validateIngressClass(o, prev)
	case *networkingv1.NetworkPolicy:
		return validateNetworkPolicy(o, old)
	case *eventsv1.Event:
		return validateEventsV1Event(o, old)
	}
	return nil
}

// validatePolicyKindStatus validates a status write of those kinds.
func validatePolicyKindStatus(obj, old runtime.Object) field.ErrorList {
	switch o := obj.(type) {
	case *corev1.ResourceQuota:
		if prev, ok := old.(*corev1.ResourceQuota); ok {
			return validateResourceQuotaStatusUpdate(o, prev)
		}
	case *networkingv1.Ingress:
		if prev, ok := old.(*networkingv1.Ingress); ok {
			return validateIngressStatusUpdate(o, prev)
		}
	}
	return validateMetaUpdateOnly(obj, old)
}

// validateEventsV1Event is ValidateEventCreate for a request of
// events.k8s.io/v1 (old == nil) and ValidateEventUpdate. Like
// kube-apiserver it checks the core Event the object converts to, so the
// field paths are the core ones (message, involvedObject, count), with
// reportingController as events/v1 names it.
func validateEventsV1Event(e *eventsv1.Event, old runtime.Object) field.ErrorList {
	ev := &corev1.Event{
		ObjectMeta: e.ObjectMeta, InvolvedObject: e.Regarding, Reason: e.Reason, Message: e.Note,
		Source: e.DeprecatedSource, FirstTimestamp: e.DeprecatedFirstTimestamp, LastTimestamp: e.DeprecatedLastTimestamp,
		Count: e.DeprecatedCount, Type: e.Type, EventTime: e.EventTime, Action: e.Action,
		ReportingController: e.ReportingController, ReportingInstance: e.ReportingInstance,
	}
	var errs field.ErrorList
	for _, err := range validateEvent(ev, old) {
		if err.Field == "reportingComponent" {
			err.Field = "reportingController"
		}
		errs = append(errs, err)
	}
	if old != nil {
		return errs
	}
	errs = append(errs, validateMeta(&e.ObjectMeta, nil, true, apimachineryvalidation.NameIsDNSSubdomain)...)
	if s := e.Series; s != nil {
		if s.Count < 2 {
			errs = append(errs, field.Invalid(field.NewPath("series.count"), "", "should be at least 2"))
		}
		if s.LastObservedTime.Time.Equal(time.Time{}) {
			errs = append(errs, field.Required(field.NewPath("series.lastObservedTime"), ""))
		}
	}
	if e.EventTime.Time.Equal(time.Time{}) {
		errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
	}
	if e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
		errs = append(errs, field.Invalid(field.NewPath("type"), "", "has invalid value: "+e.Type))
	}
	if !e.DeprecatedFirstTimestamp.Time.Equal(time.Time{}) {
		errs = append(errs, field.Invalid(field.NewPath("firstTimestamp"), "", "needs to be unset"))
	}
	if !e.DeprecatedLastTimestamp.Time.Equal(time.Time{}) {
		errs = append(errs, field.Invalid(field.NewPath("lastTimestamp"), "", "needs to be unset"))
	}
	if e.DeprecatedCount != 0 {
		errs = append(errs, field.Invalid(field.NewPath("count"), "", "needs to be unset"))
	}
	if e.DeprecatedSource.Component != "" || e.DeprecatedSource.Host != "" {
		errs = append(errs, field.Invalid(field.NewPath("source"), "", "needs to be unset"))
	}
	return errs
}
