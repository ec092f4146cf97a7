package apiserver

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
)

// The tables of jobs, daemon sets, controller revisions and pod disruption
// budgets, as Kubernetes' printers.go draws them.
var (
	jobPrinter = printer{
		columns: []metav1.TableColumnDefinition{nameCol,
			col("Status", "string", "Status of the job.", 0),
			col("Completions", "string", "The desired number of successfully finished pods the job should be run with.", 0),
			col("Duration", "string", "Time required to complete the job.", 0),
			ageCol,
			col("Containers", "string", "Names of each container in the template.", 1),
			col("Images", "string", "Images referenced by each container in the template.", 1),
			col("Selector", "string", "A label query over pods that should match the pod count.", 1),
		},
		cells: jobCells,
	}
	daemonSetPrinter = printer{
		columns: []metav1.TableColumnDefinition{nameCol,
			col("Desired", "integer", "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod).", 0),
			col("Current", "integer", "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod.", 0),
			col("Ready", "integer", "numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition.", 0),
			col("Up-to-date", "integer", "The total number of nodes that are running updated daemon pod", 0),
			col("Available", "integer", "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)", 0),
			col("Node Selector", "string", "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node.", 0),
			ageCol,
			col("Containers", "string", "Names of each container in the template.", 1),
			col("Images", "string", "Images referenced by each container in the template.", 1),
			col("Selector", "string", "A label query over pods that are managed by the daemon set.", 1),
		},
		cells: daemonSetCells,
	}
	controllerRevisionPrinter = printer{
		columns: []metav1.TableColumnDefinition{nameCol,
			col("Controller", "string", "Controller of the object", 0),
			col("Revision", "string", "Revision indicates the revision of the state represented by Data.", 0),
			ageCol,
		},
		cells: func(obj runtime.Object) []any {
			r := obj.(*appsv1.ControllerRevision)
			controller := "<none>"
			if ref := metav1.GetControllerOf(r); ref != nil {
				if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil {
					controller = strings.ToLower(gv.WithKind(ref.Kind).GroupKind().String()) + "/" + ref.Name
				}
			}
			return []any{r.Name, controller, r.Revision, age(r.CreationTimestamp)}
		},
	}
	podDisruptionBudgetPrinter = printer{
		columns: []metav1.TableColumnDefinition{nameCol,
			col("Min Available", "string", "The minimum number of pods that must be available.", 0),
			col("Max Unavailable", "string", "The maximum number of pods that may be unavailable.", 0),
			col("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time.", 0),
			ageCol,
		},
		cells: func(obj runtime.Object) []any {
			pdb := obj.(*policyv1.PodDisruptionBudget)
			minAvailable, maxUnavailable := "N/A", "N/A"
			if pdb.Spec.MinAvailable != nil {
				minAvailable = pdb.Spec.MinAvailable.String()
			}
			if pdb.Spec.MaxUnavailable != nil {
				maxUnavailable = pdb.Spec.MaxUnavailable.String()
			}
			return []any{pdb.Name, minAvailable, maxUnavailable, int64(pdb.Status.DisruptionsAllowed), age(pdb.CreationTimestamp)}
		},
	}
)

func jobCells(obj runtime.Object) []any {
	j := obj.(*batchv1.Job)
	status := "Running"
	switch {
	case jobHasCondition(j, batchv1.JobComplete):
		status = "Complete"
	case jobHasCondition(j, batchv1.JobFailed):
		status = "Failed"
	case j.DeletionTimestamp != nil:
		status = "Terminating"
	case jobHasCondition(j, batchv1.JobSuspended):
		status = "Suspended"
	case jobHasCondition(j, batchv1.JobFailureTarget):
		status = "FailureTarget"
	case jobHasCondition(j, batchv1.JobSuccessCriteriaMet):
		status = "SuccessCriteriaMet"
	}
	var completions string
	switch {
	case j.Spec.Completions != nil:
		completions = fmt.Sprintf("%d/%d", j.Status.Succeeded, *j.Spec.Completions)
	case j.Spec.Parallelism != nil && *j.Spec.Parallelism > 1:
		completions = fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, *j.Spec.Parallelism)
	default:
		completions = fmt.Sprintf("%d/1", j.Status.Succeeded)
	}
	var took string
	switch {
	case j.Status.StartTime == nil:
	case j.Status.CompletionTime == nil:
		took = duration.HumanDuration(time.Since(j.Status.StartTime.Time))
	default:
		took = duration.HumanDuration(j.Status.CompletionTime.Sub(j.Status.StartTime.Time))
	}
	names, images := containerSummary(j.Spec.Template.Spec.Containers)
	return []any{j.Name, status, completions, took, age(j.CreationTimestamp), names, images, selectorString(j.Spec.Selector)}
}

func jobHasCondition(j *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func daemonSetCells(obj runtime.Object) []any {
	ds := obj.(*appsv1.DaemonSet)
	st := ds.Status
	names, images := containerSummary(ds.Spec.Template.Spec.Containers)
	return []any{ds.Name, int64(st.DesiredNumberScheduled), int64(st.CurrentNumberScheduled), int64(st.NumberReady),
		int64(st.UpdatedNumberScheduled), int64(st.NumberAvailable), labels.FormatLabels(ds.Spec.Template.Spec.NodeSelector),
		age(ds.CreationTimestamp), names, images, selectorString(ds.Spec.Selector)}
}
