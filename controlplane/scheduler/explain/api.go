package explain

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/glassplane/glassplane/api/v1alpha1"
)

// Record returns the SchedulingDecision holding h, the attempts for pod
// namespace/name of uid: named after the pod, in its namespace, with an
// ownerReference to it, so that the garbage collector deletes the record
// with the pod. h should be capped first (Cap).
func Record(namespace, name string, uid types.UID, h History) *v1alpha1.SchedulingDecision {
	r := &v1alpha1.SchedulingDecision{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "SchedulingDecision"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       namespace,
			Name:            name,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: name, UID: uid}},
		},
		PodUID:          uid,
		DroppedAttempts: int32(h.Dropped),
	}
	if len(h.Attempts) > 0 {
		r.Attempts = make([]v1alpha1.SchedulingAttempt, len(h.Attempts))
	}
	for i := range h.Attempts {
		r.Attempts[i] = attemptOf(&h.Attempts[i])
	}
	return r
}

// HistoryOf returns the History a SchedulingDecision holds.
func HistoryOf(r *v1alpha1.SchedulingDecision) History {
	h := History{Pod: r.Namespace + "/" + r.Name, UID: string(r.PodUID), Dropped: int(r.DroppedAttempts)}
	if len(r.Attempts) > 0 {
		h.Attempts = make([]Decision, len(r.Attempts))
	}
	for i := range r.Attempts {
		h.Attempts[i] = decisionOf(h.Pod, &r.Attempts[i])
	}
	return h
}

func attemptOf(d *Decision) v1alpha1.SchedulingAttempt {
	a := v1alpha1.SchedulingAttempt{
		Attempt: int32(d.Attempt), Time: d.Time, Node: d.Node, Nodes: int32(d.Nodes), Feasible: int32(d.Feasible),
		FilterPlugins: d.FilterPlugins, FilterOmitted: int32(d.FilterOmitted), ScoresOmitted: int32(d.ScoresOmitted),
		NominatedNode: d.NominatedNode, Victims: d.Victims, PDBViolations: int32(d.PDBViolations), Message: d.Message,
	}
	if len(d.Filter) > 0 {
		a.Filter = make([]v1alpha1.NodeFilterResult, len(d.Filter))
		for i, f := range d.Filter {
			a.Filter[i] = v1alpha1.NodeFilterResult(f)
		}
	}
	if len(d.Scores) > 0 {
		a.Scores = make([]v1alpha1.NodeScore, len(d.Scores))
		n := 0
		for i := range d.Scores {
			n += len(d.Scores[i].Plugins)
		}
		// One array for every node's plugin scores: thousands at 1,000 nodes.
		cells := make([]v1alpha1.PluginScore, 0, n)
		for i, s := range d.Scores {
			start := len(cells)
			for _, p := range s.Plugins {
				cells = append(cells, v1alpha1.PluginScore(p))
			}
			a.Scores[i] = v1alpha1.NodeScore{Node: s.Node, Plugins: cells[start:len(cells):len(cells)], Total: s.Total}
			if len(s.Plugins) == 0 {
				a.Scores[i].Plugins = nil
			}
		}
	}
	return a
}

func decisionOf(pod string, a *v1alpha1.SchedulingAttempt) Decision {
	d := Decision{
		Attempt: int(a.Attempt), Time: a.Time, Pod: pod, Node: a.Node, Nodes: int(a.Nodes), Feasible: int(a.Feasible),
		FilterPlugins: a.FilterPlugins, FilterOmitted: int(a.FilterOmitted), ScoresOmitted: int(a.ScoresOmitted),
		NominatedNode: a.NominatedNode, Victims: a.Victims, PDBViolations: int(a.PDBViolations), Message: a.Message,
	}
	if len(a.Filter) > 0 {
		d.Filter = make([]NodeFilter, len(a.Filter))
		for i, f := range a.Filter {
			d.Filter[i] = NodeFilter(f)
		}
	}
	if len(a.Scores) > 0 {
		d.Scores = make([]NodeScore, len(a.Scores))
		for i, s := range a.Scores {
			ns := NodeScore{Node: s.Node, Total: s.Total}
			if len(s.Plugins) > 0 {
				ns.Plugins = make([]PluginScore, len(s.Plugins))
				for j, p := range s.Plugins {
					ns.Plugins[j] = PluginScore(p)
				}
			}
			d.Scores[i] = ns
		}
	}
	return d
}
