package web

import (
	"strings"
	"testing"
	"time"

	"github.com/glassplane/glassplane/api/v1alpha1"
	authnv1 "k8s.io/api/authentication/v1"

	corev1 "k8s.io/api/core/v1"
)

func TestBackgroundOf(t *testing.T) {
	tests := []struct {
		name                         string
		verb, resource, sub, ns, obj string
		user                         string
		want                         string
	}{
		{"the dashboard's own review", "create", "subjectaccessreviews", "", "", "", dashboardUser, backgroundCheck},
		{"the dashboard's own read", "list", "pods", "", "default", "", dashboardUser, backgroundCheck},
		{"a user's permission check the dashboard asks", "create", "selfsubjectaccessreviews", "", "", "", "glassplane-admin", backgroundCheck},
		{"a session's identity check", "create", "selfsubjectreviews", "", "", "", "glassplane-admin", backgroundCheck},
		{"a node's lease renewal", "update", "leases", "", "kube-node-lease", "n1", "system:node:n1", backgroundLease},
		{"leader election", "update", "leases", "", "kube-system", "kube-scheduler", "system:kube-scheduler", backgroundLease},
		{"a node's status heartbeat", "patch", "nodes", "status", "", "n1", "system:node:n1", backgroundHeartbeat},
		{"an Event written", "create", "events", "", "default", "mypod.1", "system:node:n1", backgroundEventWrite},
		{"a person's create", "create", "pods", "", "default", "mypod", "glassplane-admin", ""},
		{"the scheduler's binding", "create", "pods", "binding", "default", "mypod", "system:kube-scheduler", ""},
		{"a pod's status from its node", "patch", "pods", "status", "default", "mypod", "system:node:n1", ""},
		{"a controller's create", "create", "pods", "", "default", "web-abc", "system:kube-controller-manager", ""},
		{"a node registering", "create", "nodes", "", "", "n1", "system:node:n1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := auditEvent(tt.verb, tt.resource, tt.sub, tt.ns, tt.obj, tt.user, time.Now(), nil)
			if got := backgroundOf(ev); got != tt.want {
				t.Errorf("backgroundOf = %q, want %q", got, tt.want)
			}
		})
	}
	// `glassplane dashboard` reads as whoever its kubeconfig names; its
	// User-Agent tells its own reads from a person's with that kubeconfig.
	own := auditEvent("get", "configmaps", "", "kube-system", "glassplane-tempo", "kubernetes-admin", time.Now(), nil)
	own.UserAgent = UserAgent
	person := auditEvent("create", "pods", "", "default", "mypod", "kubernetes-admin", time.Now(), nil)
	person.UserAgent = "kubectl/v1.32.0 (linux/amd64) kubernetes/abcdef"
	if got, want := backgroundOf(own), backgroundCheck; got != want {
		t.Errorf("backgroundOf(the dashboard's read as kubernetes-admin) = %q, want %q", got, want)
	}
	if got := backgroundOf(person); got != "" {
		t.Errorf("backgroundOf(kubectl's create as kubernetes-admin) = %q, want a step of the story", got)
	}
	// The dashboard's apply for a logged-in user is that user's step.
	applied := auditEvent("create", "pods", "", "default", "mypod", dashboardUser, time.Now(), nil)
	applied.ImpersonatedUser = &authnv1.UserInfo{Username: "glassplane-admin"}
	if got := backgroundOf(applied); got != "" {
		t.Errorf("backgroundOf(an apply impersonating glassplane-admin) = %q, want a step of the story", got)
	}
	lease := &corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Lease", Name: "kube-scheduler"}}
	pod := &corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "mypod"}}
	if eventBackground(lease) != backgroundLease || eventBackground(pod) != "" {
		t.Errorf("eventBackground: lease %q, pod %q", eventBackground(lease), eventBackground(pod))
	}
}

// TestOverviewFoldsBackground: a person's apply stays at the top of the
// overview's feed however many lease renewals, heartbeats and the
// dashboard's checks came after it; they are counted on one quiet line,
// and listed with ?background=1.
func TestOverviewFoldsBackground(t *testing.T) {
	e := newEnv(t)
	t0 := time.Now().Add(-time.Minute)
	e.ring.Add(auditEvent("create", "pods", "", "default", "mypod", "glassplane-admin", t0, map[string]string{
		v1alpha1.AnnotationStages: "authentication,authorization,admission,etcd",
	}))
	for i := range 60 {
		at := t0.Add(time.Duration(i+1) * time.Second)
		switch i % 3 {
		case 0:
			e.ring.Add(auditEvent("update", "leases", "", "kube-node-lease", "n1", "system:node:n1", at, nil))
		case 1:
			e.ring.Add(auditEvent("patch", "nodes", "status", "", "n1", "system:node:n1", at, nil))
		case 2:
			e.ring.Add(auditEvent("create", "selfsubjectaccessreviews", "", "", "", "glassplane-admin", at, nil))
		}
	}
	doc, _ := e.get(t, "/")
	items := byTestID(doc, "feed-item")
	if len(items) != 1 || !strings.Contains(text(items[0]), "pods/default/mypod") {
		var got []string
		for _, it := range items {
			got = append(got, text(it))
		}
		t.Fatalf("feed = %q, want only the create of mypod", got)
	}
	line := byTestID(doc, "feed-background")
	if len(line) != 1 || attr(line[0], "data-count") != "60" || !strings.Contains(text(line[0]), "60 background steps") {
		t.Errorf("quiet line = %v", line)
	}
	doc, _ = e.get(t, "/?background=1")
	if n := len(byTestID(doc, "feed-item")); n != feedLength {
		t.Errorf("with ?background=1 the feed lists %d steps, want %d", n, feedLength)
	}
}

// TestActorOfImpersonation: the dashboard's write for a logged-in user is
// shown as, and readable by, that user with that user's groups.
func TestActorOfImpersonation(t *testing.T) {
	ev := auditEvent("create", "pods", "", "default", "mypod", dashboardUser, time.Now(), nil)
	if got := actorOf(ev); got != dashboardUser {
		t.Errorf("actorOf(the dashboard's own request) = %q", got)
	}
	ev.ImpersonatedUser = &authnv1.UserInfo{Username: "alice", Groups: []string{"team-a"}}
	if got := actorOf(ev); got != "alice" {
		t.Errorf("actorOf(a request impersonating alice) = %q, want alice", got)
	}
	if got := requestInfo(ev).Groups; len(got) != 1 || got[0] != "team-a" {
		t.Errorf("requestInfo groups = %v, want alice's", got)
	}
}
