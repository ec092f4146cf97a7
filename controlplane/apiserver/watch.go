package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/glassplane/glassplane/controlplane/storage"
)

const (
	// defaultWatchTimeout is kube-apiserver's --min-request-timeout; a
	// watch without timeoutSeconds ends after a random time up to twice it.
	defaultWatchTimeout = 30 * time.Minute
	// initialEventsAnnotation marks the bookmark that ends the initial
	// events of a sendInitialEvents watch.
	initialEventsAnnotation = "k8s.io/initial-events-end"
)

// bookmarkInterval is how often a watch with allowWatchBookmarks sends a
// BOOKMARK (kube-apiserver sends them about once a minute), in nanoseconds.
var bookmarkInterval atomic.Int64

func init() { bookmarkInterval.Store(int64(time.Minute)) }

// watchEvent is the JSON shape of metav1.WatchEvent with a typed object.
type watchEvent struct {
	Type   watch.EventType `json:"type"`
	Object any             `json:"object"`
}

// watchStream writes watch events to the response, one JSON document (or
// protobuf frame) per event. It flushes when it has caught up with the
// events waiting for it: one flush, one TLS record and one write system
// call for a burst of events instead of one per event.
type watchStream struct {
	q *request
	// as is the conversion the client asked for (Table, PartialObjectMetadata).
	as string
	// proto sends length-prefixed protobuf frames instead of JSON lines.
	proto bool
	// lastRev is the revision of the last event sent.
	lastRev int64
}

func (ws *watchStream) send(typ watch.EventType, obj runtime.Object) error {
	b, err := ws.frame(typ, obj)
	if err != nil {
		return err
	}
	_, err = ws.q.w.Write(b)
	return err
}

// frame encodes one watch event as sent to the client: a JSON line, or a
// protobuf metav1.WatchEvent behind its 4-byte big-endian length, as
// kube-apiserver's "application/vnd.kubernetes.protobuf;stream=watch" is.
func (ws *watchStream) frame(typ watch.EventType, obj runtime.Object) ([]byte, error) {
	body, err := ws.q.convertAs(ws.as, obj)
	if err != nil {
		return nil, err
	}
	if ws.proto {
		return protobufWatchFrame(typ, body)
	}
	b, err := json.Marshal(watchEvent{Type: typ, Object: body})
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// sendShared sends an event whose object came from the storage event's
// memo: watchers asking for the plain object share one encoded frame.
func (ws *watchStream) sendShared(memo *storage.Memo, typ watch.EventType, obj runtime.Object, prev bool) error {
	if ws.as != "" {
		return ws.send(typ, obj)
	}
	type frameKey struct {
		res   *resource
		typ   watch.EventType
		prev  bool
		proto bool
	}
	v := memo.Do(frameKey{ws.q.res, typ, prev, ws.proto}, func() any {
		b, err := ws.frame(typ, obj)
		return memoResult{b, err}
	}).(memoResult)
	if v.err != nil {
		return v.err
	}
	_, err := ws.q.w.Write(v.val.([]byte))
	return err
}

// memoResult is a value or error kept in a storage.Memo.
type memoResult struct {
	val any
	err error
}

// decodeShared decodes a storage event's new (or, with prev, previous)
// value once for every watcher of the resource. The previous value is the
// object as it was, with its own resourceVersion (PrevRevision); when the
// store still keeps the event that wrote it (ev.PrevMemo), what was decoded
// for that event's watchers is reused.
func decodeShared(res *resource, ev storage.Event, prev bool) (runtime.Object, error) {
	if !prev {
		return decodeMemo(res, ev.Memo, ev.Value, ev.Revision)
	}
	if ev.PrevMemo != nil {
		return decodeMemo(res, ev.PrevMemo, ev.PrevValue, ev.PrevRevision)
	}
	type prevKey struct{ res *resource }
	v := ev.Memo.Do(prevKey{res}, func() any {
		obj, err := decodeStored(res, ev.PrevValue, ev.PrevRevision)
		return memoResult{obj, err}
	}).(memoResult)
	if v.err != nil {
		return nil, v.err
	}
	return v.val.(runtime.Object), nil
}

// decodeMemo decodes value, written at rev, as res once for every holder
// of memo, the Memo of the event that wrote it (nil: decode it here, for
// the caller alone). The object is shared: read it, never change it.
func decodeMemo(res *resource, memo *storage.Memo, value []byte, rev int64) (runtime.Object, error) {
	type decodeKey struct{ res *resource }
	v := memo.Do(decodeKey{res}, func() any {
		obj, err := decodeStored(res, value, rev)
		return memoResult{obj, err}
	}).(memoResult)
	if v.err != nil {
		return nil, v.err
	}
	return v.val.(runtime.Object), nil
}

// deletedShared is ev's previous object as a DELETED event sends it to a
// watcher it stopped matching: as it was, at the event's resourceVersion,
// as kube-apiserver's watch cache sends it. One copy for every watcher.
func deletedShared(res *resource, ev storage.Event, prev runtime.Object) runtime.Object {
	type deletedKey struct{ res *resource }
	return ev.Memo.Do(deletedKey{res}, func() any {
		obj := prev.DeepCopyObject()
		if m, err := meta.Accessor(obj); err == nil {
			m.SetResourceVersion(strconv.FormatInt(ev.Revision, 10))
		}
		return obj
	}).(runtime.Object)
}

// podNodeName indexes pod events by spec.nodeName for the storage fan-out.
func podNodeName(res *resource) storage.IndexFunc {
	nodeName := func(ev storage.Event, prev bool) string {
		obj, err := decodeShared(res, ev, prev)
		if err != nil {
			return ""
		}
		return obj.(*corev1.Pod).Spec.NodeName
	}
	return func(ev storage.Event) (cur, prev string) {
		cur = nodeName(ev, false)
		if ev.Type == storage.EventPut && !ev.Created && ev.PrevValue != nil {
			prev = nodeName(ev, true)
		}
		return cur, prev
	}
}

// bookmark sends a BOOKMARK carrying only rev (and annotations).
func (ws *watchStream) bookmark(rev int64, annotations map[string]string) error {
	obj := ws.q.res.New()
	obj.GetObjectKind().SetGroupVersionKind(ws.q.res.GVK)
	m, _ := meta.Accessor(obj)
	m.SetResourceVersion(strconv.FormatInt(rev, 10))
	m.SetAnnotations(annotations)
	var body runtime.Object = obj
	if ws.as == asPartialObjectMetadata {
		body, _ = ws.q.convertAs(ws.as, obj)
	}
	var b []byte
	var err error
	if ws.proto {
		b, err = protobufWatchFrame(watch.Bookmark, body)
	} else if b, err = json.Marshal(watchEvent{Type: watch.Bookmark, Object: body}); err == nil {
		b = append(b, '\n')
	}
	if err != nil {
		return err
	}
	if _, err := ws.q.w.Write(b); err != nil {
		return err
	}
	ws.q.w.Flush()
	return nil
}

func (q *request) watch() error {
	opts, err := q.listOptions()
	if err != nil {
		return err
	}
	sel, err := q.selection()
	if err != nil {
		return err
	}
	rvParam := opts.ResourceVersion
	match := string(opts.ResourceVersionMatch)
	bookmarks := opts.AllowWatchBookmarks
	sendInitial := opts.SendInitialEvents
	startRev, err := parseResourceVersion(rvParam)
	if err != nil {
		return err
	}
	if sendInitial != nil {
		if match != string(metav1.ResourceVersionMatchNotOlderThan) {
			return apierrors.NewInvalid(listOptionsKind, "", fieldErrors("resourceVersionMatch", match, "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
		}
		if *sendInitial && !bookmarks {
			return apierrors.NewInvalid(listOptionsKind, "", fieldErrors("allowWatchBookmarks", false, "sendInitialEvents requires setting allowWatchBookmarks to true"))
		}
	} else if match != "" {
		return apierrors.NewBadRequest(fmt.Sprintf("resourceVersionMatch is forbidden for watch"))
	}
	timeout := time.Duration(float64(defaultWatchTimeout) * (1 + rand.Float64()))
	if n := opts.TimeoutSeconds; n != nil {
		if *n < 0 {
			return apierrors.NewBadRequest(fmt.Sprintf("invalid timeoutSeconds %d", *n))
		}
		if *n > 0 {
			timeout = time.Duration(*n) * time.Second
		}
	}
	ctx, cancel := context.WithTimeout(q.ctx, timeout)
	defer cancel()

	prefix := storage.Prefix(q.res.StorageResource, q.info.Namespace)
	initial := (sendInitial != nil && *sendInitial) || (sendInitial == nil && startRev == 0)
	var initialObjs []runtime.Object
	if initial {
		items, rev, _, _, err := q.listObjects(sel, &listParams{minRevision: startRev})
		if err != nil {
			return err
		}
		initialObjs, startRev = items, rev
	} else if startRev == 0 {
		startRev = q.s.store.Revision()
	}
	q.enter(stageEtcd)
	var events <-chan storage.Event
	if node, ok := sel.fields.RequiresExactMatch("spec.nodeName"); ok && q.res == q.s.podsRes {
		// A node agent's watch: woken only for its own pods.
		events, err = q.s.store.WatchIndexed(ctx, prefix, startRev, storage.Prefix(q.res.StorageResource, ""), node)
	} else {
		events, err = q.s.store.Watch(ctx, prefix, startRev)
	}
	accept := q.r.Header.Get("Accept")
	ws := &watchStream{q: q, as: wantsAs(accept), lastRev: startRev}
	ws.proto = wantsProtobuf(accept)
	if ws.proto {
		q.w.Header().Set("Content-Type", mediaProtobuf+";stream=watch")
	} else {
		q.w.Header().Set("Content-Type", "application/json")
	}
	q.w.Header().Set("Cache-Control", "no-cache, private")
	q.w.WriteHeader(http.StatusOK)
	q.ev.ResponseStatus = successStatus(http.StatusOK)
	q.auditStarted()
	q.w.Flush()
	if err != nil {
		return ws.sendError(q.watchStartError(err, startRev))
	}
	for _, obj := range initialObjs {
		if err := ws.send(watch.Added, obj); err != nil {
			return nil
		}
	}
	q.w.Flush()
	if sendInitial != nil && *sendInitial {
		if err := ws.bookmark(startRev, map[string]string{initialEventsAnnotation: "true"}); err != nil {
			return nil
		}
	}
	var tick <-chan time.Time
	if bookmarks {
		t := time.NewTicker(time.Duration(bookmarkInterval.Load()))
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick:
			if err := ws.bookmark(ws.lastRev, nil); err != nil {
				return nil
			}
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			if err := ws.deliver(sel, ev); err != nil {
				q.s.log.Debug("watch stream ended", "resource", q.res.Resource, "err", err)
				return nil
			}
			if len(events) == 0 {
				q.w.Flush()
			}
		}
	}
}

// watchStartError turns a failed storage watch into the Status sent as an
// ERROR event.
func (q *request) watchStartError(err error, rev int64) error {
	switch {
	case errors.Is(err, storage.ErrCompacted):
		return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rev, q.s.compactRevision(q.ctx, rev)))
	case errors.Is(err, storage.ErrFutureRevision):
		return tooLargeResourceVersion(rev, q.s.store.Revision())
	}
	return err
}

func (ws *watchStream) sendError(err error) error {
	st := toStatus(err)
	var b []byte
	if ws.proto {
		b, _ = protobufWatchFrame(watch.Error, st)
	} else {
		b, _ = json.Marshal(watchEvent{Type: watch.Error, Object: st})
		b = append(b, '\n')
	}
	ws.q.w.Write(b)
	ws.q.w.Flush()
	return nil
}

// deliver converts one storage event into a watch event for this stream,
// as kube-apiserver's watch cache does for selectors: an object that stops
// matching is sent as DELETED, one that starts matching as ADDED.
func (ws *watchStream) deliver(sel *selection, ev storage.Event) error {
	res := ws.q.res
	// The decoded objects are shared with every other watcher of this
	// resource: they are read, never changed.
	cur, err := decodeShared(res, ev, false)
	if err != nil {
		return err
	}
	curMatch := sel.matchesShared(res, ev, false, cur)
	prevMatch := false
	var prev runtime.Object
	if ev.PrevValue != nil && !ev.Created && ev.Type == storage.EventPut {
		if prev, err = decodeShared(res, ev, true); err == nil {
			prevMatch = sel.matchesShared(res, ev, true, prev)
		}
	}
	ws.lastRev = ev.Revision
	var typ watch.EventType
	switch {
	case ev.Type == storage.EventDelete:
		if !curMatch {
			return nil
		}
		typ = watch.Deleted
	case ev.Created || ev.PrevValue == nil:
		if !curMatch {
			return nil
		}
		typ = watch.Added
	case curMatch && prevMatch:
		typ = watch.Modified
	case curMatch:
		typ = watch.Added
	case prevMatch:
		return ws.sendShared(ev.Memo, watch.Deleted, deletedShared(res, ev, prev), true)
	default:
		return nil
	}
	return ws.sendShared(ev.Memo, typ, cur, false)
}
