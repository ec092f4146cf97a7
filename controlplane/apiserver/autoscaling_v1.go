package apiserver

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/glassplane/glassplane/controlplane/apiserver/internal/hpaconversion"
)

// autoscaling/v1 HorizontalPodAutoscalers (what kubectl autoscale
// creates) are a view of the stored autoscaling/v2 objects, converted as
// upstream converts them (internal/hpaconversion).

func autoscalingV1Resource() *resource {
	return &resource{
		GVK: autoscalingv1.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"), Resource: "horizontalpodautoscalers",
		Singular: "horizontalpodautoscaler", ShortNames: []string{"hpa"}, Namespaced: true, Categories: []string{"all"},
		Verbs: verbsAll, StorageResource: "horizontalpodautoscalers", HasStatus: true,
		Subresources: []*subresource{statusSubresource()},
		BeginWrite:   beginHorizontalPodAutoscalerWrite,
		Stored: &storedForm{
			GVK: autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"),
			ToStored: func(obj runtime.Object) (runtime.Object, error) {
				return hpaconversion.ToV2(obj.(*autoscalingv1.HorizontalPodAutoscaler)), nil
			},
			FromStored: func(obj runtime.Object) (runtime.Object, error) {
				return hpaconversion.ToV1(obj.(*autoscalingv2.HorizontalPodAutoscaler)), nil
			},
		},
	}
}
