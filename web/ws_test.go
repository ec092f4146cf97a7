package web

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/glassplane/glassplane/api/v1alpha1"

	"github.com/coder/websocket"
	corev1 "k8s.io/api/core/v1"
)

// stream is one dashboard websocket with the messages of the frame being
// read.
type stream struct {
	conn    *websocket.Conn
	pending []Message
	frames  int
}

// dial opens the dashboard's websocket as a page of the dashboard would.
func (e *env) dial(t *testing.T, query string) *stream {
	t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, deadline)
	defer cancel()
	url := "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/ws" + query
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {e.srv.URL}}})
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	return &stream{conn: conn}
}

// next reads messages until match accepts one, and returns it. Every frame
// must be a JSON array of at least one message.
func next(t *testing.T, s *stream, match func(Message) bool) Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	for {
		for len(s.pending) > 0 {
			m := s.pending[0]
			s.pending = s.pending[1:]
			if match(m) {
				return m
			}
		}
		_, b, err := s.conn.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if err := json.Unmarshal(b, &s.pending); err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		if len(s.pending) == 0 {
			t.Fatalf("an empty frame: %s", b)
		}
		s.frames++
	}
}

func isType(typ string) func(Message) bool {
	return func(m Message) bool { return m.Type == typ }
}

func TestWebsocket(t *testing.T) {
	e := newEnv(t)

	t.Run("watch, etcd and audit messages", func(t *testing.T) {
		conn := e.dial(t, "")
		next(t, conn, isType(MessageHello))
		rev := e.put(t, "/registry/pods/default/live", pod("default", "live", "node1", corev1.PodPending))
		m := next(t, conn, isType(MessageWatch))
		if m.Kind != "Pod" || m.Namespace != "default" || m.Name != "live" || m.Revision != rev || m.EventType != "ADDED" ||
			m.Phase != "Pending" || m.NodeName != "node1" || m.UID != "uid-live" || m.ResourceVersion == "" || m.Href != "/objects/pods/default/live" {
			t.Errorf("watch message = %+v", m)
		}
		e.put(t, "/registry/pods/default/live", pod("default", "live", "node1", corev1.PodRunning))
		m = next(t, conn, isType(MessageEtcd))
		if m.Key != "/registry/pods/default/live" || m.EventType != "PUT" || m.Created {
			t.Errorf("etcd message = %+v", m)
		}
		m = next(t, conn, isType(MessageWatch))
		if m.EventType != "MODIFIED" || m.Phase != "Running" {
			t.Errorf("update = %+v", m)
		}
		e.ring.Add(auditEvent("create", "pods", "binding", "default", "live", "system:kube-scheduler", time.Now(),
			map[string]string{
				v1alpha1.AnnotationStages:       "authentication,authorization,admission,etcd",
				v1alpha1.AnnotationStageStarts:  "authentication=2,authorization=30,admission=95,etcd=1388",
				v1alpha1.AnnotationEtcdRevision: "77",
			}))
		m = next(t, conn, isType(MessageAudit))
		if m.Action != "create pods/binding" || m.Component != "system:kube-scheduler" || m.Revision != 77 || len(m.Stages) != 4 || m.Stages[3].State != "ok" {
			t.Errorf("audit message = %+v", m)
		}
		if len(m.Stages) == 4 && (m.Stages[3].StartUs == nil || *m.Stages[3].StartUs != 1388 || m.Stages[0].StartUs == nil || *m.Stages[0].StartUs != 2) {
			t.Errorf("audit message stages = %+v, want the etcd write entered at 1388 µs", m.Stages)
		}
		ev := coreEvent("live.1", pod("default", "live", "", ""), "Scheduled", "default-scheduler", "Successfully assigned default/live to node1", time.Now())
		e.put(t, "/registry/events/default/live.1", ev)
		m = next(t, conn, isType(MessageEvent))
		if m.Kind != "Pod" || m.Name != "live" || m.Action != "Scheduled" || m.Component != "default-scheduler" || m.UID != "uid-live" {
			t.Errorf("event message = %+v", m)
		}
	})

	t.Run("a foreign origin is refused", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(e.ctx, deadline)
		defer cancel()
		url := "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/ws"
		_, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"http://evil.example"}}})
		if err == nil {
			t.Fatal("dial with a foreign origin succeeded")
		}
		if resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("response = %v, want 403", resp)
		}
	})

	t.Run("reconnect with since replays missed changes", func(t *testing.T) {
		conn := e.dial(t, "")
		hello := next(t, conn, isType(MessageHello))
		conn.conn.Close(websocket.StatusNormalClosure, "")
		missed := e.put(t, "/registry/pods/default/missed", pod("default", "missed", "", ""))
		e.ring.Add(auditEvent("create", "pods", "", "default", "missed", "kubernetes-admin", time.Now(), nil))
		e.waitHub(t, missed)

		again := e.dial(t, "?since="+itoa(hello.Revision)+"&audit="+itoa(hello.Seq))
		next(t, again, isType(MessageHello))
		m := next(t, again, func(m Message) bool { return m.Type == MessageWatch || m.Type == MessageAudit })
		if m.Type != MessageWatch || m.Name != "missed" {
			t.Errorf("first replayed message = %+v", m)
		}
		a := next(t, again, isType(MessageAudit))
		if a.Name != "missed" || a.Seq <= hello.Seq {
			t.Errorf("replayed audit = %+v", a)
		}
	})

	t.Run("a compacted revision asks for a resync", func(t *testing.T) {
		// More writes than the store's in-memory history holds, then
		// compaction: revision 1 is gone from both.
		var rev int64
		for i := range testHistory + 2 {
			rev = e.put(t, "/registry/pods/default/later", pod("default", "later"+itoa(int64(i)), "", ""))
		}
		if err := e.store.Compact(e.ctx, rev); err != nil {
			t.Fatal(err)
		}
		e.waitHub(t, rev)
		conn := e.dial(t, "?since=1")
		m := next(t, conn, func(m Message) bool { return m.Type != MessageHello })
		if m.Type != MessageResync {
			t.Errorf("got %+v, want resync", m)
		}
	})

	t.Run("types= sends only the types asked for", func(t *testing.T) {
		conn := e.dial(t, "?types=watch")
		next(t, conn, isType(MessageHello))
		first := e.put(t, "/registry/pods/default/typed", pod("default", "typed", "", corev1.PodPending))
		e.ring.Add(auditEvent("create", "pods", "", "default", "typed", "kubernetes-admin", time.Now(), nil))
		second := e.put(t, "/registry/pods/default/typed", pod("default", "typed", "", corev1.PodRunning))
		for _, want := range []int64{first, second} {
			m := next(t, conn, func(Message) bool { return true })
			if m.Type != MessageWatch || m.Revision != want {
				t.Fatalf("got %s message at revision %d, want only watch messages (revision %d)", m.Type, m.Revision, want)
			}
		}
	})

	t.Run("objects= sends the objects of those kinds only", func(t *testing.T) {
		conn := e.dial(t, "?types=watch&objects=Node")
		next(t, conn, isType(MessageHello))
		e.put(t, "/registry/pods/default/lean", pod("default", "lean", "node1", corev1.PodPending))
		m := next(t, conn, isType(MessageWatch))
		if m.Name != "lean" || m.Phase != "Pending" || m.NodeName != "node1" || m.Object != nil {
			t.Errorf("pod watch message = %+v, want its summary without the object", m)
		}
		e.put(t, "/registry/minions/node9", node("node9", corev1.ConditionTrue))
		m = next(t, conn, isType(MessageWatch))
		if m.Name != "node9" || !strings.Contains(string(m.Object), `"name":"node9"`) {
			t.Errorf("node watch message = %+v, want it with its object", m)
		}
	})

	t.Run("without=request leaves out audit messages' request details", func(t *testing.T) {
		full := e.dial(t, "?types=audit")
		lean := e.dial(t, "?types=audit&without=request")
		next(t, full, isType(MessageHello))
		next(t, lean, isType(MessageHello))
		e.ring.Add(auditEvent("create", "pods", "", "default", "detailed", "kubernetes-admin", time.Now(), nil))
		if m := next(t, full, isType(MessageAudit)); m.Name != "detailed" || m.Request == nil {
			t.Errorf("audit message = %+v, want its request details", m)
		}
		if m := next(t, lean, isType(MessageAudit)); m.Name != "detailed" || m.Request != nil || m.Action != "create pods" || m.Component != "kubernetes-admin" {
			t.Errorf("audit message without=request = %+v, want its step without the request details", m)
		}
	})

	t.Run("without=background counts the background steps", func(t *testing.T) {
		conn := e.dial(t, "?types=audit,event&without=background")
		hello := next(t, conn, isType(MessageHello))
		// Three background steps (an Event's write, a Lease renewal, a
		// node's heartbeat), then a step of the story.
		// Its write's revision, which the page's storage stream may not
		// have reached.
		written := map[string]string{v1alpha1.AnnotationEtcdRevision: "999999"}
		e.ring.Add(auditEvent("create", "events", "", "default", "counted.1", "system:node:node1", time.Now(), written))
		e.ring.Add(auditEvent("update", "leases", "", "kube-node-lease", "node1", "system:node:node1", time.Now(), nil))
		e.ring.Add(auditEvent("patch", "nodes", "status", "", "node1", "system:node:node1", time.Now(), nil))
		e.ring.Add(auditEvent("create", "pods", "", "default", "story", "kubernetes-admin", time.Now(), nil))
		counted, story := 0, false
		var seq int64
		for counted < 3 || !story {
			switch m := next(t, conn, func(Message) bool { return true }); m.Type {
			case MessageAudit:
				if m.Name != "story" || m.Background != "" || story {
					t.Fatalf("got audit message %+v, want only the step of the story, once", m)
				}
				story = true
			case MessageBackground:
				counted += m.Count
				seq = max(seq, m.Seq)
				if m.Revision != 0 {
					t.Errorf("a count of audit steps carries revision %d: the page would resume its storage stream after changes it may not have", m.Revision)
				}
				if counted > 3 {
					t.Fatalf("background counts reached %d, want 3", counted)
				}
			default:
				t.Fatalf("got %+v, want the story's step and background counts", m)
			}
		}
		if seq != hello.Seq+3 {
			t.Errorf("background counts up to seq %d, want %d", seq, hello.Seq+3)
		}

		// A reconnect replays them counted too.
		again := e.dial(t, "?types=audit&without=background&audit="+itoa(hello.Seq))
		next(t, again, isType(MessageHello))
		m := next(t, again, func(Message) bool { return true })
		if m.Type != MessageAudit || m.Name != "story" {
			t.Fatalf("first replayed message = %+v, want the story's step", m)
		}
		if m = next(t, again, func(Message) bool { return true }); m.Type != MessageBackground || m.Count != 3 || m.Seq != hello.Seq+3 {
			t.Errorf("replayed background = %+v, want a count of 3 up to seq %d", m, hello.Seq+3)
		}
	})

	for query, says := range map[string]string{
		"?since=abc":           "since",
		"?types=watch,gossip":  `unknown message type \"gossip\" (known: audit, etcd, event, watch)`,
		"?without=request,all": `unknown part \"all\" (known: background, request)`,
	} {
		t.Run("bad query "+query, func(t *testing.T) {
			resp, err := http.Get(e.srv.URL + "/ws" + query)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), says) {
				t.Errorf("answer = %d %s, want 400 saying %s", resp.StatusCode, body, says)
			}
		})
	}
}

// TestStreamBatchesQueuedMessages: the messages waiting for a page go out
// together, in order, in one frame.
func TestStreamBatchesQueuedMessages(t *testing.T) {
	cl := &client{send: make(chan outgoing, 16), dropped: make(chan struct{})}
	for i := range 10 {
		b, err := json.Marshal(Message{Type: MessageEtcd, Revision: int64(i + 1)})
		if err != nil {
			t.Fatal(err)
		}
		cl.send <- outgoing{b: b}
	}
	frame, _ := streamOf(t, cl)()
	if len(frame) != 10 {
		t.Fatalf("the first frame holds %d messages, want the 10 queued", len(frame))
	}
	for i, m := range frame {
		if m.Revision != int64(i+1) {
			t.Errorf("message %d has revision %d, want %d", i, m.Revision, i+1)
		}
	}
}

// streamOf serves cl's stream (streamFrames) on a test websocket server
// and returns a function that reads the next frame from it, decoded, with
// its raw JSON; the test fails on an error or after deadline.
func streamOf(t *testing.T, cl *client) func() ([]Message, []byte) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		streamFrames(conn.CloseRead(r.Context()), conn, cl)
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	t.Cleanup(cancel)
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	return func() ([]Message, []byte) {
		t.Helper()
		_, b, err := conn.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var frame []Message
		if err := json.Unmarshal(b, &frame); err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		return frame, b
	}
}

// waitHub waits until the hub has broadcast revision rev.
func (e *env) waitHub(t *testing.T, rev int64) {
	t.Helper()
	stop := time.Now().Add(deadline)
	for {
		e.dash.hub.mu.Lock()
		seen := e.dash.hub.rev
		e.dash.hub.mu.Unlock()
		if seen >= rev {
			return
		}
		if time.Now().After(stop) {
			t.Fatalf("the hub did not reach revision %d (at %d)", rev, seen)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func itoa(v int64) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestHubDropsSlowClient(t *testing.T) {
	h := newHub(nil, nil, slog.New(slog.DiscardHandler))
	slow, _, _ := h.join(nil, nil, nil, nil)
	for i := range clientBuffer + 1 {
		h.broadcast(Message{Type: MessageEtcd, Revision: int64(i + 1)})
	}
	select {
	case <-slow.dropped:
	default:
		t.Fatal("a client that read nothing was not dropped")
	}
	if len(slow.send) != clientBuffer {
		t.Errorf("queued %d messages, want the buffer's %d", len(slow.send), clientBuffer)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.clients) != 0 {
		t.Errorf("%d clients left, want 0", len(h.clients))
	}
}
