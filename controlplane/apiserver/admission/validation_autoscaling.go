package admission

import (
	"fmt"
	"slices"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	pathvalidation "k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/glassplane/glassplane/controlplane/apiserver/internal/hpaconversion"
)

// HorizontalPodAutoscalers (autoscaling/v2) are defaulted and validated as
// kube-apiserver's autoscaling/v2 defaults and
// pkg/apis/autoscaling/validation do (without the HPAScaleToZero gate:
// minReplicas is at least 1).

const (
	// hpaMaxPeriodSeconds is the largest scaling policy period.
	hpaMaxPeriodSeconds int32 = 1800
	// hpaMaxStabilizationWindowSeconds is the largest stabilization window.
	hpaMaxStabilizationWindowSeconds int32 = 3600
	// hpaDefaultCPUUtilization is the target of an HPA without metrics.
	hpaDefaultCPUUtilization int32 = 80
)

// defaultHorizontalPodAutoscaler is SetDefaults_HorizontalPodAutoscaler:
// minReplicas 1, an 80% CPU utilization target without metrics, and the
// default scaling rules filled into a behavior that is set.
func defaultHorizontalPodAutoscaler(hpa *autoscalingv2.HorizontalPodAutoscaler) {
	if hpa.Spec.MinReplicas == nil {
		hpa.Spec.MinReplicas = ptrTo(int32(1))
	}
	if len(hpa.Spec.Metrics) == 0 {
		hpa.Spec.Metrics = []autoscalingv2.MetricSpec{{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{
				Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptrTo(hpaDefaultCPUUtilization),
			}},
		}}
	}
	if b := hpa.Spec.Behavior; b != nil {
		b.ScaleUp = mergeScalingRules(b.ScaleUp, DefaultHPAScaleUpRules())
		b.ScaleDown = mergeScalingRules(b.ScaleDown, DefaultHPAScaleDownRules())
	}
}

// DefaultHPAScaleUpRules are the scale-up rules of an HPA that sets none:
// no stabilization, at most 4 pods or doubling every 15 s, whichever is
// more.
func DefaultHPAScaleUpRules() *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: ptrTo(int32(0)),
		SelectPolicy:               ptrTo(autoscalingv2.MaxChangePolicySelect),
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		},
	}
}

// DefaultHPAScaleDownRules are the scale-down rules of an HPA that sets
// none: any number of pods every 15 s, after the controller's downscale
// stabilization window (300 s) when the HPA sets none.
func DefaultHPAScaleDownRules() *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{
		SelectPolicy: ptrTo(autoscalingv2.MaxChangePolicySelect),
		Policies:     []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}},
	}
}

// mergeScalingRules fills what from leaves unset with defaults.
func mergeScalingRules(from, defaults *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if from == nil {
		return defaults
	}
	if from.SelectPolicy != nil {
		defaults.SelectPolicy = from.SelectPolicy
	}
	if from.StabilizationWindowSeconds != nil {
		defaults.StabilizationWindowSeconds = from.StabilizationWindowSeconds
	}
	if from.Policies != nil {
		defaults.Policies = from.Policies
	}
	if from.Tolerance != nil {
		defaults.Tolerance = from.Tolerance
	}
	return defaults
}

// validateHorizontalPodAutoscaler is ValidateHorizontalPodAutoscaler, and
// ValidateHorizontalPodAutoscalerUpdate when old is set.
func validateHorizontalPodAutoscaler(hpa, old *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
	var errs field.ErrorList
	if old != nil {
		errs = apimachineryvalidation.ValidateObjectMetaUpdate(&hpa.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	} else {
		errs = validateMeta(&hpa.ObjectMeta, nil, true, apimachineryvalidation.NameIsDNSSubdomain)
	}
	minBound := int32(1)
	if old != nil && old.Spec.MinReplicas != nil && *old.Spec.MinReplicas == 0 {
		minBound = 0
	}
	return append(errs, validateHPASpec(&hpa.Spec, field.NewPath("spec"), minBound)...)
}

// validateHorizontalPodAutoscalerStatusUpdate is
// ValidateHorizontalPodAutoscalerStatusUpdate.
func validateHorizontalPodAutoscalerStatusUpdate(hpa, old *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&hpa.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(hpa.Status.CurrentReplicas), field.NewPath("status", "currentReplicas"))...)
	return append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(hpa.Status.DesiredReplicas), field.NewPath("status", "desiredReplicas"))...)
}

func validateHPASpec(spec *autoscalingv2.HorizontalPodAutoscalerSpec, fld *field.Path, minBound int32) field.ErrorList {
	var errs field.ErrorList
	if spec.MinReplicas != nil && *spec.MinReplicas < minBound {
		errs = append(errs, field.Invalid(fld.Child("minReplicas"), *spec.MinReplicas, fmt.Sprintf("must be greater than or equal to %d", minBound)))
	}
	if spec.MaxReplicas < 1 {
		errs = append(errs, field.Invalid(fld.Child("maxReplicas"), spec.MaxReplicas, "must be greater than 0"))
	}
	if spec.MinReplicas != nil && spec.MaxReplicas < *spec.MinReplicas {
		errs = append(errs, field.Invalid(fld.Child("maxReplicas"), spec.MaxReplicas, "must be greater than or equal to `minReplicas`"))
	}
	errs = append(errs, validateCrossVersionObjectReference(spec.ScaleTargetRef, fld.Child("scaleTargetRef"))...)
	mfld := fld.Child("metrics")
	scalesToZero := false
	for i := range spec.Metrics {
		errs = append(errs, validateHPAMetricSpec(&spec.Metrics[i], mfld.Index(i))...)
		if t := spec.Metrics[i].Type; t == autoscalingv2.ObjectMetricSourceType || t == autoscalingv2.ExternalMetricSourceType {
			scalesToZero = true
		}
	}
	if spec.MinReplicas != nil && *spec.MinReplicas == 0 && !scalesToZero {
		errs = append(errs, field.Forbidden(mfld, "must specify at least one Object or External metric to support scaling to zero replicas"))
	}
	if b := spec.Behavior; b != nil {
		errs = append(errs, validateHPAScalingRules(b.ScaleUp, fld.Child("behavior", "scaleUp"))...)
		errs = append(errs, validateHPAScalingRules(b.ScaleDown, fld.Child("behavior", "scaleDown"))...)
	}
	return errs
}

func validateCrossVersionObjectReference(ref autoscalingv2.CrossVersionObjectReference, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ref.Kind == "" {
		errs = append(errs, field.Required(fld.Child("kind"), ""))
	} else {
		for _, msg := range pathvalidation.IsValidPathSegmentName(ref.Kind) {
			errs = append(errs, field.Invalid(fld.Child("kind"), ref.Kind, msg))
		}
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(fld.Child("name"), ""))
	} else {
		for _, msg := range pathvalidation.IsValidPathSegmentName(ref.Name) {
			errs = append(errs, field.Invalid(fld.Child("name"), ref.Name, msg))
		}
	}
	return errs
}

var (
	hpaSelectPolicies   = []string{string(autoscalingv2.DisabledPolicySelect), string(autoscalingv2.MaxChangePolicySelect), string(autoscalingv2.MinChangePolicySelect)}
	hpaPolicyTypes      = []string{string(autoscalingv2.PercentScalingPolicy), string(autoscalingv2.PodsScalingPolicy)}
	hpaMetricSourceKind = []string{
		string(autoscalingv2.ContainerResourceMetricSourceType), string(autoscalingv2.ExternalMetricSourceType),
		string(autoscalingv2.ObjectMetricSourceType), string(autoscalingv2.PodsMetricSourceType), string(autoscalingv2.ResourceMetricSourceType),
	}
)

func validateHPAScalingRules(rules *autoscalingv2.HPAScalingRules, fld *field.Path) field.ErrorList {
	if rules == nil {
		return nil
	}
	var errs field.ErrorList
	if w := rules.StabilizationWindowSeconds; w != nil && *w < 0 {
		errs = append(errs, field.Invalid(fld.Child("stabilizationWindowSeconds"), w, "must be greater than or equal to zero"))
	}
	if w := rules.StabilizationWindowSeconds; w != nil && *w > hpaMaxStabilizationWindowSeconds {
		errs = append(errs, field.Invalid(fld.Child("stabilizationWindowSeconds"), w, fmt.Sprintf("must be less than or equal to %v", hpaMaxStabilizationWindowSeconds)))
	}
	if p := rules.SelectPolicy; p != nil && *p != autoscalingv2.MaxChangePolicySelect && *p != autoscalingv2.MinChangePolicySelect && *p != autoscalingv2.DisabledPolicySelect {
		errs = append(errs, field.NotSupported(fld.Child("selectPolicy"), p, hpaSelectPolicies))
	}
	pfld := fld.Child("policies")
	if len(rules.Policies) == 0 {
		errs = append(errs, field.Required(pfld, "must specify at least one Policy"))
	}
	for i, p := range rules.Policies {
		ifld := pfld.Index(i)
		if p.Type != autoscalingv2.PodsScalingPolicy && p.Type != autoscalingv2.PercentScalingPolicy {
			errs = append(errs, field.NotSupported(ifld.Child("type"), p.Type, hpaPolicyTypes))
		}
		if p.Value <= 0 {
			errs = append(errs, field.Invalid(ifld.Child("value"), p.Value, "must be greater than zero"))
		}
		if p.PeriodSeconds <= 0 {
			errs = append(errs, field.Invalid(ifld.Child("periodSeconds"), p.PeriodSeconds, "must be greater than zero"))
		}
		if p.PeriodSeconds > hpaMaxPeriodSeconds {
			errs = append(errs, field.Invalid(ifld.Child("periodSeconds"), p.PeriodSeconds, fmt.Sprintf("must be less than or equal to %v", hpaMaxPeriodSeconds)))
		}
	}
	return errs
}

func validateHPAMetricSpec(spec *autoscalingv2.MetricSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.Type == "" {
		errs = append(errs, field.Required(fld.Child("type"), "must specify a metric source type"))
	}
	var present []string
	if spec.Object != nil {
		present = append(present, "object")
		errs = append(errs, validateCrossVersionObjectReference(spec.Object.DescribedObject, fld.Child("object", "describedObject"))...)
		errs = append(errs, validateMetricIdentifier(spec.Object.Metric, fld.Child("object", "metric"))...)
		errs = append(errs, validateMetricTarget(spec.Object.Target, fld.Child("object", "target"))...)
		if spec.Object.Target.Value == nil && spec.Object.Target.AverageValue == nil {
			errs = append(errs, field.Required(fld.Child("object", "target", "averageValue"), "must set either a target value or averageValue"))
		}
	}
	if spec.External != nil {
		present = append(present, "external")
		errs = append(errs, validateMetricIdentifier(spec.External.Metric, fld.Child("external", "metric"))...)
		errs = append(errs, validateMetricTarget(spec.External.Target, fld.Child("external", "target"))...)
		if spec.External.Target.Value == nil && spec.External.Target.AverageValue == nil {
			errs = append(errs, field.Required(fld.Child("external", "target", "averageValue"), "must set either a target value for metric or a per-pod target"))
		}
		if spec.External.Target.Value != nil && spec.External.Target.AverageValue != nil {
			errs = append(errs, field.Forbidden(fld.Child("external", "target", "value"), "may not set both a target value for metric and a per-pod target"))
		}
	}
	if spec.Pods != nil {
		present = append(present, "pods")
		errs = append(errs, validateMetricIdentifier(spec.Pods.Metric, fld.Child("pods", "metric"))...)
		errs = append(errs, validateMetricTarget(spec.Pods.Target, fld.Child("pods", "target"))...)
		if spec.Pods.Target.AverageValue == nil {
			errs = append(errs, field.Required(fld.Child("pods", "target", "averageValue"), "must specify a positive target averageValue"))
		}
	}
	if spec.Resource != nil {
		present = append(present, "resource")
		rfld := fld.Child("resource")
		if spec.Resource.Name == "" {
			errs = append(errs, field.Required(rfld.Child("name"), "must specify a resource name"))
		}
		errs = append(errs, validateResourceTarget(spec.Resource.Target, rfld.Child("target"))...)
	}
	if spec.ContainerResource != nil {
		present = append(present, "containerResource")
		cfld := fld.Child("containerResource")
		if spec.ContainerResource.Name == "" {
			errs = append(errs, field.Required(cfld.Child("name"), "must specify a resource name"))
		}
		if spec.ContainerResource.Container == "" {
			errs = append(errs, field.Required(cfld.Child("container"), "must specify a container"))
		} else {
			for _, msg := range validation.IsDNS1123Label(spec.ContainerResource.Container) {
				errs = append(errs, field.Invalid(cfld.Child("container"), spec.ContainerResource.Container, msg))
			}
		}
		errs = append(errs, validateResourceTarget(spec.ContainerResource.Target, cfld.Child("target"))...)
	}
	var expected string
	switch spec.Type {
	case autoscalingv2.ObjectMetricSourceType:
		expected = "object"
	case autoscalingv2.PodsMetricSourceType:
		expected = "pods"
	case autoscalingv2.ResourceMetricSourceType:
		expected = "resource"
	case autoscalingv2.ExternalMetricSourceType:
		expected = "external"
	case autoscalingv2.ContainerResourceMetricSourceType:
		expected = "containerResource"
	default:
		errs = append(errs, field.NotSupported(fld.Child("type"), spec.Type, hpaMetricSourceKind))
	}
	if expected != "" && !slices.Contains(present, expected) {
		errs = append(errs, field.Required(fld.Child(expected), "must populate information for the given metric source"))
	}
	if len(present) > 1 {
		for _, typ := range present {
			if typ != expected {
				errs = append(errs, field.Forbidden(fld.Child(typ), "must populate the given metric source only"))
			}
		}
	}
	return errs
}

func validateResourceTarget(t autoscalingv2.MetricTarget, fld *field.Path) field.ErrorList {
	errs := validateMetricTarget(t, fld)
	if t.AverageUtilization == nil && t.AverageValue == nil {
		errs = append(errs, field.Required(fld.Child("averageUtilization"), "must set either a target raw value or a target utilization"))
	}
	if t.AverageUtilization != nil && t.AverageValue != nil {
		errs = append(errs, field.Forbidden(fld.Child("averageValue"), "may not set both a target raw value and a target utilization"))
	}
	return errs
}

func validateMetricTarget(t autoscalingv2.MetricTarget, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.Type == "" {
		errs = append(errs, field.Required(fld.Child("type"), "must specify a metric target type"))
	}
	if t.Type != autoscalingv2.UtilizationMetricType && t.Type != autoscalingv2.ValueMetricType && t.Type != autoscalingv2.AverageValueMetricType {
		errs = append(errs, field.Invalid(fld.Child("type"), t.Type, "must be either Utilization, Value, or AverageValue"))
	}
	if t.Value != nil && t.Value.Sign() != 1 {
		errs = append(errs, field.Invalid(fld.Child("value"), t.Value, "must be positive"))
	}
	if t.AverageValue != nil && t.AverageValue.Sign() != 1 {
		errs = append(errs, field.Invalid(fld.Child("averageValue"), t.AverageValue, "must be positive"))
	}
	if t.AverageUtilization != nil && *t.AverageUtilization < 1 {
		errs = append(errs, field.Invalid(fld.Child("averageUtilization"), t.AverageUtilization, "must be greater than 0"))
	}
	return errs
}

func validateMetricIdentifier(id autoscalingv2.MetricIdentifier, fld *field.Path) field.ErrorList {
	if id.Name == "" {
		return field.ErrorList{field.Required(fld.Child("name"), "must specify a metric name")}
	}
	var errs field.ErrorList
	for _, msg := range pathvalidation.IsValidPathSegmentName(id.Name) {
		errs = append(errs, field.Invalid(fld.Child("name"), id.Name, msg))
	}
	return errs
}

// validateAutoscaling validates the autoscaling kinds; ok is false for
// other kinds.
func validateAutoscaling(obj, old runtime.Object) (field.ErrorList, bool) {
	hpa, isHPA := asHPAV2(obj)
	if !isHPA {
		return nil, false
	}
	prev, _ := asHPAV2(old)
	return validateHorizontalPodAutoscaler(hpa, prev), true
}

// asHPAV2 is an HPA of either version as autoscaling/v2 (autoscaling/v1
// writes are validated as the v2 objects they are stored as).
func asHPAV2(obj runtime.Object) (*autoscalingv2.HorizontalPodAutoscaler, bool) {
	switch o := obj.(type) {
	case *autoscalingv2.HorizontalPodAutoscaler:
		return o, true
	case *autoscalingv1.HorizontalPodAutoscaler:
		return hpaconversion.ToV2(o), true
	}
	return nil, false
}

// validateAutoscalingStatus validates a status write of the autoscaling
// kinds; ok is false for other kinds.
func validateAutoscalingStatus(obj, old runtime.Object) (field.ErrorList, bool) {
	hpa, isHPA := asHPAV2(obj)
	prev, wasHPA := asHPAV2(old)
	if !isHPA || !wasHPA {
		return nil, false
	}
	return validateHorizontalPodAutoscalerStatusUpdate(hpa, prev), true
}

// defaultAutoscaling defaults the autoscaling kinds; it reports whether
// obj was one.
func defaultAutoscaling(obj runtime.Object) bool {
	switch hpa := obj.(type) {
	case *autoscalingv2.HorizontalPodAutoscaler:
		defaultHorizontalPodAutoscaler(hpa)
	case *autoscalingv1.HorizontalPodAutoscaler:
		// autoscaling/v1's SetDefaults_HorizontalPodAutoscaler.
		if hpa.Spec.MinReplicas == nil {
			hpa.Spec.MinReplicas = ptrTo(int32(1))
		}
	default:
		return false
	}
	return true
}
