package kube

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// testResources is a discovery as an API server with a CRD answers it.
var testResources = []*metav1.APIResourceList{
	{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: []string{"get", "list", "watch"}},
		{Name: "pods/status", Kind: "Pod", Namespaced: true, Verbs: []string{"get", "list", "watch"}},
		{Name: "nodes", Kind: "Node", Verbs: []string{"get", "list", "watch"}},
		{Name: "services", Kind: "Service", Namespaced: true, Verbs: []string{"get", "list", "watch"}},
		{Name: "endpoints", Kind: "Endpoints", Namespaced: true, Verbs: []string{"get", "list", "watch"}},
		{Name: "events", Kind: "Event", Namespaced: true, Verbs: []string{"get", "list", "watch"}},
		{Name: "bindings", Kind: "Binding", Namespaced: true, Verbs: []string{"create"}},
	}},
	{GroupVersion: "events.k8s.io/v1", APIResources: []metav1.APIResource{
		{Name: "events", Kind: "Event", Namespaced: true, Verbs: []string{"get", "list", "watch"}},
	}},
	{GroupVersion: "networking.k8s.io/v1", APIResources: []metav1.APIResource{
		{Name: "ingresses", Kind: "Ingress", Namespaced: true, Verbs: []string{"get", "list", "watch"}},
	}},
	{GroupVersion: "authorization.k8s.io/v1", APIResources: []metav1.APIResource{
		{Name: "subjectaccessreviews", Kind: "SubjectAccessReview", Verbs: []string{"create"}},
	}},
	{GroupVersion: "glassplane.io/v1alpha1", APIResources: []metav1.APIResource{
		{Name: "etcdkeys", Kind: "EtcdKey", Verbs: []string{"get", "list", "watch"}},
		{Name: "auditevents", Kind: "AuditEvent", Verbs: []string{"list", "watch"}},
		{Name: "schedulingdecisions", Kind: "SchedulingDecision", Namespaced: true, Verbs: []string{"get", "list", "watch"}},
	}},
	{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
		{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: []string{"get", "list", "watch"}},
	}},
	{GroupVersion: "metrics.k8s.io/v1beta1", APIResources: []metav1.APIResource{
		{Name: "pods", Kind: "PodMetrics", Namespaced: true, Verbs: []string{"get", "list"}},
	}},
	{GroupVersion: "aggregated.example.org/v1", APIResources: []metav1.APIResource{
		{Name: "things", Kind: "Thing", Verbs: []string{"get", "list", "watch"}},
	}},
}

func testMap() *resourceMap {
	custom := func(gr schema.GroupResource) bool { return gr.Group == "example.com" }
	aggregated := map[schema.GroupVersion]bool{{Group: "aggregated.example.org", Version: "v1"}: true}
	return newResourceMap(testResources, custom, aggregated)
}

func TestResourceMap(t *testing.T) {
	m := testMap()
	var got []string
	for _, res := range m.list {
		got = append(got, res.GVR.String()+" -> "+res.Storage)
	}
	want := []string{
		"/v1, Resource=events -> events",
		"example.com/v1, Resource=widgets -> example.com/widgets",
		"glassplane.io/v1alpha1, Resource=schedulingdecisions -> glassplane.io/schedulingdecisions",
		"networking.k8s.io/v1, Resource=ingresses -> ingress",
		"/v1, Resource=nodes -> minions",
		"/v1, Resource=pods -> pods",
		"/v1, Resource=endpoints -> services/endpoints",
		"/v1, Resource=services -> services/specs",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mapped resources (-want +got):\n%s", diff)
	}
}

func TestParseKey(t *testing.T) {
	m := testMap()
	for _, tc := range []struct {
		key, resource, namespace, name string
		ok                             bool
	}{
		{key: "/registry/pods/default/web", resource: "pods", namespace: "default", name: "web", ok: true},
		{key: "/registry/minions/node-1", resource: "nodes", name: "node-1", ok: true},
		{key: "/registry/services/specs/default/kubernetes", resource: "services", namespace: "default", name: "kubernetes", ok: true},
		{key: "/registry/services/endpoints/default/kubernetes", resource: "endpoints", namespace: "default", name: "kubernetes", ok: true},
		{key: "/registry/example.com/widgets/ns/w1", resource: "widgets", namespace: "ns", name: "w1", ok: true},
		{key: "/registry/ingress/ns/i", resource: "ingresses", namespace: "ns", name: "i", ok: true},
		{key: "/registry/pods/default", ok: false},
		{key: "/registry/pods/default/web/extra", ok: false},
		{key: "/registry/minions/a/b", ok: false},
		{key: "/registry/ranges/serviceips", ok: false},
		{key: "/other/pods/default/web", ok: false},
	} {
		t.Run(tc.key, func(t *testing.T) {
			res, ns, name, ok := m.parseKey(tc.key)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if res.GVR.Resource != tc.resource || ns != tc.namespace || name != tc.name {
				t.Errorf("got %s %q %q, want %s %q %q", res.GVR.Resource, ns, name, tc.resource, tc.namespace, tc.name)
			}
			if back := res.key(ns, name); back != tc.key {
				t.Errorf("key(%q, %q) = %q, want %q", ns, name, back, tc.key)
			}
		})
	}
}

func TestUnder(t *testing.T) {
	m := testMap()
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{prefix: "/registry/", want: []string{"events", "example.com/widgets", "glassplane.io/schedulingdecisions", "ingress", "minions", "pods", "services/endpoints", "services/specs"}},
		{prefix: "/registry/pods/", want: []string{"pods"}},
		{prefix: "/registry/pods/default/", want: []string{"pods@default"}},
		{prefix: "/registry/pods/default/we", want: []string{"pods@default"}},
		{prefix: "/registry/pods/def", want: []string{"pods"}},
		{prefix: "/registry/services/", want: []string{"services/endpoints", "services/specs"}},
		{prefix: "/registry/minions/node-", want: []string{"minions"}},
		{prefix: "/registry/example.com/", want: []string{"example.com/widgets"}},
		{prefix: "/registry/ranges/", want: nil},
	} {
		t.Run(tc.prefix, func(t *testing.T) {
			var got []string
			for _, tg := range m.under(tc.prefix) {
				s := tg.res.Storage
				if tg.namespace != "" {
					s += "@" + tg.namespace
				}
				got = append(got, s)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("under(%q) (-want +got):\n%s", tc.prefix, diff)
			}
		})
	}
}

func TestGuessCustom(t *testing.T) {
	for gr, want := range map[schema.GroupResource]bool{
		{Resource: "pods"}:                                    false,
		{Group: "apps", Resource: "deployments"}:              false,
		{Group: "networking.k8s.io", Resource: "ingresses"}:   false,
		{Group: "glassplane.io", Resource: "somethings"}:      true,
		{Group: "example.com", Resource: "widgets"}:           true,
		{Group: "cert-manager.io", Resource: "certificates"}:  true,
		{Group: "gateway.networking.k8s.io", Resource: "gws"}: false,
	} {
		if got := guessCustom(gr); got != want {
			t.Errorf("guessCustom(%s) = %v, want %v", gr, got, want)
		}
	}
}
