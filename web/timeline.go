package web

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"time"

	"github.com/glassplane/glassplane/api/v1alpha1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	corev1 "k8s.io/api/core/v1"

	"github.com/glassplane/glassplane/components"
)

// timelineEntry is a row with the time it sorts by, and the uid of the
// object it is about when it says ("" when it does not: a list, a refused
// request, an Event naming its object by name alone).
type timelineEntry struct {
	at  time.Time
	uid string
	row components.TimelineRow
}

// incarnation is one object of a name: created, perhaps deleted and
// another created under the same name with a new uid.
type incarnation struct {
	uid         string
	first, last time.Time
}

// timeline follows one object by uid: the audit events about it that
// reader may see and the core Events whose involvedObject is it, in time
// order. Requests and Events that name the object by name alone go to the
// incarnation of that name they happened in (or, between two, to the one
// created next: kubectl apply's GET that found nothing belongs to the
// create it led to). Repeated reads (get, list, watch) by one user fold
// into one row with a count. The object followed is o.UID, else the newest
// incarnation seen; the others of the same name come back, oldest first,
// for links.
func (d *Dashboard) timeline(ctx context.Context, reader *userAccess, o components.Object, events eventIndex) ([]components.TimelineRow, []components.Incarnation) {
	var entries []timelineEntry
	if d.cfg.Audit != nil {
		for _, rec := range d.cfg.Audit.Find(func(ev *auditv1.Event) bool { return auditAbout(ev, o) }) {
			ev := rec.Event
			if !reader.mayReadAudit(ctx, actorOf(ev)) {
				continue
			}
			row := components.TimelineRow{
				Source: "audit", Actor: actorOf(ev), Action: auditAction(ev), Message: auditMessage(ev),
				Stages: stagesOf(ev), Code: auditCode(ev), Failed: auditFailed(ev),
				AuditHref: requestHref(rec.Seq),
			}
			if key, rev := ev.Annotations[v1alpha1.AnnotationEtcdKey], ev.Annotations[v1alpha1.AnnotationEtcdRevision]; key != "" && rev != "" {
				row.Revision = rev
				row.RevisionHref = keyHref(key) + "&rev=" + rev
			}
			if reading(ev.Verb) {
				row.FoldKey = actorOf(ev) + " " + row.Action + " " + fmt.Sprint(row.Code)
			}
			uid := ""
			if ev.ObjectRef != nil {
				uid = string(ev.ObjectRef.UID)
			}
			entries = append(entries, timelineEntry{at: ev.RequestReceivedTimestamp.Time, uid: uid, row: row})
		}
	}
	for _, te := range events.about(o) {
		e := te.e
		entries = append(entries, timelineEntry{at: te.at, uid: string(e.InvolvedObject.UID), row: components.TimelineRow{
			Source: "event", Actor: eventComponent(e), Action: e.Reason, Message: e.Message,
			Type: e.Type, Failed: e.Type == corev1.EventTypeWarning,
		}})
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].at.Before(entries[j].at) })

	incs := incarnations(entries, o)
	followed := o.UID
	if followed == "" && len(incs) > 0 {
		followed = incs[len(incs)-1].uid
	}
	var others []components.Incarnation
	if followed != "" {
		entries = ofIncarnation(entries, incs, followed)
		others = otherIncarnations(incs, o, followed)
	}
	entries = foldReads(entries)
	rows := make([]components.TimelineRow, len(entries))
	for i, e := range entries {
		rows[i] = e.row
		rows[i].UID = e.uid
		rows[i].Time = timestamp(e.at)
		rows[i].Relative = fmt.Sprintf("+%d ms", e.at.Sub(entries[0].at).Milliseconds())
	}
	return rows, others
}

// reading reports whether a verb only reads.
func reading(verb string) bool {
	switch verb {
	case "get", "list", "watch":
		return true
	}
	return false
}

// incarnations are the objects of o's name that entries name by uid, by
// when each was first seen. The stored one (o, when found) lives on.
func incarnations(entries []timelineEntry, o components.Object) []incarnation {
	index := map[string]int{}
	var out []incarnation
	for _, e := range entries {
		if e.uid == "" {
			continue
		}
		i, ok := index[e.uid]
		if !ok {
			i = len(out)
			index[e.uid] = i
			out = append(out, incarnation{uid: e.uid, first: e.at})
		}
		out[i].last = e.at
	}
	// The stored one lives on, also when the ring no longer holds a
	// request naming it: it is then newer than all the ring names.
	stored := storedUID(o)
	if stored == "" {
		return out
	}
	i, ok := index[stored]
	if !ok {
		i = len(out)
		out = append(out, incarnation{uid: stored})
		if i > 0 {
			out[i].first = out[i-1].last.Add(time.Nanosecond)
		}
	}
	out[i].last = time.Unix(1<<40, 0)
	return out
}

// ofIncarnation keeps the entries about the incarnation uid: those that
// name it, and those that name none and happened in its life (or in the
// gap before it, or after the last incarnation's end when it is the last).
func ofIncarnation(entries []timelineEntry, incs []incarnation, uid string) []timelineEntry {
	out := entries[:0:0]
	for _, e := range entries {
		if e.uid == uid || (e.uid == "" && incarnationAt(incs, e.at) == uid) {
			out = append(out, e)
		}
	}
	return out
}

// incarnationAt is the uid of the incarnation a step at t naming none
// belongs to: the one alive then, else the next one created, else the
// last.
func incarnationAt(incs []incarnation, t time.Time) string {
	if len(incs) == 0 {
		return ""
	}
	for _, inc := range incs {
		if !t.After(inc.last) {
			return inc.uid
		}
	}
	return incs[len(incs)-1].uid
}

// otherIncarnations links the incarnations of o's name other than the one
// followed: earlier ones (created before it) and later ones.
func otherIncarnations(incs []incarnation, o components.Object, followed string) []components.Incarnation {
	var start time.Time
	for _, inc := range incs {
		if inc.uid == followed {
			start = inc.first
		}
	}
	var out []components.Incarnation
	for _, inc := range incs {
		if inc.uid == followed {
			continue
		}
		link := components.Incarnation{
			UID: inc.uid, Created: timestamp(inc.first), Earlier: inc.first.Before(start),
			Href: objectHref(o.Resource, o.Namespace, o.Name) + "?uid=" + url.QueryEscape(inc.uid),
		}
		if inc.uid == storedUID(o) {
			link.Current, link.Href = true, objectHref(o.Resource, o.Namespace, o.Name)
		}
		out = append(out, link)
	}
	return out
}

// foldReads folds repeated reads of the object by one user (the same verb,
// the same answer) into the first one's row, with their count and when
// the last came.
func foldReads(entries []timelineEntry) []timelineEntry {
	first := map[string]int{}
	out := entries[:0:0]
	for _, e := range entries {
		k := e.row.FoldKey
		if k == "" {
			out = append(out, e)
			continue
		}
		if i, ok := first[k]; ok {
			out[i].row.Count++
			out[i].row.LastTime = timestamp(e.at)
			continue
		}
		first[k] = len(out)
		e.row.Count = 1
		out = append(out, e)
	}
	return out
}

// pastIncarnation turns an object page into the page of an earlier object
// of the same name, uid, which is no longer stored: its timeline, with a
// link to the stored one if there is one.
func pastIncarnation(vm components.Object, uid string) components.Object {
	past := components.Object{
		Resource: vm.Resource, Namespace: vm.Namespace, Name: vm.Name, Kind: vm.Kind, Key: vm.Key,
		UID: uid, Past: true,
	}
	if vm.Found {
		past.StoredUID = vm.UID
	}
	return past
}

// storedUID is the uid of the object of o's name stored now, "" for none.
func storedUID(o components.Object) string {
	switch {
	case o.Past:
		return o.StoredUID
	case o.Found:
		return o.UID
	}
	return ""
}

// auditAbout tells whether an audit event acted on the object, by its etcd
// key or its resource, namespace and name.
func auditAbout(ev *auditv1.Event, o components.Object) bool {
	if k := ev.Annotations[v1alpha1.AnnotationEtcdKey]; k != "" && k == o.Key {
		return true
	}
	resource, _, namespace, name := auditRef(ev)
	return resource == o.Resource && namespace == o.Namespace && name == o.Name
}

// eventAbout tells whether a core Event's involvedObject is the object:
// by uid, or by kind, namespace and name (its incarnation is sorted out
// by timeline).
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
