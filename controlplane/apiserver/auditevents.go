package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/glassplane/glassplane/api/v1alpha1"
	"github.com/glassplane/glassplane/controlplane/apiserver/audit"
)

// glassplane.io/v1alpha1 auditevents is the audit stream as an API (issue
// 27): the events the server's ring still keeps, each an audit.k8s.io/v1
// Event, listed oldest first and watched as they are recorded, for the
// users RBAC allows (system:masters and the dashboard's identity by
// default: an event can carry request and response bodies). A resource
// version is a sequence number in the ring; a watch from one the ring no
// longer keeps is 410 Expired, as from a compacted etcd revision.

func auditEventResources() []*resource {
	return []*resource{{
		GVK: v1alpha1.SchemeGroupVersion.WithKind("AuditEvent"), Resource: "auditevents", Singular: "auditevent",
		Verbs: []string{"list", "watch"}, Serve: (*request).serveAuditEvents,
	}}
}

func (q *request) serveAuditEvents() error {
	if q.info.Name != "" || q.info.Subresource != "" || (q.info.Verb != "list" && q.info.Verb != "watch") {
		return apierrors.NewMethodNotSupported(q.res.GroupResource(), q.info.Verb)
	}
	if q.s.audit == nil {
		return apierrors.NewServiceUnavailable("this server keeps no audit events")
	}
	opts, err := q.listOptions()
	if err != nil {
		return err
	}
	from, err := parseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return err
	}
	if q.info.Verb == "watch" {
		return q.watchAuditEvents(from, opts.TimeoutSeconds)
	}
	recs := q.s.audit.SinceEncoded(0)
	list := &v1alpha1.AuditEventList{TypeMeta: metav1.TypeMeta{Kind: "AuditEventList", APIVersion: v1alpha1.SchemeGroupVersion.String()}}
	last := q.s.audit.Last()
	for _, rec := range recs {
		ev, err := auditEventOf(rec).Decode()
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		list.Items = append(list.Items, *ev)
		last = max(last, rec.Seq)
	}
	list.ResourceVersion = fmt.Sprint(last)
	q.respond(http.StatusOK, list)
	return nil
}

// watchAuditEvents streams the events after sequence number from (without
// one, every kept event as ADDED first), then each new one.
func (q *request) watchAuditEvents(from int64, timeoutSeconds *int64) error {
	timeout := defaultWatchTimeout
	if timeoutSeconds != nil && *timeoutSeconds > 0 {
		timeout = time.Duration(*timeoutSeconds) * time.Second
	}
	ctx, cancel := context.WithTimeout(q.ctx, timeout)
	defer cancel()
	// Subscribe before reading what is kept, so nothing falls between.
	live := q.s.audit.Subscribe(ctx)
	kept := q.s.audit.SinceEncoded(0)
	if from > 0 && len(kept) > 0 && kept[0].Seq > from+1 {
		return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, kept[0].Seq-1))
	}
	if last := q.s.audit.Last(); from > last {
		return tooLargeResourceVersion(from, last)
	}
	ws := &watchStream{q: q, proto: wantsProtobuf(q.r.Header.Get("Accept"))}
	if ws.proto {
		q.w.Header().Set("Content-Type", mediaProtobuf+";stream=watch")
	} else {
		q.w.Header().Set("Content-Type", "application/json")
	}
	q.w.Header().Set("Cache-Control", "no-cache, private")
	q.w.WriteHeader(http.StatusOK)
	q.ev.ResponseStatus = successStatus(http.StatusOK)
	q.auditStarted()
	sent := from
	send := func(rec audit.EncodedRecord) error {
		if rec.Seq <= sent {
			return nil
		}
		sent = rec.Seq
		// A protobuf watch sends the event as the ring keeps it; JSON
		// needs it decoded.
		enc := auditEventOf(rec)
		var obj runtime.Object = enc
		if !ws.proto {
			ev, err := enc.Decode()
			if err != nil {
				return err
			}
			obj = ev
		}
		return ws.send(watch.Added, obj)
	}
	for _, rec := range kept {
		if err := send(rec); err != nil {
			return nil
		}
	}
	q.w.Flush()
	for {
		select {
		case <-ctx.Done():
			return nil
		case rec, ok := <-live:
			if !ok {
				return nil
			}
			recs, err := missedAuditEvents(q.s.audit, sent, rec)
			if err != nil {
				// The client lists again, as after a compaction.
				ws.sendError(err)
				return nil
			}
			for _, rec := range recs {
				if err := send(rec); err != nil {
					return nil
				}
			}
			if len(live) == 0 {
				q.w.Flush()
			}
		}
	}
}

// missedAuditEvents is what a watch that sent up to sequence number sent
// sends on receiving rec: rec, or, when the ring skipped this subscriber
// for falling behind (a gap in Seq), what it missed and rec from what the
// ring keeps; 410 Expired when the ring no longer keeps the first of them.
func missedAuditEvents(ring *audit.Ring, sent int64, rec audit.EncodedRecord) ([]audit.EncodedRecord, error) {
	if rec.Seq <= sent+1 {
		return []audit.EncodedRecord{rec}, nil
	}
	kept := ring.SinceEncoded(sent)
	if len(kept) == 0 || kept[0].Seq > sent+1 {
		return nil, apierrors.NewResourceExpired(fmt.Sprintf("the watch fell behind: the audit events after %d are no longer kept", sent))
	}
	return kept, nil
}

// auditEventOf names a recorded event (upstream's audit.k8s.io/v1 type,
// as the ring keeps it encoded) as an AuditEvent: <auditID>.<stage>, its
// sequence number as its resourceVersion, and its stage's time as its
// creation. It shares the ring's encoding, which nobody changes.
func auditEventOf(rec audit.EncodedRecord) *v1alpha1.EncodedAuditEvent {
	return &v1alpha1.EncodedAuditEvent{
		TypeMeta: metav1.TypeMeta{Kind: "AuditEvent", APIVersion: v1alpha1.SchemeGroupVersion.String()},
		Metadata: metav1.ObjectMeta{
			Name:              rec.Event.Name,
			ResourceVersion:   strconv.FormatInt(rec.Seq, 10),
			CreationTimestamp: metav1.NewTime(rec.Event.Time),
		},
		Event: rec.Event.Proto,
	}
}
