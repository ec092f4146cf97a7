package apiserver

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// The tables of cron jobs, replication controllers and pod templates, as
// Kubernetes' printers.go draws them.
var (
	cronJobPrinter = printer{
		columns: []metav1.TableColumnDefinition{nameCol,
			col("Schedule", "string", batchv1.CronJobSpec{}.SwaggerDoc()["schedule"], 0),
			col("Timezone", "string", batchv1.CronJobSpec{}.SwaggerDoc()["timeZone"], 0),
			col("Suspend", "boolean", batchv1.CronJobSpec{}.SwaggerDoc()["suspend"], 0),
			col("Active", "integer", batchv1.CronJobStatus{}.SwaggerDoc()["active"], 0),
			col("Last Schedule", "string", batchv1.CronJobStatus{}.SwaggerDoc()["lastScheduleTime"], 0),
			ageCol,
			col("Containers", "string", "Names of each container in the template.", 1),
			col("Images", "string", "Images referenced by each container in the template.", 1),
			col("Selector", "string", batchv1.JobSpec{}.SwaggerDoc()["selector"], 1),
		},
		cells: cronJobCells,
	}
	replicationControllerPrinter = printer{
		columns: []metav1.TableColumnDefinition{nameCol,
			col("Desired", "integer", corev1.ReplicationControllerSpec{}.SwaggerDoc()["replicas"], 0),
			col("Current", "integer", corev1.ReplicationControllerStatus{}.SwaggerDoc()["replicas"], 0),
			col("Ready", "integer", corev1.ReplicationControllerStatus{}.SwaggerDoc()["readyReplicas"], 0),
			ageCol,
			col("Containers", "string", "Names of each container in the template.", 1),
			col("Images", "string", "Images referenced by each container in the template.", 1),
			col("Selector", "string", corev1.ReplicationControllerSpec{}.SwaggerDoc()["selector"], 1),
		},
		cells: replicationControllerCells,
	}
	podTemplatePrinter = printer{
		columns: []metav1.TableColumnDefinition{nameCol,
			col("Containers", "string", "Names of each container in the template.", 0),
			col("Images", "string", "Images referenced by each container in the template.", 0),
			col("Pod Labels", "string", "The labels for the pod template.", 0),
		},
		cells: func(obj runtime.Object) []any {
			t := obj.(*corev1.PodTemplate)
			names, images := containerSummary(t.Template.Spec.Containers)
			return []any{t.Name, names, images, labels.FormatLabels(t.Template.Labels)}
		},
	}
)

func cronJobCells(obj runtime.Object) []any {
	cj := obj.(*batchv1.CronJob)
	timeZone := "<none>"
	if cj.Spec.TimeZone != nil {
		timeZone = *cj.Spec.TimeZone
	}
	suspend := "<unset>"
	if cj.Spec.Suspend != nil {
		suspend = "False"
		if *cj.Spec.Suspend {
			suspend = "True"
		}
	}
	lastSchedule := "<none>"
	if cj.Status.LastScheduleTime != nil {
		lastSchedule = age(*cj.Status.LastScheduleTime)
	}
	names, images := containerSummary(cj.Spec.JobTemplate.Spec.Template.Spec.Containers)
	return []any{cj.Name, cj.Spec.Schedule, timeZone, suspend, int64(len(cj.Status.Active)), lastSchedule, age(cj.CreationTimestamp),
		names, images, selectorString(cj.Spec.JobTemplate.Spec.Selector)}
}

func replicationControllerCells(obj runtime.Object) []any {
	rc := obj.(*corev1.ReplicationController)
	names, images := containerSummary(podTemplateContainers(rc.Spec.Template))
	return []any{rc.Name, int64(replicas(rc.Spec.Replicas)), int64(rc.Status.Replicas), int64(rc.Status.ReadyReplicas), age(rc.CreationTimestamp),
		names, images, labels.FormatLabels(rc.Spec.Selector)}
}

func podTemplateContainers(t *corev1.PodTemplateSpec) []corev1.Container {
	if t == nil {
		return nil
	}
	return t.Spec.Containers
}
