package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/labstack/echo/v5"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/glassplane/glassplane/components"
	"github.com/glassplane/glassplane/controlplane/apiserver/audit"
	"github.com/glassplane/glassplane/controlplane/scheduler/explain"
	"github.com/glassplane/glassplane/controlplane/storage"
)

// object serves /objects/<resource>/[<namespace>/]<name>: the stored object
// and its timeline. With ?format=json or ?format=yaml it answers the stored
// object alone (secrets masked). A logged-in user needs get on the object's
// resource in its namespace, and sees only the Events, requests, owners and
// dependents they may read.
func (d *Dashboard) object(c *echo.Context) error {
	ctx := c.Request().Context()
	reader := d.readerOf(c.Request())
	resource, namespace, name := c.Param("resource"), c.Param("namespace"), c.Param("name")
	key := storage.Key(storageResource(resource), namespace, name)

	seq := d.auditSeq()
	// A namespaced object's Events are in its namespace (Kubernetes refuses
	// others), and so are its dependents'; a cluster-scoped object's may be
	// in any.
	events, err := d.cfg.Store.List(ctx, storage.Prefix("events", namespace), storage.ListOptions{})
	if err != nil {
		return fmt.Errorf("failed to list events for %q: %w", key, err)
	}
	kv, err := d.cfg.Store.Get(ctx, key)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("failed to read %q: %w", key, err)
	}
	if reader != nil {
		group := d.resourceGroup(resource, kv)
		if !reader.allowed(ctx, "get", group, resource, namespace) {
			return d.forbidden(c, forbiddenMessage(reader.user(), "get", group, resource, namespace, name), "")
		}
		events.Items = listable(ctx, reader, "", "events", events.Items)
	}

	switch format := c.QueryParam("format"); format {
	case "":
	case "json", "yaml":
		if kv == nil {
			return echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("%s %q not found", resource, name))
		}
		body := maskSecrets(kv.Value)
		c.Response().Header().Set("X-Content-Type-Options", "nosniff")
		if format == "json" {
			return c.JSONBlob(http.StatusOK, []byte(prettyJSON(body)))
		}
		out, err := yaml.JSONToYAML(body)
		if err != nil {
			return fmt.Errorf("failed to convert %q to YAML: %w", key, err)
		}
		return c.Blob(http.StatusOK, "application/yaml; charset=utf-8", out)
	default:
		return echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("unknown format %q (json or yaml)", format))
	}

	vm := components.Object{Resource: resource, Namespace: namespace, Name: name, Key: key, Kind: kindOfResource(resource), DeleteError: c.QueryParam("error")}
	if d.applier != nil {
		vm.CSRFToken = csrfToken(c)
	}
	if kv != nil {
		head := decodeHead(kv.Value)
		vm.Found = true
		vm.ResourceVersion = kv.ModRevision
		vm.UID = string(head.Metadata.UID)
		if head.Kind != "" {
			vm.Kind = head.Kind
		}
		if out, err := yaml.JSONToYAML(maskSecrets(kv.Value)); err == nil {
			vm.YAML = string(out)
		} else {
			vm.YAML = prettyJSON(kv.Value)
		}
		for _, or := range head.Metadata.OwnerReferences {
			res := resourceOfKind(or.Kind)
			if !reader.allowed(ctx, "get", groupOf(or.APIVersion), res, namespace) {
				continue
			}
			vm.Owners = append(vm.Owners, components.ObjectLink{
				Kind: or.Kind, Name: or.Name, Href: objectHref(res, namespace, or.Name),
				Controller: or.Controller != nil && *or.Controller,
			})
		}
		if resource == "pods" {
			dec, err := d.boundDecision(ctx, namespace, name, vm.UID)
			if err != nil {
				vm.DecisionError = fmt.Sprintf("failed to read the scheduler decision: %v", err)
			}
			vm.Decision = dec
		}
	}
	// The Events are decoded once for the object and all its dependents.
	about := newEventIndex(events.Items, recordedTimes(d.cfg.Audit))
	vm.Timeline = d.timeline(ctx, reader, vm, about)
	if vm.UID != "" {
		graph, err := d.ownerGraph(ctx, namespace)
		if err != nil {
			return err
		}
		for _, o := range descendants(graph, vm.UID) {
			dep := o.ref
			if !reader.allowed(ctx, "get", o.group, dep.Resource, dep.Namespace) {
				continue
			}
			vm.Dependents = append(vm.Dependents, components.TimelineGroup{
				Object: components.ObjectLink{Kind: dep.Kind, Name: dep.Name, Href: objectHref(dep.Resource, dep.Namespace, dep.Name)},
				Rows:   d.timeline(ctx, reader, dep, about),
			})
		}
	}
	return render(c, http.StatusOK, components.ObjectPage(d.layout(vm.Kind+" "+name, components.PageObject, events.Revision, seq), vm))
}

// timelineEntry is a row with the time it sorts by.
type timelineEntry struct {
	at  time.Time
	row components.TimelineRow
}

// eventIndex is a page's core Events, decoded once, by their involved
// object's namespace/name, in key order. (An Event naming an object by UID
// names it by namespace and name too, so eventAbout's matches are all
// under the object's namespace/name.)
type eventIndex map[string][]timedEvent

type timedEvent struct {
	e  *corev1.Event
	at time.Time
}

func newEventIndex(events []storage.KeyValue, recorded map[string]time.Time) eventIndex {
	x := eventIndex{}
	for _, kv := range events {
		e := &corev1.Event{}
		if err := json.Unmarshal(kv.Value, e); err != nil {
			continue
		}
		k := e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name
		x[k] = append(x[k], timedEvent{e, preciseEventTime(e, kv.Key, recorded)})
	}
	return x
}

// about returns the Events about o (eventAbout).
func (x eventIndex) about(o components.Object) []timedEvent {
	var out []timedEvent
	for _, te := range x[o.Namespace+"/"+o.Name] {
		if eventAbout(te.e, o) {
			out = append(out, te)
		}
	}
	return out
}

// timeline merges the audit events about the object (any subresource) that
// reader may see and the core Events whose involvedObject is it, in time
// order.
func (d *Dashboard) timeline(ctx context.Context, reader *userAccess, o components.Object, events eventIndex) []components.TimelineRow {
	var entries []timelineEntry
	if d.cfg.Audit != nil {
		for _, rec := range d.cfg.Audit.Find(func(ev *audit.Event) bool { return auditAbout(ev, o) }) {
			ev := rec.Event
			if !reader.mayReadAudit(ctx, ev.User.Username) {
				continue
			}
			row := components.TimelineRow{
				Source: "audit", Actor: ev.User.Username, Action: auditAction(ev), Message: auditMessage(ev),
				Stages: stagesOf(ev), Code: auditCode(ev), Failed: auditFailed(ev),
				AuditHref: requestHref(rec.Seq),
			}
			if key, rev := ev.Annotations[audit.AnnotationEtcdKey], ev.Annotations[audit.AnnotationEtcdRevision]; key != "" && rev != "" {
				row.Revision = rev
				row.RevisionHref = keyHref(key) + "&rev=" + rev
			}
			entries = append(entries, timelineEntry{at: ev.RequestReceivedTimestamp.Time, row: row})
		}
	}
	for _, te := range events.about(o) {
		e := te.e
		entries = append(entries, timelineEntry{at: te.at, row: components.TimelineRow{
			Source: "event", Actor: eventComponent(e), Action: e.Reason, Message: e.Message,
			Type: e.Type, Failed: e.Type == corev1.EventTypeWarning,
		}})
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].at.Before(entries[j].at) })
	rows := make([]components.TimelineRow, len(entries))
	for i, e := range entries {
		rows[i] = e.row
		rows[i].Time = timestamp(e.at)
		rows[i].Relative = fmt.Sprintf("+%d ms", e.at.Sub(entries[0].at).Milliseconds())
	}
	return rows
}

// auditAbout tells whether an audit event acted on the object.
func auditAbout(ev *audit.Event, o components.Object) bool {
	if k := ev.Annotations[audit.AnnotationEtcdKey]; k != "" && k == o.Key {
		return true
	}
	resource, _, namespace, name := auditRef(ev)
	return resource == o.Resource && namespace == o.Namespace && name == o.Name
}

// eventAbout tells whether a core Event's involvedObject is the object.
func eventAbout(e *corev1.Event, o components.Object) bool {
	io := e.InvolvedObject
	if o.UID != "" && string(io.UID) == o.UID {
		return true
	}
	if io.Name != o.Name || io.Namespace != o.Namespace {
		return false
	}
	return io.Kind == o.Kind || (o.Kind == "" && resourceOfKind(io.Kind) == o.Resource)
}

// decisionView reads a compact decision (explain.Compact) into the view
// model's tables: the filter rows and one score column per plugin.
func decisionView(raw string) (*components.Decision, error) {
	var dec explain.Decision
	if err := json.Unmarshal([]byte(raw), &dec); err != nil {
		return nil, err
	}
	vm := &components.Decision{Attempt: int64(dec.Attempt), Node: dec.Node, Message: dec.Message}
	if !dec.Time.IsZero() {
		vm.Time = timestamp(dec.Time.Time)
	}
	for _, f := range dec.Filter {
		vm.Filter = append(vm.Filter, components.FilterRow{Node: f.Node, Passed: f.Passed, Plugin: f.Plugin, Reason: f.Reason})
	}
	column := map[string]int{}
	for _, s := range dec.Scores {
		for _, p := range s.Plugins {
			if _, ok := column[p.Plugin]; !ok {
				column[p.Plugin] = len(vm.Plugins)
				vm.Plugins = append(vm.Plugins, p.Plugin)
			}
		}
	}
	for _, s := range dec.Scores {
		row := components.ScoreRow{Node: s.Node, Total: s.Total, Chosen: s.Node == dec.Node, Cells: make([]components.ScoreCell, len(vm.Plugins))}
		for _, p := range s.Plugins {
			row.Cells[column[p.Plugin]] = components.ScoreCell{Present: true, Raw: p.Raw, Normalized: p.Normalized, Weight: p.Weight, Weighted: p.Weighted}
		}
		vm.Scores = append(vm.Scores, row)
	}
	return vm, nil
}
