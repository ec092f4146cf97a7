package web

import (
	"testing"
	"time"

	"github.com/glassplane/glassplane/web/source"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// widgetCRD is a namespaced CRD of example.com whose names are accepted.
func widgetCRD(group, plural, kind string, accepted bool) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: kind, Kind: kind},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1beta1", Served: true}, {Name: "v1", Served: true, Storage: true}},
		},
	}
	if accepted {
		crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue}}
	}
	return crd
}

func TestBuildKinds(t *testing.T) {
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Kind: "Pod", Namespaced: true}, {Name: "pods/status", Kind: "Pod", Namespaced: true},
			{Name: "nodes", Kind: "Node"},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment", Namespaced: true}}},
		{GroupVersion: "apiextensions.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "customresourcedefinitions", Kind: "CustomResourceDefinition"}}},
		{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{{Name: "widgets", Kind: "Widget", Namespaced: true}}},
		// A CRD whose kind and plural collide with a built-in.
		{GroupVersion: "shadow.example.com/v1", APIResources: []metav1.APIResource{{Name: "pods", Kind: "Pod", Namespaced: true}}},
		{GroupVersion: "bad/group/version", APIResources: []metav1.APIResource{{Name: "things", Kind: "Thing"}}},
		// Glassplane's own group is stored under its name.
		{GroupVersion: "glassplane.io/v1alpha1", APIResources: []metav1.APIResource{{Name: "schedulingdecisions", Kind: "SchedulingDecision", Namespaced: true}}},
	}
	crds := []*apiextensionsv1.CustomResourceDefinition{
		widgetCRD("example.com", "widgets", "Widget", true),
		widgetCRD("shadow.example.com", "pods", "Pod", true),
		// Accepted, not in discovery yet: known from its spec.
		widgetCRD("later.example.com", "gadgets", "Gadget", true),
		// Not accepted (a names conflict): not served, not known.
		widgetCRD("clash.example.com", "gizmos", "Gizmo", false),
	}
	s := buildKinds(lists, crds)

	tests := []struct {
		lookup     string
		byKind     bool
		want       kindInfo
		wantAbsent bool
		storage    string
	}{
		{lookup: "Pod", byKind: true, want: kindInfo{Version: "v1", Kind: "Pod", Resource: "pods", Namespaced: true}, storage: "pods"},
		{lookup: "schedulingdecisions", want: kindInfo{Group: "glassplane.io", Version: "v1alpha1", Kind: "SchedulingDecision", Resource: "schedulingdecisions", Namespaced: true}, storage: "glassplane.io/schedulingdecisions"},
		{lookup: "pods", want: kindInfo{Version: "v1", Kind: "Pod", Resource: "pods", Namespaced: true}, storage: "pods"},
		{lookup: "pods.shadow.example.com", want: kindInfo{Group: "shadow.example.com", Version: "v1", Kind: "Pod", Resource: "pods", Namespaced: true, Custom: true}, storage: "shadow.example.com/pods"},
		{lookup: "nodes", want: kindInfo{Version: "v1", Kind: "Node", Resource: "nodes"}, storage: "minions"},
		{lookup: "deployments.apps", want: kindInfo{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespaced: true}, storage: "deployments"},
		{lookup: "CustomResourceDefinition", byKind: true, want: kindInfo{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Resource: "customresourcedefinitions"}, storage: "apiextensions.k8s.io/customresourcedefinitions"},
		{lookup: "Widget", byKind: true, want: kindInfo{Group: "example.com", Version: "v1", Kind: "Widget", Resource: "widgets", Namespaced: true, Custom: true}, storage: "example.com/widgets"},
		{lookup: "widgets", want: kindInfo{Group: "example.com", Version: "v1", Kind: "Widget", Resource: "widgets", Namespaced: true, Custom: true}, storage: "example.com/widgets"},
		{lookup: "widgets.example.com", want: kindInfo{Group: "example.com", Version: "v1", Kind: "Widget", Resource: "widgets", Namespaced: true, Custom: true}, storage: "example.com/widgets"},
		{lookup: "Gadget", byKind: true, want: kindInfo{Group: "later.example.com", Version: "v1", Kind: "Gadget", Resource: "gadgets", Namespaced: true, Custom: true}, storage: "later.example.com/gadgets"},
		{lookup: "Gizmo", byKind: true, wantAbsent: true},
		{lookup: "things", wantAbsent: true},
		{lookup: "pods/status", wantAbsent: true},
	}
	for _, tt := range tests {
		t.Run(tt.lookup, func(t *testing.T) {
			var got kindInfo
			var ok bool
			if tt.byKind {
				got, ok = s.byKind[tt.lookup]
			} else {
				got, ok = s.byResource[tt.lookup]
			}
			if ok == tt.wantAbsent {
				t.Fatalf("found = %v (%+v), want %v", ok, got, !tt.wantAbsent)
			}
			if tt.wantAbsent {
				return
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if st := got.storage(); st != tt.storage {
				t.Errorf("storage = %q, want %q", st, tt.storage)
			}
		})
	}
}

// TestKindTableMapsCustomResources checks the dashboard's mapping
// functions once the table knows a CRD: kinds, plurals, etcd keys and
// page links, and that a table without it keeps the built-in answers.
func TestKindTableMapsCustomResources(t *testing.T) {
	saved := kinds.snapshot()
	t.Cleanup(func() { kinds.set(saved) })
	kinds.set(kindSnapshot{})
	if got := storageResource("widgets"); got != "widgets" {
		t.Errorf("before discovery storageResource(widgets) = %q", got)
	}
	if got := resourceOfKind("Policy"); got != "policys" {
		t.Errorf("before discovery resourceOfKind(Policy) = %q", got)
	}
	kinds.set(buildKinds([]*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Kind: "Pod", Namespaced: true}}},
		{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{{Name: "policies", Kind: "Policy", Namespaced: true}}},
	}, []*apiextensionsv1.CustomResourceDefinition{widgetCRD("example.com", "policies", "Policy", true)}))

	checks := []struct{ name, got, want string }{
		{"resourceOfKind", resourceOfKind("Policy"), "policies"},
		{"kindOfResource", kindOfResource("policies"), "Policy"},
		{"kindOfResource plural.group", kindOfResource("policies.example.com"), "Policy"},
		{"storageResource", storageResource("policies"), "example.com/policies"},
		{"storageResource plural.group", storageResource("policies.example.com"), "example.com/policies"},
		{"storageResource built-in", storageResource("pods"), "pods"},
		{"storageResource nodes", storageResource("nodes"), "minions"},
		{"apiName", apiName("policies.example.com"), "policies"},
		{"hrefResource", hrefResource("example.com/policies"), "policies.example.com"},
		{"hrefResource CRDs", hrefResource("apiextensions.k8s.io/customresourcedefinitions"), "customresourcedefinitions"},
		{"hrefResource services", hrefResource("services/specs"), "services"},
		{"storageResource CRDs", storageResource("customresourcedefinitions"), "apiextensions.k8s.io/customresourcedefinitions"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	ref, ok := parseKey("/registry/example.com/policies/default/p1")
	if !ok || ref.StorageResource != "example.com/policies" || ref.Namespace != "default" || ref.Name != "p1" {
		t.Fatalf("parseKey = %+v, %v", ref, ok)
	}
	msgs := storageMessages(source.Event{Type: source.EventPut, Key: "/registry/example.com/policies/default/p1", Revision: 7, Created: true,
		Value: []byte(`{"apiVersion":"example.com/v1","kind":"Policy","metadata":{"name":"p1","namespace":"default","uid":"u1"},"spec":"a string"}`)}, time.Now())
	if len(msgs) != 2 || msgs[1].Href != "/objects/policies.example.com/default/p1" || msgs[1].Resource != "policies" || msgs[1].Kind != "Policy" {
		t.Errorf("watch message %+v", msgs)
	}
}
