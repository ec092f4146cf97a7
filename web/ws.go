package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v5"

	"github.com/glassplane/glassplane/controlplane/storage"
)

const (
	// writeTimeout bounds one websocket write.
	writeTimeout = 10 * time.Second
	// replayIdle ends a replay when storage delivers nothing for this long
	// (the newest revision may have been written outside /registry/).
	replayIdle = 2 * time.Second
	// replayTimeout bounds a whole replay; a page that needs longer resyncs.
	replayTimeout = 30 * time.Second
)

// serveWS streams messages to one page. With since=<revision> the changes
// after that revision are replayed first, with audit=<seq> the audit events
// after that sequence number; a revision that is too old is answered with a
// resync message. The Origin must be the dashboard's own host.
func (d *Dashboard) serveWS(c *echo.Context) error {
	since, err := queryInt(c, "since")
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, err.Error())
	}
	auditSince, err := queryInt(c, "audit")
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

	cl, rev, seq := d.hub.join()
	defer d.hub.leave(cl)
	if err := writeMessage(ctx, conn, Message{Type: MessageHello, Revision: rev, Seq: seq}); err != nil {
		return nil
	}
	if since > 0 && since < rev {
		if err := d.replayStorage(ctx, conn, since, rev); err != nil {
			return nil
		}
	}
	if auditSince >= 0 && auditSince < seq && d.cfg.Audit != nil {
		for _, rec := range d.cfg.Audit.Since(auditSince) {
			if rec.Seq > seq {
				break
			}
			if err := writeMessage(ctx, conn, auditRecordMessage(rec)); err != nil {
				return nil
			}
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-cl.dropped:
			conn.Close(websocket.StatusTryAgainLater, "too slow; reconnect with since")
			return nil
		case b := <-cl.send:
			wctx, cancel := context.WithTimeout(ctx, writeTimeout)
			err := conn.Write(wctx, websocket.MessageText, b)
			cancel()
			if err != nil {
				return nil
			}
		}
	}
}

// replayStorage writes the changes in (since, until]. When storage no longer
// has them it writes a resync message instead.
func (d *Dashboard) replayStorage(ctx context.Context, conn *websocket.Conn, since, until int64) error {
	rctx, cancel := context.WithTimeout(ctx, replayTimeout)
	defer cancel()
	events, err := d.cfg.Store.Watch(rctx, storage.Root, since)
	if err != nil {
		reason := fmt.Sprintf("revision %d can no longer be replayed: %v", since, err)
		if !errors.Is(err, storage.ErrCompacted) && !errors.Is(err, storage.ErrFutureRevision) {
			d.log.Warn("failed to replay the dashboard stream", "since", since, "err", err)
		}
		return writeMessage(ctx, conn, Message{Type: MessageResync, Reason: reason})
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
				return writeMessage(ctx, conn, Message{Type: MessageResync, Reason: "the replay ended early"})
			}
			if ev.Revision > until {
				return nil
			}
			for _, m := range storageMessages(ev, time.Now()) {
				if err := writeMessage(ctx, conn, m); err != nil {
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

func writeMessage(ctx context.Context, conn *websocket.Conn, m Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("failed to encode %s message: %w", m.Type, err)
	}
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	return conn.Write(ctx, websocket.MessageText, b)
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
