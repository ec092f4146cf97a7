package web

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/glassplane/glassplane/web/source"
)

const (
	// clientBuffer is how many messages may wait for one page (a few
	// seconds of a busy cluster); a page that falls further behind is
	// dropped and resumes from its last revision.
	clientBuffer = 4096
	// rewatchDelay is the pause before reopening a storage watch that failed.
	rewatchDelay = time.Second
)

// outgoing is one encoded message for a page, with who may read it; or,
// for a page that has background steps counted, one such step (b nil),
// with where the page resumes from after it (resumePoint).
type outgoing struct {
	b     []byte
	scope *readScope
	// background marks a left-out background step.
	background    bool
	revision, seq int64
}

// client is one connected page.
type client struct {
	send chan outgoing
	// viewer is the user the page was opened by, bound at join; nil (the
	// dashboard's own identity) reads every message and filters nothing.
	viewer *userAccess
	// dropped is closed when the hub removes the client for falling behind.
	dropped chan struct{}
	// types are the message types the page asked for; nil is every type.
	// Hello and resync messages go to every page.
	types map[string]bool
	// objects are the kinds whose objects the page's watch messages carry;
	// nil is every kind.
	objects map[string]bool
	// without are the parts the page left out (streamParts): its audit
	// messages' request details, its background steps (counted instead).
	without map[string]bool
}

// The parts of the stream a page may leave out with without=.
const (
	// partRequest is an audit message's request details (authentication,
	// authorization, admission): the requests page shows them.
	partRequest = "request"
	// partBackground is the background steps: the page gets a count of
	// them in each frame instead (MessageBackground).
	partBackground = "background"
)

// streamParts are the parts a page may leave out with without=.
var streamParts = map[string]bool{partRequest: true, partBackground: true}

// resumePoint is where a page resumes from once it has m: an audit
// message's sequence number, a storage message's revision (an audit
// message's revision is its write's, whose watch event may not have
// reached the page yet).
func resumePoint(m *Message) (revision, seq int64) {
	if m.Type == MessageAudit {
		return 0, m.Seq
	}
	return m.Revision, 0
}

// counts reports whether m is a background step c has counted, not sent.
func (c *client) counts(m *Message) bool {
	return m.Background != "" && c.without[partBackground] && (m.Type == MessageAudit || m.Type == MessageEvent)
}

// wantsObject reports whether the page's watch messages carry objects of
// kind.
func (c *client) wantsObject(kind string) bool {
	return c.objects == nil || c.objects[kind]
}

// forClient is m as c asked for it: without the object when c does not
// want objects of its kind, without the request details when c left them
// out.
func (c *client) forClient(m Message) Message {
	if m.Object != nil && !c.wantsObject(m.Kind) {
		m.Object = nil
	}
	if c.without[partRequest] {
		m.Request = nil
	}
	return m
}

// variant numbers the encodings of m that clients may ask for (with or
// without its object, with or without its request details), so each is
// made at most once.
func (c *client) variant(m *Message) int {
	v := 0
	if m.Object != nil && c.wantsObject(m.Kind) {
		v |= 1
	}
	if m.Request != nil && !c.without[partRequest] {
		v |= 2
	}
	return v
}

// mayRead reports whether the page's user may read a message of scope s.
func (c *client) mayRead(ctx context.Context, s *readScope) bool {
	return c.viewer == nil || c.viewer.mayRead(ctx, s)
}

// wants reports whether the page asked for messages of type typ.
func (c *client) wants(typ string) bool {
	return c.types == nil || c.types[typ] || typ == MessageHello || typ == MessageResync
}

// hub runs one storage watch and one audit subscription and fans their
// messages out to every connected page.
type hub struct {
	store source.Store
	ring  *source.AuditLog
	log   *slog.Logger
	ready chan struct{}

	mu      sync.Mutex // guards the fields below
	clients map[*client]struct{}
	// rev is the newest storage revision broadcast; seq the newest audit
	// sequence number.
	rev int64
	seq int64
}

func newHub(store source.Store, ring *source.AuditLog, log *slog.Logger) *hub {
	return &hub{store: store, ring: ring, log: log, ready: make(chan struct{}), clients: make(map[*client]struct{})}
}

// run streams until ctx ends.
func (h *hub) run(ctx context.Context) error {
	select {
	case <-h.store.Ready():
	case <-ctx.Done():
		return nil
	}
	var records <-chan source.AuditRecord
	if h.ring != nil {
		records = h.ring.Subscribe(ctx)
	}
	h.mu.Lock()
	h.rev = h.store.Revision()
	h.seq = lastSeq(h.ring)
	h.mu.Unlock()
	watch := h.watch(ctx)
	close(h.ready)
	h.log.Info("dashboard stream running", "revision", h.rev)
	defer h.dropAll()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-watch:
			if !ok {
				watch = h.watch(ctx)
				continue
			}
			h.broadcastStorage(ev)
		case rec, ok := <-records:
			if !ok {
				records = nil
				continue
			}
			h.broadcastAudit(rec)
		}
	}
}

// watch opens the storage watch after the newest revision broadcast. When
// that revision is compacted away, every page is told to resync and the
// watch restarts from now. It returns a nil channel once ctx ends.
func (h *hub) watch(ctx context.Context) <-chan source.Event {
	for ctx.Err() == nil {
		h.mu.Lock()
		from := h.rev
		h.mu.Unlock()
		ch, err := h.store.Watch(ctx, source.Root, from)
		if err == nil {
			return ch
		}
		if ctx.Err() != nil {
			// Stopping: the API ended the watch and refused the new one
			// as the same stop reached it.
			return nil
		}
		if errors.Is(err, source.ErrCompacted) {
			h.log.Warn("dashboard stream fell behind compaction; pages resync", "from", from)
			h.mu.Lock()
			h.rev = h.store.Revision()
			h.mu.Unlock()
			h.broadcast(Message{Type: MessageResync, Reason: "the stream's revision was compacted"})
			continue
		}
		h.log.Warn("failed to open the dashboard's storage watch; retrying", "from", from, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(rewatchDelay):
		}
	}
	return nil
}

func (h *hub) broadcastStorage(ev source.Event) {
	h.mu.Lock()
	if ev.Revision > h.rev {
		h.rev = ev.Revision
	}
	idle := !h.wantedLocked(MessageWatch, MessageEvent, MessageEtcd)
	h.mu.Unlock()
	if idle {
		// No page asked for storage changes: skip decoding the object.
		return
	}
	msgs := storageMessages(ev, time.Now())
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range msgs {
		h.sendLocked(m)
	}
}

func (h *hub) broadcastAudit(rec source.AuditRecord) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if rec.Seq <= h.seq {
		return
	}
	if rec.Seq > h.seq+1 {
		// The ring dropped records for this subscriber; fetch the gap.
		for _, missed := range h.ring.Since(h.seq) {
			if missed.Seq < rec.Seq {
				h.sendLocked(auditRecordMessage(missed))
			}
		}
	}
	h.seq = rec.Seq
	h.sendLocked(auditRecordMessage(rec))
}

func (h *hub) broadcast(m Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sendLocked(m)
}

// sendLocked queues m for every client that asked for its type, dropping
// those whose queue is full; m is encoded at most once per variant for all
// of them (with or without its object and its request details), and not at
// all for a page that has its background steps counted. Its read scope
// goes along, for the pages of logged-in users to filter by (see
// streamFrames). h.mu must be held.
func (h *hub) sendLocked(m Message) {
	var encoded [4][]byte
	var scope *readScope
	for c := range h.clients {
		if !c.wants(m.Type) {
			continue
		}
		if c.viewer != nil && scope == nil {
			scope = new(m.scope)
		}
		o := outgoing{scope: scope}
		if c.counts(&m) {
			o.background = true
			o.revision, o.seq = resumePoint(&m)
		} else {
			v := c.variant(&m)
			if encoded[v] == nil {
				b, err := json.Marshal(c.forClient(m))
				if err != nil {
					h.log.Warn("failed to encode a dashboard message", "type", m.Type, "err", err)
					return
				}
				encoded[v] = b
			}
			o.b = encoded[v]
		}
		select {
		case c.send <- o:
		default:
			h.log.Debug("dropping a slow dashboard client")
			h.dropLocked(c)
		}
	}
}

// wantedLocked reports whether some client asked for one of types; h.mu
// must be held.
func (h *hub) wantedLocked(types ...string) bool {
	for c := range h.clients {
		for _, t := range types {
			if c.wants(t) {
				return true
			}
		}
	}
	return false
}

// join adds a client that gets the messages of the given types, with the
// objects of the given kinds (nil: all), without the given parts, that
// viewer may read (nil: all),
// and returns the revision and audit sequence its live messages start
// after.
func (h *hub) join(types, objects, without map[string]bool, viewer *userAccess) (c *client, rev, seq int64) {
	c = &client{send: make(chan outgoing, clientBuffer), dropped: make(chan struct{}), types: types, objects: objects, without: without, viewer: viewer}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clients[c] = struct{}{}
	return c, h.rev, h.seq
}

// leave removes a client.
func (h *hub) leave(c *client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.clients, c)
}

func (h *hub) dropLocked(c *client) {
	if _, ok := h.clients[c]; !ok {
		return
	}
	delete(h.clients, c)
	close(c.dropped)
}

func (h *hub) dropAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.clients {
		h.dropLocked(c)
	}
}

// lastSeq is the newest sequence number in the log (0 when empty or nil).
func lastSeq(log *source.AuditLog) int64 {
	if log == nil {
		return 0
	}
	return log.Last()
}
