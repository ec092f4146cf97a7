package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/glassplane/glassplane/web/source"

	"github.com/labstack/echo/v5"
	corev1 "k8s.io/api/core/v1"

	"github.com/glassplane/glassplane/components"
)

// eventsLength is how many Events the events page lists.
const eventsLength = 300

// events serves /events: core Events, newest first, filtered by type,
// reason, kind, namespace and free text; a logged-in user sees those of
// the namespaces they may list Events in.
func (d *Dashboard) events(c *echo.Context) error {
	ctx := c.Request().Context()
	reader := d.readerOf(c.Request())
	seq := d.auditSeq()
	f := components.EventFilter{
		Type: c.QueryParam("type"), Reason: c.QueryParam("reason"), Kind: c.QueryParam("kind"),
		Namespace: c.QueryParam("namespace"), Text: c.QueryParam("q"),
	}
	list, err := d.cfg.Store.List(ctx, source.Prefix("events", f.Namespace), source.ListOptions{})
	if err != nil {
		return fmt.Errorf("failed to list events: %w", err)
	}
	recorded := recordedTimes(d.cfg.Audit)
	type entry struct {
		at  time.Time
		row components.EventRow
	}
	var entries []entry
	for _, kv := range listable(ctx, reader, "", "events", list.Items) {
		var e corev1.Event
		if err := json.Unmarshal(kv.Value, &e); err != nil {
			continue
		}
		m := eventMessage(&e, kv.Key, kv.ModRevision)
		row := components.EventRow{
			Type: e.Type, Reason: e.Reason, Kind: e.InvolvedObject.Kind, Namespace: e.InvolvedObject.Namespace,
			Object: target(m), Href: m.Href, Source: m.Component, Message: e.Message, Count: e.Count,
		}
		if !eventMatches(f, row) {
			continue
		}
		entries = append(entries, entry{at: preciseEventTime(&e, kv.Key, recorded), row: row})
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].at.After(entries[j].at) })
	vm := components.Events{Filter: f}
	for i, e := range entries {
		if i == eventsLength {
			break
		}
		e.row.Time = timestamp(e.at)
		vm.Rows = append(vm.Rows, e.row)
	}
	return render(c, http.StatusOK, components.EventsPage(d.layout("Events", components.PageEvents, list.Revision, seq), vm))
}

// eventMatches applies the events page's filter to one row.
func eventMatches(f components.EventFilter, r components.EventRow) bool {
	switch {
	case f.Type != "" && r.Type != f.Type,
		f.Reason != "" && r.Reason != f.Reason,
		f.Kind != "" && r.Kind != f.Kind:
		return false
	}
	if f.Text == "" {
		return true
	}
	q := strings.ToLower(f.Text)
	return strings.Contains(strings.ToLower(r.Message+" "+r.Object+" "+r.Source+" "+r.Reason), q)
}

// nodes serves /nodes: every node with its readiness, capacity, taints and
// pod count, filtered by readiness and by name or label. A logged-in user
// needs list on nodes, and the counts are of the pods they may list.
func (d *Dashboard) nodes(c *echo.Context) error {
	ctx := c.Request().Context()
	reader := d.readerOf(c.Request())
	seq := d.auditSeq()
	f := components.NodeFilter{Ready: c.QueryParam("ready"), Text: c.QueryParam("q")}
	nodes, err := d.cfg.Store.List(ctx, source.Prefix("minions", ""), source.ListOptions{})
	if err != nil {
		return fmt.Errorf("failed to list nodes: %w", err)
	}
	pods, err := d.cfg.Store.List(ctx, source.Prefix("pods", ""), source.ListOptions{Revision: nodes.Revision})
	if err != nil {
		return fmt.Errorf("failed to list pods: %w", err)
	}
	count := map[string]int{}
	for _, kv := range listable(ctx, reader, "", "pods", pods.Items) {
		var p corev1.Pod
		if json.Unmarshal(kv.Value, &p) == nil && p.Spec.NodeName != "" {
			count[p.Spec.NodeName]++
		}
	}
	vm := components.Nodes{Filter: f}
	for _, kv := range listable(ctx, reader, "", "nodes", nodes.Items) {
		var n corev1.Node
		if err := json.Unmarshal(kv.Value, &n); err != nil {
			continue
		}
		row := components.NodeRow{
			Name: n.Name, Href: objectHref("nodes", "", n.Name), Ready: nodeReady(&n), Unschedulable: n.Spec.Unschedulable,
			CPU: quantity(n.Status.Allocatable, corev1.ResourceCPU), Memory: quantity(n.Status.Allocatable, corev1.ResourceMemory),
			Pods: count[n.Name], Runtime: n.Status.NodeInfo.ContainerRuntimeVersion,
		}
		for _, t := range n.Spec.Taints {
			row.Taints = append(row.Taints, t.ToString())
		}
		for _, k := range sortedKeys(n.Labels) {
			row.Labels = append(row.Labels, k+"="+n.Labels[k])
		}
		if !nodeMatches(f, row) {
			continue
		}
		vm.Rows = append(vm.Rows, row)
	}
	return render(c, http.StatusOK, components.NodesPage(d.layout("Nodes", components.PageNodes, nodes.Revision, seq), vm))
}

func nodeMatches(f components.NodeFilter, r components.NodeRow) bool {
	if f.Ready != "" && r.Ready != f.Ready {
		return false
	}
	if f.Text == "" {
		return true
	}
	return strings.Contains(r.Name+" "+strings.Join(r.Labels, " ")+" "+strings.Join(r.Taints, " "), f.Text)
}

func quantity(l corev1.ResourceList, name corev1.ResourceName) string {
	q, ok := l[name]
	if !ok {
		return ""
	}
	return q.String()
}
