package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/glassplane/glassplane/web/source"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v5"
)

const (
	// writeTimeout bounds one websocket write.
	writeTimeout = 10 * time.Second
	// replayIdle ends a replay when storage delivers nothing for this long
	// (the newest revision may have been written outside /registry/).
	replayIdle = 2 * time.Second
	// replayTimeout bounds a whole replay; a page that needs longer resyncs.
	replayTimeout = 30 * time.Second
	// frameInterval is the least time between two frames to one page: the
	// messages that arrive meanwhile go out together in the next frame, so
	// a busy cluster costs the page twenty frames a second, not one per
	// change; each frame the page handles is one it lays out and paints,
	// and on a busy machine fewer, fuller frames reach the screen sooner
	// (1,000 pods, 200 changes a second: write → render p50 ~150 → ~125
	// ms, p99 unchanged, against one frame per 16 ms). A message after a
	// quiet spell goes out at once.
	frameInterval = 50 * time.Millisecond
	// maxFrameMessages bounds the messages in one frame.
	maxFrameMessages = 512
)

// streamTypes are the message types a page may ask for with types=.
var streamTypes = map[string]bool{MessageWatch: true, MessageEvent: true, MessageAudit: true, MessageEtcd: true}

// serveWS streams messages to one page. Every frame is a JSON array of one
// or more messages, in order. With types=watch,audit,... the page gets only
// those types (and hello and resync); without it, every type. With
// objects=ConfigMap,... watch messages carry the object only for those kinds
// (objects= for none); without it, for every kind. With without=request
// audit messages come without their request details (half of a busy
// stream's bytes, which only the requests page shows); with
// without=background the background steps (leases, heartbeats, Event
// writes, checks: a quarter of a busy cluster's messages) are not sent but
// counted, in one background message per frame. With
// since=<revision> the changes after that revision are replayed first, with
// audit=<seq> the audit events after that sequence number; a revision that
// is too old is answered with a resync message. The Origin must be the
// dashboard's own host. A page opened by a logged-in user gets only what
// RBAC lets that user read (see readScope).
func (d *Dashboard) serveWS(c *echo.Context) error {
	since, err := queryInt(c, "since")
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, err.Error())
	}
	auditSince, err := queryInt(c, "audit")
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, err.Error())
	}
	types, err := queryNamed(c, "types", "message type", streamTypes)
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, err.Error())
	}
	objects := queryList(c, "objects")
	without, err := queryNamed(c, "without", "part", streamParts)
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, err.Error())
	}
	req := c.Request()
	select {
	case <-d.hub.ready:
	case <-req.Context().Done():
		return nil
	}
	conn, err := websocket.Accept(c.Response(), req, nil)
	if err != nil {
		d.log.Debug("refused a dashboard websocket", "origin", req.Header.Get("Origin"), "err", err)
		return nil
	}
	defer conn.CloseNow()
	ctx := conn.CloseRead(req.Context())

	cl, rev, seq := d.hub.join(types, objects, without, d.readerOf(req))
	defer d.hub.leave(cl)
	if err := writeMessages(ctx, conn, Message{Type: MessageHello, Revision: rev, Seq: seq}); err != nil {
		return nil
	}
	if since > 0 && since < rev && (cl.wants(MessageWatch) || cl.wants(MessageEvent) || cl.wants(MessageEtcd)) {
		if err := d.replayStorage(ctx, conn, cl, since, rev); err != nil {
			return nil
		}
	}
	if auditSince >= 0 && auditSince < seq && d.cfg.Audit != nil && cl.wants(MessageAudit) {
		var msgs []Message
		var bg background
		for _, rec := range d.cfg.Audit.Since(auditSince) {
			if rec.Seq > seq {
				break
			}
			if !cl.viewer.mayReadAudit(ctx, actorOf(rec.Event)) {
				continue
			}
			if m := auditRecordMessage(rec); cl.counts(&m) {
				bg.add(resumePoint(&m))
			} else {
				msgs = append(msgs, cl.forClient(m))
			}
		}
		msgs = bg.appendTo(msgs)
		for len(msgs) > 0 {
			n := min(len(msgs), maxFrameMessages)
			if err := writeMessages(ctx, conn, msgs[:n]...); err != nil {
				return nil
			}
			msgs = msgs[n:]
		}
	}
	streamFrames(ctx, conn, cl)
	return nil
}

// streamFrames writes the hub's messages for cl until ctx ends or the hub
// drops cl, at most one frame per frameInterval, leaving out those cl's
// user may not read.
func streamFrames(ctx context.Context, conn *websocket.Conn, cl *client) {
	batch := make([][]byte, 0, maxFrameMessages)
	var bg background
	add := func(o outgoing) {
		switch {
		case !cl.mayRead(ctx, o.scope):
		case o.background:
			bg.add(o.revision, o.seq)
		default:
			batch = append(batch, o.b)
		}
	}
	var frame bytes.Buffer
	var last time.Time
	wait := time.NewTimer(frameInterval)
	defer wait.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-cl.dropped:
			conn.Close(websocket.StatusTryAgainLater, "too slow; reconnect with since")
			return
		case o := <-cl.send:
			batch, bg = batch[:0], background{}
			add(o)
		}
		// Soon after the last frame, gather what arrives until the
		// interval has passed.
		if early := frameInterval - time.Since(last); early > 0 {
			wait.Reset(early)
		gather:
			for len(batch) < maxFrameMessages {
				select {
				case <-ctx.Done():
					return
				case o := <-cl.send:
					add(o)
				case <-wait.C:
					break gather
				}
			}
		}
	drain:
		for len(batch) < maxFrameMessages {
			select {
			case o := <-cl.send:
				add(o)
			default:
				break drain
			}
		}
		if bg.count > 0 {
			b, err := json.Marshal(bg.message())
			if err != nil {
				return
			}
			batch = append(batch, b)
		}
		if len(batch) == 0 {
			continue
		}
		frame.Reset()
		frame.WriteByte('[')
		for i, b := range batch {
			if i > 0 {
				frame.WriteByte(',')
			}
			frame.Write(b)
		}
		frame.WriteByte(']')
		wctx, cancel := context.WithTimeout(ctx, writeTimeout)
		err := conn.Write(wctx, websocket.MessageText, frame.Bytes())
		cancel()
		if err != nil {
			return
		}
		last = time.Now()
	}
}

// replayStorage writes the changes in (since, until] that cl asked for. When
// storage no longer has them it writes a resync message instead.
func (d *Dashboard) replayStorage(ctx context.Context, conn *websocket.Conn, cl *client, since, until int64) error {
	rctx, cancel := context.WithTimeout(ctx, replayTimeout)
	defer cancel()
	events, err := d.cfg.Store.Watch(rctx, source.Root, since)
	if err != nil {
		reason := fmt.Sprintf("revision %d can no longer be replayed: %v", since, err)
		if !errors.Is(err, source.ErrCompacted) && !errors.Is(err, source.ErrFutureRevision) {
			d.log.Warn("failed to replay the dashboard stream", "since", since, "err", err)
		}
		return writeMessages(ctx, conn, Message{Type: MessageResync, Reason: reason})
	}
	idle := time.NewTimer(replayIdle)
	defer idle.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-idle.C:
			return nil
		case ev, ok := <-events:
			if !ok {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return writeMessages(ctx, conn, Message{Type: MessageResync, Reason: "the replay ended early"})
			}
			if ev.Revision > until {
				return nil
			}
			var bg background
			msgs := slices.DeleteFunc(storageMessages(ev, time.Now()), func(m Message) bool {
				if !cl.wants(m.Type) || !cl.mayRead(ctx, &m.scope) {
					return true
				}
				if cl.counts(&m) {
					bg.add(resumePoint(&m))
					return true
				}
				return false
			})
			for i := range msgs {
				msgs[i] = cl.forClient(msgs[i])
			}
			msgs = bg.appendTo(msgs)
			if len(msgs) > 0 {
				if err := writeMessages(ctx, conn, msgs...); err != nil {
					return err
				}
			}
			if ev.Revision == until && len(events) == 0 {
				return nil
			}
			idle.Reset(replayIdle)
		}
	}
}

// writeMessages writes msgs as one frame.
func writeMessages(ctx context.Context, conn *websocket.Conn, msgs ...Message) error {
	b, err := json.Marshal(msgs)
	if err != nil {
		return fmt.Errorf("failed to encode %d messages: %w", len(msgs), err)
	}
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	return conn.Write(ctx, websocket.MessageText, b)
}

// queryNamed reads a comma-separated parameter whose values must be
// among known (what names one in the error): nil when absent, else the set
// it names, which may be empty.
func queryNamed(c *echo.Context, name, what string, known map[string]bool) (map[string]bool, error) {
	set := queryList(c, name)
	for v := range set {
		if !known[v] {
			return nil, fmt.Errorf("query parameter %s=%q names an unknown %s %q (known: %s)",
				name, c.QueryParam(name), what, v, strings.Join(slices.Sorted(maps.Keys(known)), ", "))
		}
	}
	return set, nil
}

// background tallies the background steps left out of a frame for a page
// that has them counted, with the newest revision and audit sequence number
// the page resumes from after them.
type background struct {
	count         int
	revision, seq int64
}

func (b *background) add(revision, seq int64) {
	b.count++
	b.revision, b.seq = max(b.revision, revision), max(b.seq, seq)
}

// message is the tally as a background message.
func (b *background) message() Message {
	return Message{Type: MessageBackground, Count: b.count, Revision: b.revision, Seq: b.seq}
}

// appendTo adds the tally's message to msgs when it counted any.
func (b *background) appendTo(msgs []Message) []Message {
	if b.count == 0 {
		return msgs
	}
	return append(msgs, b.message())
}

// queryList reads a comma-separated parameter: nil when absent, else the
// set it names, which may be empty.
func queryList(c *echo.Context, name string) map[string]bool {
	if !c.QueryParams().Has(name) {
		return nil
	}
	set := map[string]bool{}
	for _, v := range strings.Split(c.QueryParam(name), ",") {
		if v != "" {
			set[v] = true
		}
	}
	return set
}

// queryInt reads an integer query parameter; absent means -1.
func queryInt(c *echo.Context, name string) (int64, error) {
	raw := c.QueryParam(name)
	if raw == "" {
		return -1, nil
	}
	v, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("query parameter %s=%q is not a non-negative integer", name, raw)
	}
	return v, nil
}
