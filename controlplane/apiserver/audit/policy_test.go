package audit

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

const testPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  users: ["system:kube-scheduler"]
  verbs: ["watch", "list"]
- level: None
  nonResourceURLs: ["/healthz*", "/version"]
- level: Metadata
  resources:
  - group: ""
    resources: ["secrets", "configmaps"]
- level: RequestResponse
  userGroups: ["auditors"]
  namespaces: ["prod"]
- level: Request
  resources:
  - group: ""
    resources: ["pods/*"]
  - group: "apps"
    resources: ["*/scale"]
  - group: ""
    resources: ["services"]
    resourceNames: ["frontend"]
- level: Metadata
  omitStages: ["ResponseStarted"]
`

func event(user string, groups []string, verb, uri string, ref *ObjectReference) *Event {
	ev := NewEvent()
	ev.User = UserInfo{Username: user, Groups: groups}
	ev.Verb, ev.RequestURI, ev.ObjectRef = verb, uri, ref
	ev.Stage = StageResponseComplete
	ev.RequestObject = &runtime.Unknown{Raw: []byte(`{}`)}
	ev.ResponseObject = &runtime.Unknown{Raw: []byte(`{}`)}
	return ev
}

func TestPolicyLevels(t *testing.T) {
	p, err := ParsePolicy([]byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	pods := func(ns, sub string) *ObjectReference {
		return &ObjectReference{Resource: "pods", Namespace: ns, Subresource: sub, APIVersion: "v1"}
	}
	tests := []struct {
		name      string
		ev        *Event
		wantLevel Level
		// wantKept is false when the event is dropped.
		wantKept bool
	}{
		{"scheduler watch dropped", event("system:kube-scheduler", nil, "watch", "/api/v1/pods?watch=1", pods("", "")), LevelNone, false},
		{"scheduler create kept", event("system:kube-scheduler", nil, "create", "/api/v1/namespaces/a/pods/p/binding", pods("a", "binding")), LevelRequest, true},
		{"healthz prefix", event("alice", nil, "get", "/healthz/etcd", nil), LevelNone, false},
		{"version exact", event("alice", nil, "get", "/version?timeout=32s", nil), LevelNone, false},
		{"secrets at metadata", event("alice", nil, "create", "/api/v1/namespaces/a/secrets", &ObjectReference{Resource: "secrets", Namespace: "a"}), LevelMetadata, true},
		{"auditors in prod", event("bob", []string{"auditors"}, "get", "/api/v1/namespaces/prod/pods/p", pods("prod", "")), LevelRequestResponse, true},
		{"auditors elsewhere", event("bob", []string{"auditors"}, "get", "/api/v1/namespaces/dev/configmaps/c", &ObjectReference{Resource: "configmaps", Namespace: "dev"}), LevelMetadata, true},
		{"pods/* matches a subresource", event("alice", nil, "update", "/api/v1/namespaces/a/pods/p/status", pods("a", "status")), LevelRequest, true},
		{"pods/* matches pods too, as in Kubernetes", event("alice", nil, "update", "/api/v1/namespaces/a/pods/p", pods("a", "")), LevelRequest, true},
		{"no resource rule matches", event("alice", nil, "get", "/api/v1/nodes/n", &ObjectReference{Resource: "nodes"}), LevelMetadata, true},
		{"*/scale in apps", event("alice", nil, "patch", "/apis/apps/v1/namespaces/a/deployments/d/scale", &ObjectReference{Resource: "deployments", Subresource: "scale", APIGroup: "apps", Namespace: "a"}), LevelRequest, true},
		{"resourceNames match", event("alice", nil, "get", "/api/v1/namespaces/a/services/frontend", &ObjectReference{Resource: "services", Name: "frontend", Namespace: "a"}), LevelRequest, true},
		{"resourceNames miss", event("alice", nil, "get", "/api/v1/namespaces/a/services/backend", &ObjectReference{Resource: "services", Name: "backend", Namespace: "a"}), LevelMetadata, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kept := p.Apply(tc.ev)
			if kept != tc.wantKept {
				t.Fatalf("kept = %v, want %v", kept, tc.wantKept)
			}
			if !kept {
				return
			}
			if tc.ev.Level != tc.wantLevel {
				t.Errorf("level %s, want %s", tc.ev.Level, tc.wantLevel)
			}
			if (tc.ev.RequestObject != nil) != (tc.wantLevel == LevelRequest || tc.wantLevel == LevelRequestResponse) {
				t.Errorf("request object kept = %v at %s", tc.ev.RequestObject != nil, tc.wantLevel)
			}
			if (tc.ev.ResponseObject != nil) != (tc.wantLevel == LevelRequestResponse) {
				t.Errorf("response object kept = %v at %s", tc.ev.ResponseObject != nil, tc.wantLevel)
			}
		})
	}
	t.Run("omitted stages", func(t *testing.T) {
		ev := event("alice", nil, "watch", "/api/v1/nodes?watch=1", &ObjectReference{Resource: "nodes"})
		ev.Stage = StageResponseStarted
		if p.Apply(ev) {
			t.Error("recorded a stage the rule omits")
		}
		ev.Stage = StageRequestReceived
		if p.Apply(ev) {
			t.Error("recorded a stage the policy omits")
		}
	})
	t.Run("no rule matches", func(t *testing.T) {
		p, err := ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Request\n  users: [carol]\n"))
		if err != nil {
			t.Fatal(err)
		}
		if p.Apply(event("alice", nil, "get", "/api", nil)) {
			t.Error("recorded a request no rule matches")
		}
	})
}

func TestParsePolicyRefuses(t *testing.T) {
	tests := map[string]string{
		"wrong kind":         "apiVersion: audit.k8s.io/v1\nkind: Pod\nrules:\n- level: None\n",
		"wrong version":      "apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules:\n- level: None\n",
		"no rules":           "apiVersion: audit.k8s.io/v1\nkind: Policy\n",
		"bad level":          "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Everything\n",
		"unknown field":      "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  userz: [a]\n",
		"bad stage":          "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [Later]\nrules:\n- level: None\n",
		"resources and urls": "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: [/x]\n  resources: [{group: \"\"}]\n",
		"not yaml":           "{{{",
	}
	for name, doc := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := ParsePolicy([]byte(doc)); err == nil {
				t.Error("accepted a bad policy")
			}
		})
	}
}

func TestRingWithPolicy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(testPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := LoadPolicy(path)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRing(0)
	r.SetPolicy(p)
	r.Add(event("alice", nil, "get", "/healthz", nil))
	r.Add(event("alice", nil, "get", "/api/v1/namespaces/a/secrets/s", &ObjectReference{Resource: "secrets", Namespace: "a"}))
	got := r.Since(0)
	if len(got) != 1 || got[0].Event.Level != LevelMetadata || got[0].Event.RequestObject != nil {
		t.Fatalf("ring holds %+v", got)
	}
	if !r.WantsResponse(event("bob", []string{"auditors"}, "get", "/api/v1/namespaces/prod/pods/p", &ObjectReference{Resource: "pods", Namespace: "prod"})) {
		t.Error("WantsResponse false at RequestResponse")
	}
	if _, err := LoadPolicy(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("loaded a missing file")
	}
}
