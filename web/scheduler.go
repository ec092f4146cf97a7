package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"time"

	"github.com/glassplane/glassplane/web/source"

	"github.com/labstack/echo/v5"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/glassplane/glassplane/components"
	"github.com/glassplane/glassplane/controlplane/scheduler/explain"
)

// liveAttemptAge is how recent an attempt must be for the page to play it
// on load.
const liveAttemptAge = 30 * time.Second

// schedulerHref is the scheduler's explanation of a pod.
func schedulerHref(namespace, name string) string {
	return "/scheduler/" + url.PathEscape(namespace) + "/" + url.PathEscape(name)
}

// schedulerStatus is the ?format=json answer the page polls while the pod
// is pending: the recorded attempts, and without them how many times the
// pod's scheduling events happened.
type schedulerStatus struct {
	Attempts int    `json:"attempts"`
	Latest   int    `json:"latest"`
	Events   int    `json:"events"`
	Node     string `json:"node"`
	Pending  bool   `json:"pending"`
}

// scheduler serves /scheduler/<namespace>/<pod>: the attempts in the pod's
// decision record (the SchedulingDecision of its name, written by
// Glassplane's scheduler wherever it runs, read through the API as the
// page's user) and, for ?attempt=N or the newest, the nodes × plugins
// matrix. Without recorded attempts (no record: the cluster's scheduler is
// kube-scheduler, or has not tried yet) it shows the pod's Scheduled and
// FailedScheduling Events instead. A logged-in user needs get on the pod.
func (d *Dashboard) scheduler(c *echo.Context) error {
	ctx := c.Request().Context()
	namespace, name := c.Param("namespace"), c.Param("name")
	if reader := d.readerOf(c.Request()); !reader.allowed(ctx, "get", "", "pods", namespace) {
		return d.forbidden(c, components.Forbidden{Message: forbiddenMessage(reader.user(), "get", "", "pods", namespace, name)})
	}
	v := components.SchedulerExplain{
		Namespace: namespace, Name: name,
		PodHref:       objectHref("pods", namespace, name),
		RecordName:    decisionRecordResource + "/" + name,
		RecordHref:    objectHref(decisionRecordResource, namespace, name),
		RecordCommand: "kubectl describe schedulingdecision " + name + " -n " + namespace,
	}

	podKV, err := d.cfg.Store.Get(ctx, source.Key("pods", namespace, name))
	if err != nil && !errors.Is(err, source.ErrNotFound) {
		return fmt.Errorf("failed to read pod %q: %w", namespace+"/"+name, err)
	}
	var pod corev1.Pod
	if podKV != nil {
		if err := json.Unmarshal(podKV.Value, &pod); err != nil {
			return fmt.Errorf("failed to decode pod %q: %w", namespace+"/"+name, err)
		}
		v.PodFound = true
		v.PodNode = pod.Spec.NodeName
		v.Pending = pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil
	}

	var history explain.History
	rec, err := d.readDecisionRecord(ctx, c.Request(), namespace, name)
	switch {
	case apierrors.IsNotFound(err):
		v.NoRecord = true
	case err != nil:
		v.Error = "The decision record cannot be read: " + apiMessage(err)
	default:
		history = explain.HistoryOf(rec)
		if podKV != nil && history.UID != string(pod.UID) {
			v.Error = "The decision record belongs to an earlier pod of this name."
			history = explain.History{}
		}
	}
	if len(history.Attempts) == 0 {
		v.Events, err = d.schedulingEvents(ctx, c.Request(), namespace, name, string(pod.UID))
		if err != nil {
			v.EventsError = "The pod's events cannot be read: " + apiMessage(err)
		}
	}

	if c.QueryParam("format") == "json" {
		st := schedulerStatus{Attempts: len(history.Attempts), Events: v.EventCount(), Node: v.PodNode, Pending: v.Pending}
		if n := len(history.Attempts); n > 0 {
			st.Latest = history.Attempts[n-1].Attempt
		}
		return c.JSON(http.StatusOK, st)
	}

	v.Dropped = history.Dropped
	selected := len(history.Attempts) - 1
	if s := c.QueryParam("attempt"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("attempt %q is not a number", s))
		}
		selected = -1
		for i, a := range history.Attempts {
			if a.Attempt == n {
				selected = i
			}
		}
		if selected < 0 {
			return echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("attempt %d of pod %q is not recorded", n, namespace+"/"+name))
		}
	}
	for i, a := range history.Attempts {
		v.Attempts = append(v.Attempts, components.AttemptLink{
			Attempt: a.Attempt, Time: timestamp(a.Time.Time), Node: a.Node, Message: a.Message,
			Href:     schedulerHref(namespace, name) + "?attempt=" + strconv.Itoa(a.Attempt),
			Selected: i == selected,
		})
	}
	if selected >= 0 {
		m := attemptMatrix(history.Attempts[selected])
		m.Live = c.QueryParam("play") != "" || time.Since(history.Attempts[selected].Time.Time) < liveAttemptAge
		v.Chosen = &m
	}
	seq := d.auditSeq()
	rev := int64(0)
	if podKV != nil {
		rev = podKV.ModRevision
	}
	return render(c, http.StatusOK, components.SchedulerPage(d.layout("Scheduling "+name, components.PageScheduler, rev, seq), v))
}

// attemptMatrix lays one attempt out as rows of nodes: the winner first,
// then the scored nodes best first, the feasible unscored ones, and the
// rejected ones in filter order and by name. A node's filter cells pass up
// to the plugin that rejected it, fail there, and are skipped after.
func attemptMatrix(d explain.Decision) components.AttemptMatrix {
	m := components.AttemptMatrix{
		Attempt: d.Attempt, Time: timestamp(d.Time.Time), Node: d.Node, Message: d.Message,
		Nodes: d.Nodes, Evaluated: len(d.Filter) + d.FilterOmitted, Feasible: d.Feasible,
		NominatedNode: d.NominatedNode, Victims: d.Victims, Omitted: d.FilterOmitted,
	}
	m.FilterPlugins = append(m.FilterPlugins, d.FilterPlugins...)
	col := map[string]int{}
	for i, p := range m.FilterPlugins {
		col[p] = i
	}
	for _, f := range d.Filter {
		if _, ok := col[f.Plugin]; !f.Passed && !ok {
			// A PreFilter rejection, or a record without the plugin list.
			col[f.Plugin] = len(m.FilterPlugins)
			m.FilterPlugins = append(m.FilterPlugins, f.Plugin)
		}
	}
	scoreCol := map[string]int{}
	for _, s := range d.Scores {
		for _, p := range s.Plugins {
			if _, ok := scoreCol[p.Plugin]; !ok {
				scoreCol[p.Plugin] = len(m.ScorePlugins)
				m.ScorePlugins = append(m.ScorePlugins, components.ScorePluginHead{Name: p.Plugin, Weight: p.Weight})
			}
		}
	}
	scores := map[string]explain.NodeScore{}
	for _, s := range d.Scores {
		scores[s.Node] = s
	}

	for _, f := range d.Filter {
		r := components.MatrixRow{Node: f.Node, Passed: f.Passed, RejectedAt: -1, Filter: make([]components.FilterCell, len(m.FilterPlugins))}
		at := len(m.FilterPlugins)
		if !f.Passed {
			at = col[f.Plugin]
			r.RejectedAt, r.RejectedBy, r.Reason = at, f.Plugin, f.Reason
		}
		for i := range r.Filter {
			switch {
			case i < at:
				r.Filter[i].State = "pass"
			case i == at:
				r.Filter[i] = components.FilterCell{State: "fail", Reason: f.Reason}
			default:
				r.Filter[i].State = "skip"
			}
		}
		if s, ok := scores[f.Node]; ok && len(m.ScorePlugins) > 0 {
			r.Scored, r.Total = true, s.Total
			r.Scores = make([]components.MatrixScore, len(m.ScorePlugins))
			for _, p := range s.Plugins {
				r.Scores[scoreCol[p.Plugin]] = components.MatrixScore{Present: true, Raw: p.Raw, Normalized: p.Normalized, Weight: p.Weight, Weighted: p.Weighted}
			}
		} else if len(m.ScorePlugins) > 0 {
			r.Scores = make([]components.MatrixScore, len(m.ScorePlugins))
		}
		r.Winner = f.Passed && f.Node == d.Node
		m.Rows = append(m.Rows, r)
	}
	group := func(r components.MatrixRow) int {
		switch {
		case r.Winner:
			return 0
		case r.Scored:
			return 1
		case r.Passed:
			return 2
		}
		return 3
	}
	sort.SliceStable(m.Rows, func(i, j int) bool {
		a, b := m.Rows[i], m.Rows[j]
		if ga, gb := group(a), group(b); ga != gb {
			return ga < gb
		}
		if a.Total != b.Total {
			return a.Total > b.Total
		}
		if a.RejectedAt != b.RejectedAt {
			return a.RejectedAt < b.RejectedAt
		}
		return a.Node < b.Node
	})
	for i := range m.Rows {
		m.Rows[i].Rank = i + 1
	}
	return m
}
