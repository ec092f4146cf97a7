package rbac

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/apiserver/auth"
)

func TestRuleAllows(t *testing.T) {
	podsRead := rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	tests := []struct {
		name  string
		rule  rbacv1.PolicyRule
		attrs auth.Attributes
		want  bool
	}{
		{"verb and resource", podsRead, auth.Attributes{Verb: "get", ResourceRequest: true, Resource: "pods"}, true},
		{"other verb", podsRead, auth.Attributes{Verb: "delete", ResourceRequest: true, Resource: "pods"}, false},
		{"other group", podsRead, auth.Attributes{Verb: "get", ResourceRequest: true, APIGroup: "apps", Resource: "pods"}, false},
		{"subresource needs its own entry", podsRead, auth.Attributes{Verb: "get", ResourceRequest: true, Resource: "pods", Subresource: "log"}, false},
		{"subresource entry", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/log"}},
			auth.Attributes{Verb: "get", ResourceRequest: true, Resource: "pods", Subresource: "log"}, true},
		{"*/subresource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"*"}, Resources: []string{"*/scale"}},
			auth.Attributes{Verb: "get", ResourceRequest: true, APIGroup: "apps", Resource: "deployments", Subresource: "scale"}, true},
		{"*/subresource not the main resource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"*"}, Resources: []string{"*/scale"}},
			auth.Attributes{Verb: "get", ResourceRequest: true, APIGroup: "apps", Resource: "deployments"}, false},
		{"wildcards", rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
			auth.Attributes{Verb: "escalate", ResourceRequest: true, APIGroup: "rbac.authorization.k8s.io", Resource: "roles"}, true},
		{"resource name", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"a"}},
			auth.Attributes{Verb: "get", ResourceRequest: true, Resource: "configmaps", Name: "a"}, true},
		{"other resource name", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"a"}},
			auth.Attributes{Verb: "get", ResourceRequest: true, Resource: "configmaps", Name: "b"}, false},
		{"resource names never allow list", rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"a"}},
			auth.Attributes{Verb: "list", ResourceRequest: true, Resource: "configmaps"}, false},
		{"non-resource URL", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}, auth.Attributes{Verb: "get", Path: "/healthz"}, true},
		{"non-resource prefix", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/apis/*"}}, auth.Attributes{Verb: "get", Path: "/apis/apps/v1"}, true},
		{"non-resource other path", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}, auth.Attributes{Verb: "get", Path: "/metrics"}, false},
		{"resource rule never allows a path", podsRead, auth.Attributes{Verb: "get", Path: "/api"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := RuleAllows(tc.attrs, &tc.rule); got != tc.want {
				t.Errorf("RuleAllows = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCovers(t *testing.T) {
	owner := []rbacv1.PolicyRule{
		{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods", "pods/*"}},
		{Verbs: []string{"*"}, APIGroups: []string{"apps"}, Resources: []string{"deployments"}},
		{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"a"}},
		{Verbs: []string{"get"}, NonResourceURLs: []string{"/apis/*"}},
	}
	tests := []struct {
		name        string
		servant     rbacv1.PolicyRule
		wantCovered bool
	}{
		{"subset", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}, true},
		{"subresource through res/*", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/log"}}, true},
		{"verb wildcard", rbacv1.PolicyRule{Verbs: []string{"delete", "patch"}, APIGroups: []string{"apps"}, Resources: []string{"deployments"}}, true},
		{"named secret", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"a"}}, true},
		{"every secret", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}, false},
		{"more verbs", rbacv1.PolicyRule{Verbs: []string{"get", "delete"}, APIGroups: []string{""}, Resources: []string{"pods"}}, false},
		{"URL under a prefix", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/apis/apps"}}, true},
		{"URL outside", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			covered, missing := Covers(owner, []rbacv1.PolicyRule{tc.servant})
			if covered != tc.wantCovered || covered != (len(missing) == 0) {
				t.Errorf("Covers = %v, missing %v", covered, missing)
			}
		})
	}
}

func TestCompactString(t *testing.T) {
	missing := []rbacv1.PolicyRule{
		{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"nodes"}},
		{Verbs: []string{"delete"}, APIGroups: []string{""}, Resources: []string{"nodes"}},
	}
	got := CompactRules(missing)
	if len(got) != 1 || CompactString(got[0]) != `{APIGroups:[""], Resources:["nodes"], Verbs:["get" "delete"]}` {
		t.Errorf("compacted %v", got)
	}
}

// bootstrapCache holds the bootstrap policy plus extra objects.
func bootstrapCache(extra ...any) *Cache {
	c := NewCache()
	for _, r := range ClusterRoles() {
		c.Put(r)
	}
	for _, b := range ClusterRoleBindings() {
		c.Put(b)
	}
	for _, o := range extra {
		switch o := o.(type) {
		case *rbacv1.RoleBinding:
			c.Put(o)
		case *rbacv1.Role:
			c.Put(o)
		}
	}
	c.MarkReady()
	return c
}

func TestBootstrapPolicy(t *testing.T) {
	aliceView := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-view", Namespace: "team"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "alice"}},
	}
	a := New(bootstrapCache(aliceView))
	authenticated := []string{auth.GroupAuthenticated}
	res := func(user string, groups []string, verb, group, resource, sub, ns, name string) auth.Attributes {
		return auth.Attributes{User: &auth.User{Name: user, Groups: groups}, Verb: verb, ResourceRequest: true, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}
	}
	tests := []struct {
		name       string
		attrs      auth.Attributes
		want       bool
		wantReason string
	}{
		{"masters through cluster-admin", res("admin", []string{"system:masters"}, "delete", "", "nodes", "", "", "n1"), true,
			`RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" to Group "system:masters"`},
		{"view in its namespace", res("alice", authenticated, "list", "", "pods", "", "team", ""), true,
			`RBAC: allowed by RoleBinding "alice-view/team" of ClusterRole "view" to User "alice"`},
		{"view reads logs", res("alice", authenticated, "get", "", "pods", "log", "team", "p"), true, ""},
		{"view does not delete", res("alice", authenticated, "delete", "", "pods", "", "team", "p"), false, ""},
		{"view does not read secrets", res("alice", authenticated, "get", "", "secrets", "", "team", "s"), false, ""},
		{"view is namespaced", res("alice", authenticated, "list", "", "pods", "", "default", ""), false, ""},
		{"basic-user self reviews", res("alice", authenticated, "create", "authorization.k8s.io", "selfsubjectaccessreviews", "", "", ""), true,
			`RBAC: allowed by ClusterRoleBinding "system:basic-user" of ClusterRole "system:basic-user" to Group "system:authenticated"`},
		{"whoami", res("alice", authenticated, "create", "authentication.k8s.io", "selfsubjectreviews", "", "", ""), true, ""},
		{"scheduler binds", res(UserKubeScheduler, authenticated, "create", "", "pods", "binding", "default", "p"), true, ""},
		{"scheduler writes pod status", res(UserKubeScheduler, authenticated, "patch", "", "pods", "status", "default", "p"), true, ""},
		{"scheduler lists nodes", res(UserKubeScheduler, authenticated, "watch", "", "nodes", "", "", ""), true, ""},
		{"scheduler creates events", res(UserKubeScheduler, authenticated, "create", "events.k8s.io", "events", "", "default", ""), true, ""},
		{"scheduler does not delete nodes", res(UserKubeScheduler, authenticated, "delete", "", "nodes", "", "", "n1"), false, ""},
		{"controller manager creates replica sets", res(UserKubeControllerManager, authenticated, "create", "apps", "replicasets", "", "default", ""), true, ""},
		{"controller manager creates pods", res(UserKubeControllerManager, authenticated, "create", "", "pods", "", "default", ""), true, ""},
		{"controller manager updates deployment status", res(UserKubeControllerManager, authenticated, "update", "apps", "deployments", "status", "default", "d"), true, ""},
		{"controller manager finalizes namespaces", res(UserKubeControllerManager, authenticated, "update", "", "namespaces", "finalize", "", "ns"), true, ""},
		{"controller manager garbage-collects anything", res(UserKubeControllerManager, authenticated, "delete", "batch", "jobs", "", "default", "j"), true, ""},
		{"controller manager writes endpoint slices", res(UserKubeControllerManager, authenticated, "create", "discovery.k8s.io", "endpointslices", "", "default", ""), true, ""},
		{"controller manager updates node status", res(UserKubeControllerManager, authenticated, "patch", "", "nodes", "status", "", "n1"), true, ""},
		{"controller manager creates service accounts", res(UserKubeControllerManager, authenticated, "create", "", "serviceaccounts", "", "default", ""), true, ""},
		{"controller manager does not escalate", res(UserKubeControllerManager, authenticated, "escalate", "rbac.authorization.k8s.io", "clusterroles", "", "", "x"), false, ""},
		{"dashboard reads everything", res(UserDashboard, authenticated, "list", "", "secrets", "", "", ""), true,
			`RBAC: allowed by ClusterRoleBinding "system:glassplane-dashboard" of ClusterRole "system:glassplane-dashboard" to User "system:glassplane-dashboard"`},
		{"dashboard does not write as itself", res(UserDashboard, authenticated, "patch", "apps", "deployments", "", "default", "d"), false, ""},
		{"dashboard does not create roles", res(UserDashboard, authenticated, "create", "rbac.authorization.k8s.io", "clusterroles", "", "", ""), false, ""},
		{"dashboard does not delete", res(UserDashboard, authenticated, "delete", "", "pods", "", "default", "p"), false, ""},
		{"dashboard asks what users may read", res(UserDashboard, authenticated, "create", "authorization.k8s.io", "subjectaccessreviews", "", "", ""), true, ""},
		{"dashboard impersonates logged-in users", res(UserDashboard, authenticated, "impersonate", "", "users", "", "", "alice"), true, ""},
		{"dashboard does not bind", res(UserDashboard, authenticated, "bind", "rbac.authorization.k8s.io", "clusterroles", "", "", "cluster-admin"), false, ""},
		{"nodes are left to the Node authorizer", res("system:node:n1", []string{"system:nodes", auth.GroupAuthenticated}, "get", "", "pods", "", "default", "p"), false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, reason, err := a.Authorize(context.Background(), tc.attrs)
			if err != nil {
				t.Fatal(err)
			}
			if (d == auth.DecisionAllow) != tc.want {
				t.Fatalf("decision %v (%q), want allowed=%v", d, reason, tc.want)
			}
			if tc.wantReason != "" && reason != tc.wantReason {
				t.Errorf("reason %q, want %q", reason, tc.wantReason)
			}
		})
	}
	t.Run("discovery for everyone authenticated", func(t *testing.T) {
		d, _, _ := a.Authorize(context.Background(), auth.Attributes{User: &auth.User{Name: "x", Groups: authenticated}, Verb: "get", Path: "/apis/apps/v1"})
		if d != auth.DecisionAllow {
			t.Error("discovery denied")
		}
	})
	t.Run("a binding to a missing role explains itself", func(t *testing.T) {
		c := bootstrapCache(&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "dangling", Namespace: "team"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "gone"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "bob"}},
		})
		_, reason, _ := New(c).Authorize(context.Background(), res("bob", authenticated, "get", "", "pods", "", "team", "p"))
		if reason != `RBAC: role.rbac.authorization.k8s.io "gone" not found` {
			t.Errorf("reason %q", reason)
		}
	})
}

func TestBootstrapPolicyIsConsistent(t *testing.T) {
	roles := map[string]bool{}
	for _, r := range ClusterRoles() {
		if roles[r.Name] {
			t.Errorf("cluster role %q twice", r.Name)
		}
		roles[r.Name] = true
		if r.Annotations[AnnotationAutoupdate] != "true" {
			t.Errorf("cluster role %q is not auto-updated", r.Name)
		}
	}
	for _, want := range []string{"cluster-admin", "admin", "edit", "view", "system:basic-user", "system:discovery", "system:public-info-viewer",
		"system:kube-scheduler", "system:kube-controller-manager", "system:node", "system:controller:deployment-controller",
		"system:controller:replicaset-controller", "system:controller:generic-garbage-collector", "system:controller:namespace-controller",
		"system:controller:node-controller", "system:controller:endpoint-controller", "system:controller:endpointslice-controller",
		"system:controller:endpointslicemirroring-controller", "system:controller:service-account-controller", "system:controller:job-controller", "system:controller:daemon-set-controller",
		"system:controller:cronjob-controller", "system:controller:replication-controller"} {
		if !roles[want] {
			t.Errorf("missing cluster role %q", want)
		}
	}
	for _, b := range ClusterRoleBindings() {
		if !roles[b.RoleRef.Name] {
			t.Errorf("binding %q refers to a missing role %q", b.Name, b.RoleRef.Name)
		}
		if strings.HasPrefix(b.Name, ControllerRolePrefix) && !slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool { return s.Name == UserKubeControllerManager }) {
			t.Errorf("controller binding %q does not include the controller manager", b.Name)
		}
	}
	// view ⊂ edit ⊂ admin, as Kubernetes' aggregation makes them.
	byName := map[string][]rbacv1.PolicyRule{}
	for _, r := range ClusterRoles() {
		byName[r.Name] = r.Rules
	}
	for _, pair := range [][2]string{{"edit", "view"}, {"admin", "edit"}, {"cluster-admin", "admin"}} {
		if ok, missing := Covers(byName[pair[0]], byName[pair[1]]); !ok {
			t.Errorf("%s does not cover %s: %v", pair[0], pair[1], missing)
		}
	}
}

// BenchmarkAuthorize measures one RBAC decision over the bootstrap policy
// plus a namespace with 50 role bindings, for a user allowed by the last.
func BenchmarkAuthorize(b *testing.B) {
	var extra []any
	for i := range 50 {
		extra = append(extra, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("b%02d", i), Namespace: "team"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: fmt.Sprintf("user-%02d", i)}},
		})
	}
	a := New(bootstrapCache(extra...))
	attrs := auth.Attributes{
		User: &auth.User{Name: "user-49", Groups: []string{auth.GroupAuthenticated}}, Verb: "create",
		ResourceRequest: true, APIGroup: "apps", Resource: "deployments", Namespace: "team",
	}
	b.ReportAllocs()
	for b.Loop() {
		if d, _, _ := a.Authorize(context.Background(), attrs); d != auth.DecisionAllow {
			b.Fatal("denied")
		}
	}
}
