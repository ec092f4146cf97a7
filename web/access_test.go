package web

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/glassplane/glassplane/web/source"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/glassplane/glassplane/controlplane/storage"
)

// stubReviewer allows the "verb group resource namespace" questions it
// holds, counting the reviews asked.
type stubReviewer struct {
	allow map[string]bool
	err   error

	mu    sync.Mutex // guards asked
	asked int
}

func (s *stubReviewer) review(_ context.Context, _ identity, a authorizationv1.ResourceAttributes) (bool, error) {
	s.mu.Lock()
	s.asked++
	s.mu.Unlock()
	if s.err != nil {
		return false, s.err
	}
	return s.allow[a.Verb+" "+a.Group+" "+a.Resource+" "+a.Namespace], nil
}

func (s *stubReviewer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked
}

func TestAccessCachesDecisions(t *testing.T) {
	ctx := context.Background()
	r := &stubReviewer{allow: map[string]bool{"list  pods team-a": true}}
	a := newAccess(r)
	u := a.forUser(&identity{User: "alice", Groups: []string{"b", "a"}})
	if a.forUser(&identity{User: "alice", Groups: []string{"a", "b"}}) != u {
		t.Error("the same user and groups got another cache")
	}
	for range 3 {
		if !u.allowed(ctx, "list", "", "pods", "team-a") {
			t.Fatal("list pods in team-a was denied")
		}
	}
	if u.allowed(ctx, "list", "", "pods", "team-b") {
		t.Error("list pods in team-b was allowed")
	}
	if got := r.count(); got != 2 {
		t.Errorf("asked %d reviews, want 2 (one per question)", got)
	}
	if a.forUser(nil) != nil {
		t.Error("the dashboard's own identity has a cache")
	}
	var own *userAccess
	if !own.allowed(ctx, "get", EtcdGroup, EtcdResource, "") || !own.mayReadAudit(ctx, "bob") {
		t.Error("the dashboard's own identity was denied a read")
	}
}

func TestAccessFailsClosed(t *testing.T) {
	ctx := context.Background()
	r := &stubReviewer{err: errors.New("connection refused")}
	u := newAccess(r).forUser(&identity{User: "alice"})
	if u.allowed(ctx, "list", "", "pods", "default") {
		t.Error("a failed review allowed the read")
	}
	if u.allowed(ctx, "list", "", "pods", "default"); r.count() != 1 {
		t.Errorf("asked %d reviews, want the failure kept for a moment", r.count())
	}
	if newAccess(noAPIReviewer{}).forUser(&identity{User: "alice"}).mayReadEtcd(ctx) {
		t.Error("a dashboard without an API allowed a logged-in user")
	}
}

func TestAccessIsBounded(t *testing.T) {
	ctx := context.Background()
	u := newAccess(&stubReviewer{}).forUser(&identity{User: "alice"})
	for i := range maxDecisions + 10 {
		u.allowed(ctx, "list", "", "pods", "ns-"+itoa(int64(i)))
	}
	if n := len(u.m); n > maxDecisions {
		t.Errorf("kept %d decisions, want at most %d", n, maxDecisions)
	}
}

func TestMayRead(t *testing.T) {
	ctx := context.Background()
	r := &stubReviewer{allow: map[string]bool{
		"list  pods team-a":             true,
		"watch apps deployments team-a": true,
		"get glassplane.io etcdkeys ":   true,
	}}
	alice := newAccess(r).forUser(&identity{User: "alice"})
	auditor := newAccess(&stubReviewer{allow: map[string]bool{"list audit.k8s.io events ": true}}).forUser(&identity{User: "carol"})
	tests := []struct {
		name   string
		u      *userAccess
		scope  readScope
		wanted bool
	}{
		{"hello", alice, readScope{}, true},
		{"pods in team-a", alice, readScope{kind: scopeObject, resource: "pods", namespace: "team-a"}, true},
		{"pods in team-b", alice, readScope{kind: scopeObject, resource: "pods", namespace: "team-b"}, false},
		{"deployments by watch", alice, readScope{kind: scopeObject, group: "apps", resource: "deployments", namespace: "team-a"}, true},
		{"nodes", alice, readScope{kind: scopeObject, resource: "nodes"}, false},
		{"etcd", alice, readScope{kind: scopeEtcd}, true},
		{"etcd without the permission", auditor, readScope{kind: scopeEtcd}, false},
		{"own request", alice, readScope{kind: scopeAudit, user: "alice"}, true},
		{"another's request", alice, readScope{kind: scopeAudit, user: "bob"}, false},
		{"another's request for an auditor", auditor, readScope{kind: scopeAudit, user: "bob"}, true},
		{"anything for the dashboard", nil, readScope{kind: scopeEtcd}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.u.mayRead(ctx, &tt.scope); got != tt.wanted {
				t.Errorf("mayRead(%+v) = %v, want %v", tt.scope, got, tt.wanted)
			}
		})
	}
}

func TestForbiddenMessage(t *testing.T) {
	tests := []struct {
		verb, group, resource, namespace, name string
		want                                   string
	}{
		{"get", "", "pods", "default", "x", `pods "x" is forbidden: User "u" cannot get resource "pods" in API group "" in the namespace "default"`},
		{"get", "apps", "deployments", "web", "d", `deployments.apps "d" is forbidden: User "u" cannot get resource "deployments" in API group "apps" in the namespace "web"`},
		{"get", EtcdGroup, EtcdResource, "", "", `etcdkeys.glassplane.io is forbidden: User "u" cannot get resource "etcdkeys" in API group "glassplane.io" at the cluster scope`},
	}
	for _, tt := range tests {
		if got := forbiddenMessage("u", tt.verb, tt.group, tt.resource, tt.namespace, tt.name); got != tt.want {
			t.Errorf("forbiddenMessage = %s\nwant %s", got, tt.want)
		}
	}
}

// TestStreamFiltersByReader: a logged-in user's page gets only the
// messages RBAC lets them read; the scopes come from the messages as the
// hub makes them.
func TestStreamFiltersByReader(t *testing.T) {
	r := &stubReviewer{allow: map[string]bool{"list apps deployments team-a": true}}
	cl := &client{send: make(chan outgoing, 16), dropped: make(chan struct{}), viewer: newAccess(r).forUser(&identity{User: "alice"})}
	deployment := func(ns string) source.Event {
		b, _ := json.Marshal(&appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", UID: types.UID("uid-" + ns)},
		})
		return source.Event{Type: source.EventPut, Key: storage.Key("deployments", ns, "web"), Value: b, Revision: 5, Created: true}
	}
	var msgs []Message
	msgs = append(msgs, storageMessages(deployment("team-b"), time.Now())...)
	msgs = append(msgs, storageMessages(deployment("team-a"), time.Now())...)
	for _, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		cl.send <- outgoing{b: b, scope: new(m.scope)}
	}
	frame, b := streamOf(t, cl)()
	if len(frame) != 1 || frame[0].Type != MessageWatch || frame[0].Namespace != "team-a" {
		t.Errorf("the frame holds %s, want only the watch message of team-a's deployment", b)
	}
}

// TestStreamCountsOnlyReadableBackground: a logged-in user's page that has
// background steps counted counts only those RBAC lets that user read (their
// own requests, without a right to list others' audit events), and gets
// none of their content.
func TestStreamCountsOnlyReadableBackground(t *testing.T) {
	h := newHub(nil, nil, slog.New(slog.DiscardHandler))
	cl, _, _ := h.join(map[string]bool{MessageAudit: true}, nil, map[string]bool{partBackground: true},
		newAccess(&stubReviewer{allow: map[string]bool{}}).forUser(&identity{User: "alice"}))
	steps := []struct {
		verb, resource, sub, user string
	}{
		{"update", "leases", "", "system:node:node1"}, // another's background step
		{"patch", "nodes", "status", "alice"},         // alice's own
		{"create", "events", "", "system:node:node1"}, // another's background step
		{"create", "pods", "", "bob"},                 // another's step of the story
	}
	for i, s := range steps {
		h.broadcast(auditRecordMessage(source.AuditRecord{Seq: int64(i + 1),
			Event: auditEvent(s.verb, s.resource, s.sub, "default", "x", s.user, time.Now(), nil)}))
	}
	h.broadcast(Message{Type: MessageResync, Reason: "end of the test's steps"})
	next := streamOf(t, cl)
	counted, seq := 0, int64(0)
	for done := false; !done; {
		frame, b := next()
		for _, m := range frame {
			switch m.Type {
			case MessageBackground:
				counted += m.Count
				seq = max(seq, m.Seq)
			case MessageResync:
				done = true
			default:
				t.Errorf("alice's page got %s, want only her background step counted", b)
			}
		}
	}
	if counted != 1 || seq != 2 {
		t.Errorf("alice's page counted %d background steps up to seq %d, want only her own (1, seq 2)", counted, seq)
	}
}
