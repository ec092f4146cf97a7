package apiserver

import (
	"context"
	"fmt"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/glassplane/glassplane/controlplane/apiserver/internal/hpaconversion"
)

// autoscalingResources are the registry entries of autoscaling:
// autoscaling/v2 HorizontalPodAutoscalers, stored under
// /registry/horizontalpodautoscalers with a status subresource, and the
// metrics.k8s.io/v1beta1 resources their controller reads
// (metrics.go).
func autoscalingResources() []*resource {
	return append([]*resource{{
		GVK: autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"), Resource: "horizontalpodautoscalers",
		Singular: "horizontalpodautoscaler", ShortNames: []string{"hpa"}, Namespaced: true, Categories: []string{"all"},
		Verbs: verbsAll, StorageResource: "horizontalpodautoscalers", HasStatus: true,
		Subresources: []*subresource{statusSubresource()},
		BeginWrite:   beginHorizontalPodAutoscalerWrite,
	}}, append([]*resource{autoscalingV1Resource()}, metricsResources()...)...)
}

// beginHorizontalPodAutoscalerWrite clears the status of a created HPA, as
// upstream's strategy does in PrepareForCreate: only the controller
// writes it, through the status subresource.
func beginHorizontalPodAutoscalerWrite(_ *Server, _ context.Context, next, old runtime.Object) (func(bool), error) {
	if old != nil {
		return func(bool) {}, nil
	}
	switch hpa := next.(type) {
	case *autoscalingv2.HorizontalPodAutoscaler:
		hpa.Status = autoscalingv2.HorizontalPodAutoscalerStatus{}
	case *autoscalingv1.HorizontalPodAutoscaler:
		hpa.Status = autoscalingv1.HorizontalPodAutoscalerStatus{}
	}
	return func(bool) {}, nil
}

// horizontalPodAutoscalerPrinter is printers.go's HPA table.
var horizontalPodAutoscalerPrinter = printer{
	columns: []metav1.TableColumnDefinition{nameCol,
		col("Reference", "string", "scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be collected, as well as to actually change the replica count.", 0),
		col("Targets", "string", "metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used).", 0),
		col("MinPods", "string", "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.", 0),
		col("MaxPods", "integer", "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up. It cannot be less that minReplicas.", 0),
		col("Replicas", "integer", "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler.", 0),
		ageCol,
	},
	cells: func(obj runtime.Object) []any {
		hpa, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler)
		if !ok {
			hpa = hpaconversion.ToV2(obj.(*autoscalingv1.HorizontalPodAutoscaler))
		}
		minPods := "<unset>"
		if hpa.Spec.MinReplicas != nil {
			minPods = fmt.Sprint(*hpa.Spec.MinReplicas)
		}
		return []any{hpa.Name, hpa.Spec.ScaleTargetRef.Kind + "/" + hpa.Spec.ScaleTargetRef.Name,
			formatHPAMetrics(hpa.Spec.Metrics, hpa.Status.CurrentMetrics), minPods,
			int64(hpa.Spec.MaxReplicas), int64(hpa.Status.CurrentReplicas), age(hpa.CreationTimestamp)}
	},
}

// formatHPAMetrics is printers.go's Targets cell: "cpu: 42%/50%" for each
// metric (current/target), at most two, then "+ N more...".
func formatHPAMetrics(specs []autoscalingv2.MetricSpec, statuses []autoscalingv2.MetricStatus) string {
	if len(specs) == 0 {
		return "<none>"
	}
	const most = 2
	var list []string
	for i, spec := range specs {
		var status *autoscalingv2.MetricStatus
		if i < len(statuses) {
			status = &statuses[i]
		}
		list = append(list, formatHPAMetric(spec, status))
	}
	if len(list) > most {
		return fmt.Sprintf("%s + %d more...", strings.Join(list[:most], ", "), len(list)-most)
	}
	return strings.Join(list, ", ")
}

func formatHPAMetric(spec autoscalingv2.MetricSpec, status *autoscalingv2.MetricStatus) string {
	current := "<unknown>"
	switch spec.Type {
	case autoscalingv2.ResourceMetricSourceType, autoscalingv2.ContainerResourceMetricSourceType:
		name, target := "", autoscalingv2.MetricTarget{}
		var cur *autoscalingv2.MetricValueStatus
		if r := spec.Resource; r != nil {
			name, target = r.Name.String(), r.Target
			if status != nil && status.Resource != nil {
				cur = &status.Resource.Current
			}
		} else if r := spec.ContainerResource; r != nil {
			name, target = r.Name.String(), r.Target
			if status != nil && status.ContainerResource != nil {
				cur = &status.ContainerResource.Current
			}
		} else {
			return "<unknown type>"
		}
		if target.AverageValue != nil {
			if cur != nil && cur.AverageValue != nil {
				current = cur.AverageValue.String()
			}
			return fmt.Sprintf("%s: %s/%s", name, current, target.AverageValue.String())
		}
		if cur != nil && cur.AverageUtilization != nil {
			current = fmt.Sprintf("%d%%", *cur.AverageUtilization)
		}
		want := "<auto>"
		if target.AverageUtilization != nil {
			want = fmt.Sprintf("%d%%", *target.AverageUtilization)
		}
		return fmt.Sprintf("%s: %s/%s", name, current, want)
	case autoscalingv2.PodsMetricSourceType:
		if spec.Pods == nil || spec.Pods.Target.AverageValue == nil {
			return "<unknown type>"
		}
		if status != nil && status.Pods != nil && status.Pods.Current.AverageValue != nil {
			current = status.Pods.Current.AverageValue.String()
		}
		return fmt.Sprintf("%s/%s", current, spec.Pods.Target.AverageValue.String())
	case autoscalingv2.ObjectMetricSourceType, autoscalingv2.ExternalMetricSourceType:
		target := autoscalingv2.MetricTarget{}
		var cur *autoscalingv2.MetricValueStatus
		switch {
		case spec.Object != nil:
			target = spec.Object.Target
			if status != nil && status.Object != nil {
				cur = &status.Object.Current
			}
		case spec.External != nil:
			target = spec.External.Target
			if status != nil && status.External != nil {
				cur = &status.External.Current
			}
		default:
			return "<unknown type>"
		}
		switch {
		case target.AverageValue != nil:
			if cur != nil && cur.AverageValue != nil {
				current = cur.AverageValue.String()
			}
			return fmt.Sprintf("%s/%s (avg)", current, target.AverageValue.String())
		case target.Value != nil:
			if cur != nil && cur.Value != nil {
				current = cur.Value.String()
			}
			return fmt.Sprintf("%s/%s", current, target.Value.String())
		}
	}
	return "<unknown type>"
}
