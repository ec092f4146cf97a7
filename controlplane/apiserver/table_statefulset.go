package apiserver

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// statefulSetPrinter draws StatefulSets as Kubernetes' printers.go does:
// ready over desired replicas, and the template's containers and images
// when wide.
var statefulSetPrinter = printer{
	columns: []metav1.TableColumnDefinition{nameCol,
		col("Ready", "string", "Number of the pod with ready state", 0),
		ageCol,
		col("Containers", "string", "Names of each container in the template.", 1),
		col("Images", "string", "Images referenced by each container in the template.", 1),
	},
	cells: func(obj runtime.Object) []any {
		s := obj.(*appsv1.StatefulSet)
		var desired int32
		if s.Spec.Replicas != nil {
			desired = *s.Spec.Replicas
		}
		names, images := containerSummary(s.Spec.Template.Spec.Containers)
		return []any{s.Name, fmt.Sprintf("%d/%d", s.Status.ReadyReplicas, desired), age(s.CreationTimestamp), names, images}
	},
}
