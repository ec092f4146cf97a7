package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/glassplane/glassplane/web/source"

	"github.com/labstack/echo/v5"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/glassplane/glassplane/components"
	"github.com/glassplane/glassplane/controlplane/scheduler/explain"
)

// object serves /objects/<resource>/[<namespace>/]<name>: the stored object
// and its timeline (timeline.go), which follows it by uid; ?uid= shows an
// earlier object of the name instead. A Service's page also shows what the
// API serves about it as the user (service.go); ?part=service answers that
// part alone, for the page's live updates. With ?format=json or ?format=yaml it
// answers the stored object alone (secrets masked). A PersistentVolumeClaim's,
// a CronJob's and a HorizontalPodAutoscaler's pages show their own part
// the same way (parts.go; ?part=pvc, cronjob or hpa). A logged-in user needs
// get on the object's resource in its namespace, and sees only the Events,
// requests, owners and dependents they may read.
func (d *Dashboard) object(c *echo.Context) error {
	ctx := c.Request().Context()
	reader := d.readerOf(c.Request())
	resource, namespace, name := c.Param("resource"), c.Param("namespace"), c.Param("name")
	key := source.Key(storageResource(resource), namespace, name)
	// A custom resource's page may name it "plural.group"; RBAC and the
	// audit trail name it by its plural.
	resource = apiName(resource)

	seq := d.auditSeq()
	// A namespaced object's Events are in its namespace (Kubernetes refuses
	// others), and so are its dependents'; a cluster-scoped object's may be
	// in any.
	events, err := d.cfg.Store.List(ctx, source.Prefix("events", namespace), source.ListOptions{})
	if err != nil {
		return fmt.Errorf("failed to list events for %q: %w", key, err)
	}
	kv, err := d.cfg.Store.Get(ctx, key)
	if err != nil && !errors.Is(err, source.ErrNotFound) {
		return fmt.Errorf("failed to read %q: %w", key, err)
	}
	group := d.resourceGroup(resource, kv)
	if reader != nil {
		if !reader.allowed(ctx, "get", group, resource, namespace) {
			return d.forbidden(c, components.Forbidden{Message: forbiddenMessage(reader.user(), "get", group, resource, namespace, name)})
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
	vm.DataPathNote, vm.DataPathNoteKey = dataPathNote(group, resource)
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
		vm.FieldOwners = fieldOwners(head.Metadata.ManagedFields)
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
			dec, err := d.boundDecision(ctx, c.Request(), namespace, name, vm.UID)
			if err != nil {
				vm.DecisionError = fmt.Sprintf("failed to read the scheduler decision: %v", err)
			}
			vm.Decision = dec
		}
	}
	if uid := c.QueryParam("uid"); uid != "" && uid != vm.UID {
		vm = pastIncarnation(vm, uid)
	} else if vm.Found && vm.Kind == "Service" {
		vm.Service = d.serviceView(ctx, c.Request(), namespace, name)
	} else if vm.Found {
		d.workloadPart(ctx, c.Request(), &vm)
	}
	if part := c.QueryParam("part"); part != "" && part != "service" {
		return renderWorkloadPart(c, vm, part)
	}
	if c.QueryParam("part") == "service" {
		if vm.Service == nil {
			return echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("%s %q is not a stored Service", resource, name))
		}
		return render(c, http.StatusOK, components.ServiceView(*vm.Service))
	}
	// The Events are decoded once for the object and all its dependents.
	about := newEventIndex(events.Items, recordedTimes(d.cfg.Audit))
	vm.Timeline, vm.Incarnations = d.timeline(ctx, reader, vm, about)
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
			rows, _ := d.timeline(ctx, reader, dep, about)
			vm.Dependents = append(vm.Dependents, components.TimelineGroup{
				Object: components.ObjectLink{Kind: dep.Kind, Name: dep.Name, Href: objectHref(dep.Resource, dep.Namespace, dep.Name)},
				Rows:   rows,
			})
		}
	}
	return render(c, http.StatusOK, components.ObjectPage(d.layout(vm.Kind+" "+name, components.PageObject, events.Revision, seq), vm))
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

func newEventIndex(events []source.KeyValue, recorded map[string]time.Time) eventIndex {
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
