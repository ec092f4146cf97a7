package web

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/glassplane/glassplane/components"
)

// The HPA page replays the HPA's stored revisions through a watch from the
// oldest revision the API server keeps: it stops historyIdle after the
// last change replayed, and after historyMax at most.
const (
	historyIdle = 300 * time.Millisecond
	historyMax  = 2 * time.Second
)

// hpaView reads what a HorizontalPodAutoscaler's page shows beside the
// stored object, through the API as the page's user: the HPA, its metric
// over the revisions the API server still holds (a watch from the oldest),
// and its rescale Events.
func (d *Dashboard) hpaView(ctx context.Context, r *http.Request, namespace, name string, now time.Time) *components.HPA {
	client, err := d.api(r)
	if err != nil {
		return &components.HPA{Error: fmt.Sprintf("failed to read horizontalpodautoscaler %q: %v", name, err)}
	}
	hpa, err := client.AutoscalingV2().HorizontalPodAutoscalers(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return &components.HPA{Error: err.Error()}
	}
	vm := hpaSpec(hpa)
	events, err := client.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String()})
	if err != nil {
		vm.DecisionsError = err.Error()
	} else {
		vm.Decisions = scalingDecisions(hpa, events.Items)
	}
	if len(hpa.Spec.Metrics) > 0 {
		vm.Chart = hpaChart(hpa, hpaHistory(ctx, client, hpa), vm.Decisions, now)
	}
	return vm
}

// hpaSpec is the HPA's spec and status as the page shows them.
func hpaSpec(h *autoscalingv2.HorizontalPodAutoscaler) *components.HPA {
	ref := h.Spec.ScaleTargetRef
	vm := &components.HPA{
		Target: ref.Kind + "/" + ref.Name, MaxReplicas: h.Spec.MaxReplicas, MinReplicas: 1,
		CurrentReplicas: h.Status.CurrentReplicas, DesiredReplicas: h.Status.DesiredReplicas,
	}
	if res := resourceOfKind(ref.Kind); res != "" {
		vm.TargetHref = objectHref(res, h.Namespace, ref.Name)
	}
	if h.Spec.MinReplicas != nil {
		vm.MinReplicas = *h.Spec.MinReplicas
	}
	if t := h.Status.LastScaleTime; t != nil {
		vm.LastScaleTime = t.UTC().Format(time.RFC3339)
	}
	for i, m := range h.Spec.Metrics {
		row := components.HPAMetric{Name: metricName(m), Target: metricTarget(m), Current: "<unknown>"}
		if st := currentMetric(h, i); st != nil {
			if v, unit, ok := metricValue(m, *st); ok {
				row.Current = formatMetric(v, unit)
			}
		}
		vm.Metrics = append(vm.Metrics, row)
	}
	for _, c := range h.Status.Conditions {
		cond := components.Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message}
		if !c.LastTransitionTime.IsZero() {
			cond.Time = c.LastTransitionTime.UTC().Format(time.RFC3339)
		}
		vm.Conditions = append(vm.Conditions, cond)
	}
	return vm
}

// metricName names a metric as the controller's reasons do ("cpu
// resource utilization (percentage of request)").
func metricName(m autoscalingv2.MetricSpec) string {
	switch {
	case m.Resource != nil:
		if m.Resource.Target.Type == autoscalingv2.UtilizationMetricType {
			return string(m.Resource.Name) + " resource utilization (percentage of request)"
		}
		return string(m.Resource.Name) + " resource"
	case m.ContainerResource != nil:
		if m.ContainerResource.Target.Type == autoscalingv2.UtilizationMetricType {
			return string(m.ContainerResource.Name) + " container resource utilization (percentage of request)"
		}
		return string(m.ContainerResource.Name) + " container resource"
	case m.Pods != nil:
		return "pods metric " + m.Pods.Metric.Name
	case m.Object != nil:
		return m.Object.Metric.Name + " metric on " + m.Object.DescribedObject.Kind + "/" + m.Object.DescribedObject.Name
	case m.External != nil:
		return "external metric " + m.External.Metric.Name
	}
	return string(m.Type)
}

// metricTarget is a metric's target ("50%", "200m").
func metricTarget(m autoscalingv2.MetricSpec) string {
	t, ok := metricTargetOf(m)
	if !ok {
		return ""
	}
	switch {
	case t.AverageUtilization != nil:
		return strconv.Itoa(int(*t.AverageUtilization)) + "%"
	case t.AverageValue != nil:
		return t.AverageValue.String()
	case t.Value != nil:
		return t.Value.String()
	}
	return ""
}

func metricTargetOf(m autoscalingv2.MetricSpec) (autoscalingv2.MetricTarget, bool) {
	switch {
	case m.Resource != nil:
		return m.Resource.Target, true
	case m.ContainerResource != nil:
		return m.ContainerResource.Target, true
	case m.Pods != nil:
		return m.Pods.Target, true
	case m.Object != nil:
		return m.Object.Target, true
	case m.External != nil:
		return m.External.Target, true
	}
	return autoscalingv2.MetricTarget{}, false
}

// currentMetric is the status of spec.metrics[i]: the controller reports
// them in the same order.
func currentMetric(h *autoscalingv2.HorizontalPodAutoscaler, i int) *autoscalingv2.MetricStatus {
	if i >= len(h.Status.CurrentMetrics) || h.Status.CurrentMetrics[i].Type != h.Spec.Metrics[i].Type {
		return nil
	}
	return &h.Status.CurrentMetrics[i]
}

// metricValue is a metric's current value in the unit of its target: a
// percentage for a utilization target, else the quantity (millis shown as
// such for CPU).
func metricValue(m autoscalingv2.MetricSpec, st autoscalingv2.MetricStatus) (float64, string, bool) {
	t, ok := metricTargetOf(m)
	if !ok {
		return 0, "", false
	}
	var cur autoscalingv2.MetricValueStatus
	switch {
	case st.Resource != nil:
		cur = st.Resource.Current
	case st.ContainerResource != nil:
		cur = st.ContainerResource.Current
	case st.Pods != nil:
		cur = st.Pods.Current
	case st.Object != nil:
		cur = st.Object.Current
	case st.External != nil:
		cur = st.External.Current
	default:
		return 0, "", false
	}
	switch {
	case t.Type == autoscalingv2.UtilizationMetricType && cur.AverageUtilization != nil:
		return float64(*cur.AverageUtilization), "%", true
	case cur.AverageValue != nil:
		return float64(cur.AverageValue.MilliValue()) / 1000, "", true
	case cur.Value != nil:
		return float64(cur.Value.MilliValue()) / 1000, "", true
	}
	return 0, "", false
}

// targetValue is a metric's target in the unit of metricValue.
func targetValue(m autoscalingv2.MetricSpec) float64 {
	t, _ := metricTargetOf(m)
	switch {
	case t.AverageUtilization != nil:
		return float64(*t.AverageUtilization)
	case t.AverageValue != nil:
		return float64(t.AverageValue.MilliValue()) / 1000
	case t.Value != nil:
		return float64(t.Value.MilliValue()) / 1000
	}
	return 0
}

func formatMetric(v float64, unit string) string {
	return strconv.FormatFloat(v, 'f', -1, 64) + unit
}

// hpaHistory replays the HPA's revisions the API server still holds: a
// watch from resourceVersion 1, which a compacted history answers with
// 410 Gone naming the oldest revision kept ("too old resource version: 1
// (N)"), watched from then. It returns what it read, oldest first; none
// when the server keeps no history or refuses the watch.
func hpaHistory(ctx context.Context, client kubernetes.Interface, h *autoscalingv2.HorizontalPodAutoscaler) []*autoscalingv2.HorizontalPodAutoscaler {
	until, err := strconv.ParseInt(h.ResourceVersion, 10, 64)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, historyMax)
	defer cancel()
	hpas := client.AutoscalingV2().HorizontalPodAutoscalers(h.Namespace)
	from := "1"
	for range 2 {
		w, err := hpas.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", h.Name).String(), ResourceVersion: from})
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			if from = oldestKept(err.Error()); from != "" {
				continue
			}
		}
		if err != nil {
			return nil
		}
		out, expired := replay(w, h, until)
		if expired == "" {
			return out
		}
		if from = oldestKept(expired); from == "" {
			return out
		}
	}
	return nil
}

// tooOld reads the oldest revision kept from kube-apiserver's "too old
// resource version: 1 (N)".
var tooOld = regexp.MustCompile(`too old resource version: \d+ \((\d+)\)`)

func oldestKept(msg string) string {
	if m := tooOld.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	return ""
}

// replay reads w until it has seen revision until of h, nothing came for
// historyIdle, or w ends; a 410 ERROR event returns its message.
func replay(w watch.Interface, h *autoscalingv2.HorizontalPodAutoscaler, until int64) (out []*autoscalingv2.HorizontalPodAutoscaler, expired string) {
	defer w.Stop()
	idle := time.NewTimer(historyIdle)
	defer idle.Stop()
	for {
		select {
		case <-idle.C:
			return out, ""
		case ev, ok := <-w.ResultChan():
			if !ok {
				return out, ""
			}
			if ev.Type == watch.Error {
				if st, ok := ev.Object.(*metav1.Status); ok && st.Code == http.StatusGone {
					return nil, st.Message
				}
				return out, ""
			}
			got, ok := ev.Object.(*autoscalingv2.HorizontalPodAutoscaler)
			if !ok || got.UID != h.UID || ev.Type == watch.Deleted {
				continue
			}
			out = append(out, got)
			if rv, err := strconv.ParseInt(got.ResourceVersion, 10, 64); err == nil && rv >= until {
				return out, ""
			}
			idle.Reset(historyIdle)
		}
	}
}

// statusTime is when h's status was last written: the newest time of a
// managedFields entry of its status subresource.
func statusTime(h *autoscalingv2.HorizontalPodAutoscaler) time.Time {
	var t time.Time
	for _, f := range h.ManagedFields {
		if f.Subresource == "status" && f.Time != nil && f.Time.After(t) {
			t = f.Time.Time
		}
	}
	return t
}

// hpaChart plots the first metric of h: one sample per revision of
// history whose status was written (at that write's time), the current
// value held until now, and a mark per successful rescale.
func hpaChart(h *autoscalingv2.HorizontalPodAutoscaler, history []*autoscalingv2.HorizontalPodAutoscaler, decisions []components.ScalingDecision, now time.Time) *components.MetricChart {
	m := h.Spec.Metrics[0]
	c := &components.MetricChart{Metric: metricName(m), Target: targetValue(m)}
	if t, ok := metricTargetOf(m); ok && t.Type == autoscalingv2.UtilizationMetricType {
		c.Unit = "%"
	}
	var last time.Time
	add := func(rev *autoscalingv2.HorizontalPodAutoscaler, at time.Time) {
		st := currentMetric(rev, 0)
		if st == nil || at.IsZero() || !at.After(last) && !last.IsZero() {
			return
		}
		v, _, ok := metricValue(rev.Spec.Metrics[0], *st)
		if !ok || len(rev.Spec.Metrics) == 0 {
			return
		}
		last = at
		c.Points = append(c.Points, components.ChartPoint{Time: timestamp(at), Value: v, Replicas: rev.Status.CurrentReplicas})
	}
	for _, rev := range history {
		if len(rev.Spec.Metrics) > 0 {
			add(rev, statusTime(rev))
		}
	}
	add(h, statusTime(h))
	add(h, now)
	for i := len(decisions) - 1; i >= 0; i-- {
		if d := decisions[i]; !d.Failed && d.NewSize >= 0 {
			c.Rescales = append(c.Rescales, components.ChartPoint{Time: d.Time, Value: float64(d.NewSize)})
		}
	}
	return c
}

// rescaleMessage reads the controller's "New size: 4; reason: cpu
// resource utilization (percentage of request) above target" (with ";
// error: …" after a FailedRescale).
var rescaleMessage = regexp.MustCompile(`^New size: (\d+); reason: (.*?)(?:; error: .*)?$`)

// parseRescale returns the new size and reason of a rescale Event's
// message; -1 and the whole message when it is worded otherwise.
func parseRescale(msg string) (int32, string) {
	m := rescaleMessage.FindStringSubmatch(strings.TrimSpace(msg))
	if m == nil {
		return -1, msg
	}
	n, err := strconv.ParseInt(m[1], 10, 32)
	if err != nil {
		return -1, msg
	}
	return int32(n), m[2]
}

// scalingDecisions are the SuccessfulRescale and FailedRescale Events
// about h (by uid when the Event names one), newest first.
func scalingDecisions(h *autoscalingv2.HorizontalPodAutoscaler, events []corev1.Event) []components.ScalingDecision {
	type decision struct {
		at time.Time
		d  components.ScalingDecision
	}
	var out []decision
	for i := range events {
		e := &events[i]
		io := e.InvolvedObject
		if io.Kind != "HorizontalPodAutoscaler" || io.Name != h.Name || io.UID != "" && io.UID != h.UID {
			continue
		}
		if e.Reason != "SuccessfulRescale" && e.Reason != "FailedRescale" {
			continue
		}
		at := eventTime(e)
		size, reason := parseRescale(e.Message)
		out = append(out, decision{at, components.ScalingDecision{
			Time: timestamp(at), NewSize: size, Reason: reason, Failed: e.Reason == "FailedRescale", Count: max(e.Count, 1), Message: e.Message,
		}})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.After(out[j].at) })
	ds := make([]components.ScalingDecision, len(out))
	for i, d := range out {
		ds[i] = d.d
	}
	return ds
}
