package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/glassplane/glassplane/api/v1alpha1"
	"github.com/glassplane/glassplane/components"
	"github.com/glassplane/glassplane/controlplane/scheduler/explain"
)

// decisionRecordResource is the decision records' resource, as object
// pages name it.
const decisionRecordResource = "schedulingdecisions." + v1alpha1.GroupName

// readDecisionRecord reads the decision record of pod namespace/name, the
// SchedulingDecision of its name, through the API as r's user; a missing
// record is the API's NotFound.
func (d *Dashboard) readDecisionRecord(ctx context.Context, r *http.Request, namespace, name string) (*v1alpha1.SchedulingDecision, error) {
	client, err := d.api(r)
	if err != nil {
		return nil, err
	}
	res := client.CoreV1().RESTClient().Get().
		AbsPath("/apis", v1alpha1.GroupName, v1alpha1.SchemeGroupVersion.Version, "namespaces", namespace, "schedulingdecisions", name).
		SetHeader("Accept", "application/json").Do(ctx)
	// Error, not DoRaw's error, carries the API's Status.
	if err := res.Error(); err != nil {
		return nil, err
	}
	raw, err := res.Raw()
	if err != nil {
		return nil, err
	}
	var rec v1alpha1.SchedulingDecision
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("the decision record is not a SchedulingDecision: %w", err)
	}
	return &rec, nil
}

// boundDecision reads the attempt that bound pod namespace/name (of uid)
// from its decision record, as r's user, in the compact form the pod page
// shows; nil when the pod has no record (or the dashboard no API), or was
// not bound by a recorded attempt.
func (d *Dashboard) boundDecision(ctx context.Context, r *http.Request, namespace, name, uid string) (*components.Decision, error) {
	rec, err := d.readDecisionRecord(ctx, r, namespace, name)
	if apierrors.IsNotFound(err) || errors.Is(err, errNoAPI) {
		return nil, nil
	}
	if err != nil {
		return nil, errors.New(apiMessage(err))
	}
	h := explain.HistoryOf(rec)
	if h.UID != uid {
		// An earlier pod's of the same name, not yet collected.
		return nil, nil
	}
	for i := len(h.Attempts) - 1; i >= 0; i-- {
		if h.Attempts[i].Node == "" {
			continue
		}
		b, err := explain.Compact(h.Attempts[i])
		if err != nil {
			return nil, fmt.Errorf("failed to shorten attempt %d: %w", h.Attempts[i].Attempt, err)
		}
		return decisionView(string(b))
	}
	return nil, nil
}

// schedulingEvents reads the Scheduled and FailedScheduling Events of pod
// namespace/name through the API as r's user, oldest first: what any
// scheduler tells of its decision (kube-scheduler's as events.k8s.io
// Events, read here as core ones). uid, when set, leaves out the events of
// an earlier pod of the name.
func (d *Dashboard) schedulingEvents(ctx context.Context, r *http.Request, namespace, name, uid string) ([]components.SchedulingEvent, error) {
	client, err := d.api(r)
	if err != nil {
		return nil, err
	}
	selector := fields.AndSelectors(fields.OneTermEqualSelector("involvedObject.kind", "Pod"), fields.OneTermEqualSelector("involvedObject.name", name))
	list, err := client.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: selector.String()})
	if err != nil {
		return nil, err
	}
	type timed struct {
		at time.Time
		ev components.SchedulingEvent
	}
	var out []timed
	for i := range list.Items {
		e := &list.Items[i]
		if e.Reason != "Scheduled" && e.Reason != "FailedScheduling" {
			continue
		}
		if uid != "" && e.InvolvedObject.UID != "" && string(e.InvolvedObject.UID) != uid {
			continue
		}
		at := eventTime(e)
		out = append(out, timed{at, components.SchedulingEvent{
			Time: timestamp(at), Warning: e.Type == corev1.EventTypeWarning, Reason: e.Reason, From: eventSource(e),
			Count: eventCount(e), Message: e.Message, Summary: eventSummary(e.Annotations[explain.SummaryAnnotation]),
		}})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	events := make([]components.SchedulingEvent, len(out))
	for i, t := range out {
		events[i] = t.ev
	}
	return events, nil
}

// eventSource is the component that reported an Event.
func eventSource(e *corev1.Event) string {
	if e.Source.Component != "" {
		return e.Source.Component
	}
	return e.ReportingController
}

// eventCount is how many times an Event happened.
func eventCount(e *corev1.Event) int {
	if e.Series != nil && e.Series.Count > 0 {
		return int(e.Series.Count)
	}
	return max(1, int(e.Count))
}

// eventSummary reads the explain.Summary Glassplane's scheduler attaches
// to its Events; nil without one, or when it cannot be read.
func eventSummary(annotation string) *components.EventSummary {
	if annotation == "" {
		return nil
	}
	var s explain.Summary
	if err := json.Unmarshal([]byte(annotation), &s); err != nil {
		return nil
	}
	out := &components.EventSummary{Nodes: s.Nodes, Evaluated: s.Evaluated, Feasible: s.Feasible}
	for _, p := range sortedKeys(s.Rejected) {
		out.Rejected = append(out.Rejected, components.PluginCount{Plugin: p, Nodes: s.Rejected[p]})
	}
	return out
}
