package web

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/glassplane/glassplane/web/source"

	"github.com/labstack/echo/v5"
	corev1 "k8s.io/api/core/v1"

	"github.com/glassplane/glassplane/components"
)

// feedLength is how many recent steps the overview lists.
const feedLength = 40

// overview serves /: every node with its pods, pods waiting for a node, and
// the recent steps (changing requests and core Events), of those a
// logged-in user may list.
func (d *Dashboard) overview(c *echo.Context) error {
	ctx := c.Request().Context()
	reader := d.readerOf(c.Request())
	seq := d.auditSeq()
	nodes, err := d.cfg.Store.List(ctx, source.Prefix("minions", ""), source.ListOptions{})
	if err != nil {
		return fmt.Errorf("failed to list nodes: %w", err)
	}
	at := source.ListOptions{Revision: nodes.Revision}
	pods, err := d.cfg.Store.List(ctx, source.Prefix("pods", ""), at)
	if err != nil {
		return fmt.Errorf("failed to list pods: %w", err)
	}
	// Only the newest Events can make the feed. The store's history has
	// them without reading the hour of Events a busy cluster keeps; when it
	// does not reach back far enough, they are listed.
	events, ok, err := d.cfg.Store.Newest(ctx, source.Prefix("events", ""), 2*feedLength, nodes.Revision)
	if err != nil || !ok {
		list, err := d.cfg.Store.List(ctx, source.Prefix("events", ""), at)
		if err != nil {
			return fmt.Errorf("failed to list events: %w", err)
		}
		events = list.Items
	}
	vm := overviewModel(listable(ctx, reader, "", "nodes", nodes.Items), listable(ctx, reader, "", "pods", pods.Items))
	vm.ShowBackground = c.QueryParam("background") == "1"
	vm.Feed, vm.Background = d.feed(ctx, reader, listable(ctx, reader, "", "events", events), vm.ShowBackground)
	vm.Tempo = d.tempoPanel(c)
	return render(c, http.StatusOK, components.OverviewPage(d.layout("Overview", components.PageOverview, nodes.Revision, seq), vm))
}

// overviewModel places every pod in its node's box, or among the
// unscheduled ones when its node is unknown or unset, in ordinal order
// (orderPods), each with the claims it mounts.
func overviewModel(nodes, pods []source.KeyValue) components.Overview {
	var vm components.Overview
	index := map[string]int{}
	// A summary's decode reads the few fields a box or chip shows, not a
	// whole Node or Pod.
	for _, kv := range nodes {
		var n objectSummary
		if err := json.Unmarshal(kv.Value, &n); err != nil {
			continue
		}
		index[n.Metadata.Name] = len(vm.Nodes)
		vm.Nodes = append(vm.Nodes, components.NodeBox{Name: n.Metadata.Name, Ready: summaryReady(&n), Href: objectHref("nodes", "", n.Metadata.Name)})
	}
	for _, kv := range pods {
		var p objectSummary
		if err := json.Unmarshal(kv.Value, &p); err != nil {
			continue
		}
		ns, name := p.Metadata.Namespace, p.Metadata.Name
		chip := components.PodChip{
			Namespace: ns, Name: name, Phase: summaryPhase(&p), NodeName: p.Spec.NodeName,
			Href: objectHref("pods", ns, name), Claims: summaryClaims(&p),
		}
		if i, ok := index[p.Spec.NodeName]; ok {
			vm.Nodes[i].Pods = append(vm.Nodes[i].Pods, chip)
		} else {
			vm.Unscheduled = append(vm.Unscheduled, chip)
		}
	}
	for i := range vm.Nodes {
		orderPods(vm.Nodes[i].Pods)
	}
	orderPods(vm.Unscheduled)
	return vm
}

// feed merges the recent changing requests reader may see and core
// Events, newest first. Background steps (backgroundOf: leases, node
// heartbeats, Event writes, permission checks) are left out unless
// withBackground, and counted.
func (d *Dashboard) feed(ctx context.Context, reader *userAccess, events []source.KeyValue, withBackground bool) ([]components.FeedItem, int) {
	type entry struct {
		at   time.Time
		item components.FeedItem
	}
	var entries []entry
	background := 0
	if d.cfg.Audit != nil {
		recs := d.cfg.Audit.Since(0)
		for i := len(recs) - 1; i >= 0 && len(entries) < feedLength; i-- {
			ev := recs[i].Event
			if !mutating(ev.Verb) || !reader.mayReadAudit(ctx, actorOf(ev)) {
				continue
			}
			bg := backgroundOf(ev)
			if bg != "" && !withBackground {
				background++
				continue
			}
			m := auditRecordMessage(recs[i])
			entries = append(entries, entry{at: ev.RequestReceivedTimestamp.Time, item: components.FeedItem{
				Source: "audit", Component: m.Component, Action: m.Action, Target: target(m), Href: m.Href,
				Message: failedMessage(m), Stages: stagesOf(ev), Failed: m.Failed, Background: bg,
			}})
		}
	}
	recorded := recordedTimes(d.cfg.Audit)
	// Only the newest Events can make the feed: decode those, not the
	// thousands a busy cluster keeps for an hour. Twice the feed's length
	// by revision leaves room for Events whose own times are out of order
	// (the overview asks the store for that many).
	events = slices.Clone(events)
	slices.SortFunc(events, func(a, b source.KeyValue) int { return cmp.Compare(b.ModRevision, a.ModRevision) })
	if len(events) > 2*feedLength {
		events = events[:2*feedLength]
	}
	for _, kv := range events {
		var e corev1.Event
		if err := json.Unmarshal(kv.Value, &e); err != nil {
			continue
		}
		m := eventMessage(&e, kv.Key, kv.ModRevision)
		if m.Background != "" && !withBackground {
			background++
			continue
		}
		entries = append(entries, entry{at: preciseEventTime(&e, kv.Key, recorded), item: components.FeedItem{
			Source: "event", Component: m.Component, Action: m.Action, Target: target(m), Href: m.Href,
			Message: m.Message, Failed: e.Type == corev1.EventTypeWarning, Background: m.Background,
		}})
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].at.After(entries[j].at) })
	if len(entries) > feedLength {
		entries = entries[:feedLength]
	}
	items := make([]components.FeedItem, len(entries))
	for i, e := range entries {
		items[i] = e.item
		items[i].Time = timestamp(e.at)
	}
	return items, background
}

// target reads like "pods/default/mypod".
func target(m Message) string {
	s := m.Resource
	if m.Resource == "" {
		s = m.Kind
	}
	if m.Namespace != "" {
		s += "/" + m.Namespace
	}
	if m.Name != "" {
		s += "/" + m.Name
	}
	return s
}

// failedMessage is a request's message only when it was refused; the feed
// keeps successful steps to one line.
func failedMessage(m Message) string {
	if m.Failed {
		return m.Message
	}
	return ""
}
