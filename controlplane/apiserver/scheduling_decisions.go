package apiserver

import (
	"context"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/glassplane/glassplane/api/v1alpha1"
)

// glassplane.io/v1alpha1 schedulingdecisions are the scheduler's per-pod
// decision records (issue 27), stored as they are: in the pod's namespace
// under the pod's name, owned by the pod, at
// /registry/glassplane.io/schedulingdecisions/<namespace>/<pod>. Like
// kube-apiserver with the groups it serves but does not own
// (apiextensions.k8s.io, apiregistration.k8s.io) and aggregated servers
// with theirs, the key starts with the group, so that no Kubernetes
// resource of the same plural can ever share it.
func schedulingDecisionResources() []*resource {
	return []*resource{{
		GVK: v1alpha1.SchemeGroupVersion.WithKind("SchedulingDecision"), Resource: "schedulingdecisions", Singular: "schedulingdecision",
		Namespaced: true, Verbs: verbsAll, StorageResource: v1alpha1.GroupName + "/schedulingdecisions",
		Validate: validateSchedulingDecision,
	}}
}

func init() { printers["schedulingdecisions"] = schedulingDecisionPrinter }

// validateSchedulingDecision checks a record: its name is a pod's, it
// names the pod's uid, and its counts and node entries are well formed.
func validateSchedulingDecision(_ context.Context, _ string, obj, old runtime.Object) field.ErrorList {
	r := obj.(*v1alpha1.SchedulingDecision)
	metaPath := field.NewPath("metadata")
	// A pod's name is a DNS subdomain (ValidatePodName).
	errs := apimachineryvalidation.ValidateObjectMeta(&r.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, metaPath)
	if prev, ok := old.(*v1alpha1.SchedulingDecision); ok {
		errs = append(errs, apimachineryvalidation.ValidateObjectMetaUpdate(&r.ObjectMeta, &prev.ObjectMeta, metaPath)...)
	}
	if r.PodUID == "" {
		errs = append(errs, field.Required(field.NewPath("podUID"), "the uid of the pod the attempts were made for"))
	}
	errs = append(errs, nonNegative(field.NewPath("droppedAttempts"), int64(r.DroppedAttempts))...)
	attemptsPath := field.NewPath("attempts")
	for i := range r.Attempts {
		errs = append(errs, validateSchedulingAttempt(&r.Attempts[i], attemptsPath.Index(i))...)
	}
	return errs
}

func validateSchedulingAttempt(a *v1alpha1.SchedulingAttempt, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if a.Attempt < 1 {
		errs = append(errs, field.Invalid(path.Child("attempt"), a.Attempt, "must be at least 1"))
	}
	for _, c := range []struct {
		name string
		n    int32
	}{{"nodes", a.Nodes}, {"feasible", a.Feasible}, {"filterOmitted", a.FilterOmitted}, {"scoresOmitted", a.ScoresOmitted}, {"pdbViolations", a.PDBViolations}} {
		errs = append(errs, nonNegative(path.Child(c.name), int64(c.n))...)
	}
	for i, f := range a.Filter {
		p := path.Child("filter").Index(i)
		if f.Node == "" {
			errs = append(errs, field.Required(p.Child("node"), ""))
		}
		switch {
		case f.Passed && (f.Plugin != "" || f.Reason != ""):
			errs = append(errs, field.Forbidden(p.Child("plugin"), "a node that passed every filter has no rejecting plugin or reason"))
		case !f.Passed && f.Plugin == "":
			errs = append(errs, field.Required(p.Child("plugin"), "the plugin that rejected the node"))
		}
	}
	for i, s := range a.Scores {
		p := path.Child("scores").Index(i)
		if s.Node == "" {
			errs = append(errs, field.Required(p.Child("node"), ""))
		}
		for j, ps := range s.Plugins {
			if ps.Plugin == "" {
				errs = append(errs, field.Required(p.Child("plugins").Index(j).Child("plugin"), ""))
			}
			errs = append(errs, nonNegative(p.Child("plugins").Index(j).Child("weight"), ps.Weight)...)
		}
	}
	return errs
}

func nonNegative(path *field.Path, n int64) field.ErrorList {
	if n < 0 {
		return field.ErrorList{field.Invalid(path, n, "must be greater than or equal to 0")}
	}
	return nil
}

// schedulingDecisionPrinter is `kubectl get schedulingdecisions`: the node
// and message of the newest attempt, how many attempts the pod has had,
// and (wide) the pod's uid.
var schedulingDecisionPrinter = printer{
	columns: []metav1.TableColumnDefinition{nameCol,
		col("Node", "string", "The node the newest attempt chose; <none> when it found none.", 0),
		col("Attempts", "integer", "How many scheduling attempts the pod has had (the number of the newest).", 0),
		col("Last Attempt", "string", "When the newest attempt started.", 0),
		ageCol,
		col("Pod UID", "string", "The uid of the pod the attempts were made for.", 1),
		col("Message", "string", "The newest attempt's event message.", 1),
	},
	cells: func(obj runtime.Object) []any {
		r := obj.(*v1alpha1.SchedulingDecision)
		node, attempts, last, message := "<none>", int64(0), "<none>", "<none>"
		if n := len(r.Attempts); n > 0 {
			a := r.Attempts[n-1]
			node, attempts, last, message = orNone(a.Node), int64(a.Attempt), age(a.Time), orNone(a.Message)
		}
		return []any{r.Name, node, attempts, last, age(r.CreationTimestamp), string(r.PodUID), message}
	},
}
