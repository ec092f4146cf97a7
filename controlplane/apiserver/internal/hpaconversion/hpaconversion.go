// Package hpaconversion converts HorizontalPodAutoscalers between
// autoscaling/v1 and autoscaling/v2 as upstream does:
// targetCPUUtilizationPercentage is the CPU utilization metric, and what v1
// cannot hold (other metrics, behavior, conditions) rides in the
// autoscaling.alpha.kubernetes.io annotations. The API server serves v1 as
// a view of stored v2 objects; admission validates v1 writes as v2.
package hpaconversion

import (
	"encoding/json"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// Annotations that carry what autoscaling/v1 has no field for.
const (
	hpaMetricsAnnotation        = "autoscaling.alpha.kubernetes.io/metrics"
	hpaCurrentMetricsAnnotation = "autoscaling.alpha.kubernetes.io/current-metrics"
	hpaBehaviorAnnotation       = "autoscaling.alpha.kubernetes.io/behavior"
	hpaConditionsAnnotation     = "autoscaling.alpha.kubernetes.io/conditions"
)

func isCPUUtilization(m autoscalingv2.MetricSpec) bool {
	return m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU &&
		m.Resource.Target.Type == autoscalingv2.UtilizationMetricType && m.Resource.Target.AverageUtilization != nil
}

// ToV1 converts a stored autoscaling/v2 HPA to autoscaling/v1.
func ToV1(in *autoscalingv2.HorizontalPodAutoscaler) *autoscalingv1.HorizontalPodAutoscaler {
	out := &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: *in.ObjectMeta.DeepCopy()}
	out.SetGroupVersionKind(autoscalingv1.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"))
	out.Spec = autoscalingv1.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{Kind: in.Spec.ScaleTargetRef.Kind, Name: in.Spec.ScaleTargetRef.Name, APIVersion: in.Spec.ScaleTargetRef.APIVersion},
		MinReplicas:    in.Spec.MinReplicas, MaxReplicas: in.Spec.MaxReplicas,
	}
	var others []autoscalingv2.MetricSpec
	for _, m := range in.Spec.Metrics {
		if isCPUUtilization(m) && out.Spec.TargetCPUUtilizationPercentage == nil {
			u := *m.Resource.Target.AverageUtilization
			out.Spec.TargetCPUUtilizationPercentage = &u
			continue
		}
		others = append(others, m)
	}
	out.Status = autoscalingv1.HorizontalPodAutoscalerStatus{
		ObservedGeneration: in.Status.ObservedGeneration, LastScaleTime: in.Status.LastScaleTime,
		CurrentReplicas: in.Status.CurrentReplicas, DesiredReplicas: in.Status.DesiredReplicas,
	}
	var otherCurrent []autoscalingv2.MetricStatus
	for _, m := range in.Status.CurrentMetrics {
		if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Current.AverageUtilization != nil && out.Status.CurrentCPUUtilizationPercentage == nil {
			u := *m.Resource.Current.AverageUtilization
			out.Status.CurrentCPUUtilizationPercentage = &u
			continue
		}
		otherCurrent = append(otherCurrent, m)
	}
	setJSONAnnotation(&out.ObjectMeta.Annotations, hpaMetricsAnnotation, others, len(others) > 0)
	setJSONAnnotation(&out.ObjectMeta.Annotations, hpaCurrentMetricsAnnotation, otherCurrent, len(otherCurrent) > 0)
	setJSONAnnotation(&out.ObjectMeta.Annotations, hpaBehaviorAnnotation, in.Spec.Behavior, in.Spec.Behavior != nil)
	setJSONAnnotation(&out.ObjectMeta.Annotations, hpaConditionsAnnotation, in.Status.Conditions, len(in.Status.Conditions) > 0)
	return out
}

// ToV2 converts an autoscaling/v1 HPA to the stored autoscaling/v2.
func ToV2(in *autoscalingv1.HorizontalPodAutoscaler) *autoscalingv2.HorizontalPodAutoscaler {
	out := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: *in.ObjectMeta.DeepCopy()}
	out.SetGroupVersionKind(autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"))
	out.Spec = autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: in.Spec.ScaleTargetRef.Kind, Name: in.Spec.ScaleTargetRef.Name, APIVersion: in.Spec.ScaleTargetRef.APIVersion},
		MinReplicas:    in.Spec.MinReplicas, MaxReplicas: in.Spec.MaxReplicas,
	}
	if u := in.Spec.TargetCPUUtilizationPercentage; u != nil {
		v := *u
		out.Spec.Metrics = append(out.Spec.Metrics, autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &v}}})
	}
	out.Status = autoscalingv2.HorizontalPodAutoscalerStatus{
		ObservedGeneration: in.Status.ObservedGeneration, LastScaleTime: in.Status.LastScaleTime,
		CurrentReplicas: in.Status.CurrentReplicas, DesiredReplicas: in.Status.DesiredReplicas,
	}
	if u := in.Status.CurrentCPUUtilizationPercentage; u != nil {
		v := *u
		out.Status.CurrentMetrics = append(out.Status.CurrentMetrics, autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: &v}}})
	}
	var others []autoscalingv2.MetricSpec
	if takeJSONAnnotation(&out.ObjectMeta.Annotations, hpaMetricsAnnotation, &others) {
		out.Spec.Metrics = append(out.Spec.Metrics, others...)
	}
	var otherCurrent []autoscalingv2.MetricStatus
	if takeJSONAnnotation(&out.ObjectMeta.Annotations, hpaCurrentMetricsAnnotation, &otherCurrent) {
		out.Status.CurrentMetrics = append(out.Status.CurrentMetrics, otherCurrent...)
	}
	var behavior autoscalingv2.HorizontalPodAutoscalerBehavior
	if takeJSONAnnotation(&out.ObjectMeta.Annotations, hpaBehaviorAnnotation, &behavior) {
		out.Spec.Behavior = &behavior
	}
	var conditions []autoscalingv2.HorizontalPodAutoscalerCondition
	if takeJSONAnnotation(&out.ObjectMeta.Annotations, hpaConditionsAnnotation, &conditions) {
		out.Status.Conditions = conditions
	}
	return out
}

func setJSONAnnotation(annotations *map[string]string, key string, v any, set bool) {
	if !set {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	if *annotations == nil {
		*annotations = map[string]string{}
	}
	(*annotations)[key] = string(b)
}

// takeJSONAnnotation decodes and removes an annotation; it reports whether
// it held a value.
func takeJSONAnnotation(annotations *map[string]string, key string, into any) bool {
	s, ok := (*annotations)[key]
	if !ok {
		return false
	}
	delete(*annotations, key)
	if len(*annotations) == 0 {
		*annotations = nil
	}
	return json.Unmarshal([]byte(s), into) == nil
}
