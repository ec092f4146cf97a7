package web

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	corev1 "k8s.io/api/core/v1"

	"github.com/glassplane/glassplane/controlplane/apiserver/audit"
)

// dial opens the dashboard's websocket as a page of the dashboard would.
func (e *env) dial(t *testing.T, query string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, deadline)
	defer cancel()
	url := "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/ws" + query
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {e.srv.URL}}})
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	return conn
}

// next reads messages until match accepts one, and returns it.
func next(t *testing.T, conn *websocket.Conn, match func(Message) bool) Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		var m Message
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		if match(m) {
			return m
		}
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
			map[string]string{audit.AnnotationStages: "authentication,authorization,admission,etcd", audit.AnnotationEtcdRevision: "77"}))
		m = next(t, conn, isType(MessageAudit))
		if m.Action != "create pods/binding" || m.Component != "system:kube-scheduler" || m.Revision != 77 || len(m.Stages) != 4 || m.Stages[3].State != "ok" {
			t.Errorf("audit message = %+v", m)
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
		conn.Close(websocket.StatusNormalClosure, "")
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

	t.Run("bad query", func(t *testing.T) {
		resp, err := http.Get(e.srv.URL + "/ws?since=abc")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("status = %d, want 400", resp.StatusCode)
		}
	})
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
	slow, _, _ := h.join()
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
