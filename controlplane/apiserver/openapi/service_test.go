package openapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	clientopenapi "k8s.io/client-go/openapi"
	"k8s.io/client-go/openapi3"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/util/proto"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

var allVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// testResources is a slice of what the API server serves.
func testResources() []Resource {
	return []Resource{
		{Version: "v1", Kind: "Pod", Resource: "pods", Namespaced: true, Verbs: allVerbs, Subresources: []Subresource{
			{Name: "status", Verbs: []string{"get", "patch", "update"}},
			{Name: "binding", Version: "v1", Kind: "Binding", Verbs: []string{"create"}},
			{Name: "eviction", Group: "policy", Version: "v1", Kind: "Eviction", Verbs: []string{"create"}},
		}},
		{Version: "v1", Kind: "Node", Resource: "nodes", Verbs: allVerbs, Subresources: []Subresource{
			{Name: "status", Verbs: []string{"get", "patch", "update"}},
		}},
		{Version: "v1", Kind: "Namespace", Resource: "namespaces", Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"}},
		{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespaced: true, Verbs: allVerbs},
		{Version: "v1", Kind: "Event", Resource: "events", Namespaced: true, Verbs: allVerbs},
		{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespaced: true, Verbs: allVerbs, Subresources: []Subresource{
			{Name: "scale", Group: "autoscaling", Version: "v1", Kind: "Scale", Verbs: []string{"get", "patch", "update"}},
		}},
		{Group: "apps", Version: "v1", Kind: "ReplicaSet", Resource: "replicasets", Namespaced: true, Verbs: allVerbs},
		{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease", Resource: "leases", Namespaced: true, Verbs: allVerbs},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Resource: "clusterroles", Verbs: allVerbs},
		{Group: "batch", Version: "v1", Kind: "Job", Resource: "jobs", Namespaced: true, Verbs: allVerbs},
	}
}

// startService serves a Service built over testResources on a loopback port.
func startService(t *testing.T) (*Service, *httptest.Server) {
	t.Helper()
	s, err := NewService(testResources())
	if err != nil {
		t.Fatalf("NewService: %v", err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return s, srv
}

func discoveryClient(t *testing.T, srv *httptest.Server) *discovery.DiscoveryClient {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatalf("NewDiscoveryClientForConfig: %v", err)
	}
	return dc
}

// gvkList reads an x-kubernetes-group-version-kind extension, which is a list
// on definitions and a single object on operations.
func gvkList(t *testing.T, ext spec.Extensions) []schema.GroupVersionKind {
	t.Helper()
	raw, ok := ext[extensionGVK]
	if !ok {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		t.Fatalf("marshal extension: %v", err)
	}
	var list []schema.GroupVersionKind
	if err := json.Unmarshal(b, &list); err == nil {
		return list
	}
	var one schema.GroupVersionKind
	if err := json.Unmarshal(b, &one); err != nil {
		t.Fatalf("extension %s is neither a list nor an object: %v", b, err)
	}
	return []schema.GroupVersionKind{one}
}

func hasGVK(list []schema.GroupVersionKind, want schema.GroupVersionKind) bool {
	for _, gvk := range list {
		if gvk == want {
			return true
		}
	}
	return false
}

func TestV2DocumentDefinitions(t *testing.T) {
	_, srv := startService(t)
	req, _ := http.NewRequest(http.MethodGet, srv.URL+V2Path, nil)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", V2Path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d", V2Path, resp.StatusCode)
	}
	var doc spec.Swagger
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatalf("decode v2 document: %v", err)
	}
	if doc.Swagger != "2.0" {
		t.Errorf("swagger = %q, want 2.0", doc.Swagger)
	}

	tests := []struct {
		definition string
		gvk        schema.GroupVersionKind
	}{
		{"io.k8s.api.core.v1.Pod", schema.GroupVersionKind{Version: "v1", Kind: "Pod"}},
		{"io.k8s.api.core.v1.PodList", schema.GroupVersionKind{Version: "v1", Kind: "PodList"}},
		{"io.k8s.api.core.v1.Node", schema.GroupVersionKind{Version: "v1", Kind: "Node"}},
		{"io.k8s.api.apps.v1.Deployment", schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}},
		{"io.k8s.api.autoscaling.v1.Scale", schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}},
		{"io.k8s.api.rbac.v1.ClusterRole", schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}},
		{"io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions", schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DeleteOptions"}},
	}
	for _, tt := range tests {
		t.Run(tt.definition, func(t *testing.T) {
			def, ok := doc.Definitions[tt.definition]
			if !ok {
				t.Fatalf("definition %s missing", tt.definition)
			}
			if got := gvkList(t, def.Extensions); !hasGVK(got, tt.gvk) {
				t.Errorf("x-kubernetes-group-version-kind = %v, want it to contain %v", got, tt.gvk)
			}
		})
	}

	t.Run("PodSpec has containers", func(t *testing.T) {
		podSpec := doc.Definitions["io.k8s.api.core.v1.PodSpec"]
		if _, ok := podSpec.Properties["containers"]; !ok {
			t.Errorf("PodSpec properties lack containers")
		}
		if _, ok := podSpec.Extensions[extensionGVK]; ok {
			t.Errorf("PodSpec is not a kind but has %s", extensionGVK)
		}
	})
}

func TestV2DocumentPaths(t *testing.T) {
	s, err := NewService(testResources())
	if err != nil {
		t.Fatalf("NewService: %v", err)
	}
	doc, err := buildV2FromService(s)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path        string
		method      string
		operationID string
		action      string
	}{
		{"/api/v1/namespaces/{namespace}/pods", http.MethodGet, "listCoreV1NamespacedPod", "list"},
		{"/api/v1/namespaces/{namespace}/pods", http.MethodPost, "createCoreV1NamespacedPod", "post"},
		{"/api/v1/namespaces/{namespace}/pods", http.MethodDelete, "deleteCoreV1CollectionNamespacedPod", "deletecollection"},
		{"/api/v1/namespaces/{namespace}/pods/{name}", http.MethodGet, "readCoreV1NamespacedPod", "get"},
		{"/api/v1/namespaces/{namespace}/pods/{name}", http.MethodPut, "replaceCoreV1NamespacedPod", "put"},
		{"/api/v1/namespaces/{namespace}/pods/{name}", http.MethodPatch, "patchCoreV1NamespacedPod", "patch"},
		{"/api/v1/namespaces/{namespace}/pods/{name}", http.MethodDelete, "deleteCoreV1NamespacedPod", "delete"},
		{"/api/v1/pods", http.MethodGet, "listCoreV1PodForAllNamespaces", "list"},
		{"/api/v1/watch/namespaces/{namespace}/pods", http.MethodGet, "watchCoreV1NamespacedPodList", "watchlist"},
		{"/api/v1/watch/namespaces/{namespace}/pods/{name}", http.MethodGet, "watchCoreV1NamespacedPod", "watch"},
		{"/api/v1/watch/pods", http.MethodGet, "watchCoreV1PodListForAllNamespaces", "watchlist"},
		{"/api/v1/namespaces/{namespace}/pods/{name}/status", http.MethodPatch, "patchCoreV1NamespacedPodStatus", "patch"},
		{"/api/v1/namespaces/{namespace}/pods/{name}/binding", http.MethodPost, "createCoreV1NamespacedPodBinding", "post"},
		{"/api/v1/nodes", http.MethodGet, "listCoreV1Node", "list"},
		{"/api/v1/nodes/{name}", http.MethodPut, "replaceCoreV1Node", "put"},
		{"/api/v1/watch/nodes/{name}", http.MethodGet, "watchCoreV1Node", "watch"},
		{"/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale", http.MethodGet, "readAppsV1NamespacedDeploymentScale", "get"},
		{"/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}", http.MethodDelete, "deleteRbacAuthorizationV1ClusterRole", "delete"},
		{"/api/v1/", http.MethodGet, "getCoreV1APIResources", ""},
		{"/apis/apps/", http.MethodGet, "getAppsAPIGroup", ""},
		{"/version/", http.MethodGet, "getCodeVersion", ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			item, ok := doc.Paths.Paths[tt.path]
			if !ok {
				t.Fatalf("path missing")
			}
			op := map[string]*spec.Operation{
				http.MethodGet: item.Get, http.MethodPost: item.Post, http.MethodPut: item.Put,
				http.MethodPatch: item.Patch, http.MethodDelete: item.Delete,
			}[tt.method]
			if op == nil {
				t.Fatalf("no %s operation", tt.method)
			}
			if op.ID != tt.operationID {
				t.Errorf("operation ID = %q, want %q", op.ID, tt.operationID)
			}
			if got, _ := op.Extensions.GetString(extensionAction); got != tt.action {
				t.Errorf("%s = %q, want %q", extensionAction, got, tt.action)
			}
		})
	}

	t.Run("namespaces are not namespaced", func(t *testing.T) {
		if _, ok := doc.Paths.Paths["/api/v1/namespaces/{namespace}/namespaces"]; ok {
			t.Errorf("cluster-scoped namespaces got a namespaced path")
		}
	})
}

// buildV2FromService decodes the v2 document the Service serves.
func buildV2FromService(s *Service) (*spec.Swagger, error) {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, V2Path, nil)
	req.Header.Set("Accept", "application/json")
	s.Handler().ServeHTTP(rec, req)
	var doc spec.Swagger
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		return nil, err
	}
	return &doc, nil
}

func TestV2ContentNegotiation(t *testing.T) {
	_, srv := startService(t)
	tests := []struct {
		accept      string
		status      int
		contentType string
	}{
		{"application/json", http.StatusOK, "application/json"},
		{"", http.StatusOK, "application/json"},
		{"application/com.github.proto-openapi.spec.v2@v1.0+protobuf", http.StatusOK, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"},
		{"application/com.github.proto-openapi.spec.v2.v1.0+protobuf", http.StatusOK, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"},
		{"text/html", http.StatusNotAcceptable, ""},
	}
	for _, tt := range tests {
		t.Run("accept "+tt.accept, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+V2Path, nil)
			if tt.accept != "" {
				req.Header.Set("Accept", tt.accept)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("GET: %v", err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tt.status)
			}
			if got := resp.Header.Get("Content-Type"); got != tt.contentType {
				t.Errorf("Content-Type = %q, want %q", got, tt.contentType)
			}
			if tt.status == http.StatusOK && len(body) < 100_000 {
				t.Errorf("body is only %d bytes", len(body))
			}
		})
	}
}

// TestV2ParsesAsKubectlDoes fetches the protobuf document with client-go's
// discovery client and parses it into kube-openapi proto models, the path
// kubectl's client-side validation and explain take with OpenAPI v2.
func TestV2ParsesAsKubectlDoes(t *testing.T) {
	_, srv := startService(t)
	doc, err := discoveryClient(t, srv).OpenAPISchema()
	if err != nil {
		t.Fatalf("OpenAPISchema: %v", err)
	}
	models, err := proto.NewOpenAPIData(doc)
	if err != nil {
		t.Fatalf("NewOpenAPIData: %v", err)
	}

	t.Run("PodSpec.containers is an array of Container", func(t *testing.T) {
		podSpec, ok := models.LookupModel("io.k8s.api.core.v1.PodSpec").(*proto.Kind)
		if !ok {
			t.Fatalf("io.k8s.api.core.v1.PodSpec is not a Kind model")
		}
		containers, ok := podSpec.Fields["containers"].(*proto.Array)
		if !ok {
			t.Fatalf("containers is %T, want *proto.Array", podSpec.Fields["containers"])
		}
		ref, ok := containers.SubType.(proto.Reference)
		if !ok || ref.Reference() != "io.k8s.api.core.v1.Container" {
			t.Errorf("containers items = %v, want a reference to io.k8s.api.core.v1.Container", containers.SubType)
		}
		if !containsString(podSpec.RequiredFields, "containers") {
			t.Errorf("PodSpec required fields %v lack containers", podSpec.RequiredFields)
		}
	})

	tests := []struct {
		gvk  schema.GroupVersionKind
		want string
	}{
		{schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, "io.k8s.api.core.v1.Pod"},
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "io.k8s.api.apps.v1.Deployment"},
		{schema.GroupVersionKind{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"}, "io.k8s.api.coordination.v1.Lease"},
	}
	for _, tt := range tests {
		t.Run("model for "+tt.gvk.String(), func(t *testing.T) {
			if got := modelForGVK(t, models, tt.gvk); got != tt.want {
				t.Errorf("model = %q, want %q", got, tt.want)
			}
		})
	}
}

// modelForGVK finds the model whose GVK extension names gvk, as kubectl's
// openapi.Resources.LookupResource does.
func modelForGVK(t *testing.T, models proto.Models, gvk schema.GroupVersionKind) string {
	t.Helper()
	for _, name := range models.ListModels() {
		ext := models.LookupModel(name).GetExtensions()[extensionGVK]
		list, ok := ext.([]interface{})
		if !ok {
			continue
		}
		for _, item := range list {
			m, ok := item.(map[interface{}]interface{})
			if !ok {
				continue
			}
			if m["group"] == gvk.Group && m["version"] == gvk.Version && m["kind"] == gvk.Kind {
				return name
			}
		}
	}
	return ""
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestV3Discovery(t *testing.T) {
	s, srv := startService(t)
	paths, err := discoveryClient(t, srv).OpenAPIV3().Paths()
	if err != nil {
		t.Fatalf("OpenAPIV3().Paths: %v", err)
	}
	for _, want := range []string{"api/v1", "apis/apps/v1", "apis/coordination.k8s.io/v1", "apis/rbac.authorization.k8s.io/v1", "apis/batch/v1", "api", "apis", "apis/apps", "version"} {
		t.Run(want, func(t *testing.T) {
			if _, ok := paths[want]; !ok {
				t.Errorf("/openapi/v3 lacks %q", want)
			}
			if !containsString(s.GroupVersionPaths(), want) {
				t.Errorf("GroupVersionPaths() lacks %q", want)
			}
		})
	}
	if len(paths) != len(s.GroupVersionPaths()) {
		t.Errorf("/openapi/v3 lists %d paths, GroupVersionPaths %d", len(paths), len(s.GroupVersionPaths()))
	}
}

// TestV3GroupVersionDocuments reads each group version as kubectl explain
// and kubectl's field validation check do, through client-go's openapi3 root.
func TestV3GroupVersionDocuments(t *testing.T) {
	_, srv := startService(t)
	root := openapi3.NewRoot(discoveryClient(t, srv).OpenAPIV3())
	tests := []struct {
		gv     schema.GroupVersion
		schema string
		kind   string
		other  string
	}{
		{schema.GroupVersion{Version: "v1"}, "io.k8s.api.core.v1.Pod", "Pod", "io.k8s.api.apps.v1.Deployment"},
		{schema.GroupVersion{Group: "apps", Version: "v1"}, "io.k8s.api.apps.v1.Deployment", "Deployment", "io.k8s.api.core.v1.Pod"},
		{schema.GroupVersion{Group: "batch", Version: "v1"}, "io.k8s.api.batch.v1.Job", "Job", "io.k8s.api.apps.v1.Deployment"},
	}
	for _, tt := range tests {
		t.Run(tt.gv.String(), func(t *testing.T) {
			doc, err := root.GVSpec(tt.gv)
			if err != nil {
				t.Fatalf("GVSpec: %v", err)
			}
			if doc.Version != "3.0.0" {
				t.Errorf("openapi = %q, want 3.0.0", doc.Version)
			}
			def, ok := doc.Components.Schemas[tt.schema]
			if !ok {
				t.Fatalf("components.schemas lacks %s", tt.schema)
			}
			want := tt.gv.WithKind(tt.kind)
			if got := gvkList(t, def.Extensions); !hasGVK(got, want) {
				t.Errorf("x-kubernetes-group-version-kind = %v, want it to contain %v", got, want)
			}
			if _, ok := doc.Components.Schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]; !ok {
				t.Errorf("components.schemas lacks ObjectMeta")
			}
			if _, ok := doc.Components.Schemas[tt.other]; ok {
				t.Errorf("document of %s carries %s from another group", tt.gv, tt.other)
			}
			if !patchSupportsFieldValidation(t, doc, want) {
				t.Errorf("no PATCH operation for %v declares the fieldValidation query parameter", want)
			}
		})
	}

	t.Run("Pod spec containers", func(t *testing.T) {
		doc, err := root.GVSpec(schema.GroupVersion{Version: "v1"})
		if err != nil {
			t.Fatalf("GVSpec: %v", err)
		}
		podSpec := doc.Components.Schemas["io.k8s.api.core.v1.PodSpec"]
		if podSpec == nil {
			t.Fatalf("components.schemas lacks PodSpec")
		}
		if _, ok := podSpec.Properties["containers"]; !ok {
			t.Errorf("PodSpec lacks containers")
		}
	})
}

// patchSupportsFieldValidation mirrors kubectl's supportsQueryParamV3: the
// first PATCH operation for gvk must list fieldValidation as a query parameter.
func patchSupportsFieldValidation(t *testing.T, doc *spec3.OpenAPI, gvk schema.GroupVersionKind) bool {
	t.Helper()
	for _, path := range doc.Paths.Paths {
		if path == nil || path.Patch == nil || !hasGVK(gvkList(t, path.Patch.Extensions), gvk) {
			continue
		}
		for _, p := range path.Patch.Parameters {
			if p.Name == "fieldValidation" && p.In == "query" {
				return true
			}
		}
		return false
	}
	return false
}

// TestV3TypeConverter builds client-go's structured-merge-diff type
// converter from the v3 documents and converts a Pod with it, as
// server-side apply tooling does.
func TestV3TypeConverter(t *testing.T) {
	_, srv := startService(t)
	tc, err := clientopenapi.NewTypeConverter(discoveryClient(t, srv).OpenAPIV3(), false)
	if err != nil {
		t.Fatalf("NewTypeConverter: %v", err)
	}
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "busybox"}}},
	}
	if _, err := tc.ObjectToTyped(pod); err != nil {
		t.Errorf("ObjectToTyped(pod): %v", err)
	}
}

func TestV3UnknownGroupVersion(t *testing.T) {
	_, srv := startService(t)
	tests := []struct {
		path   string
		status int
	}{
		{V3Path + "/api/v1", http.StatusOK},
		{V3Path + "/apis/storage.k8s.io/v1", http.StatusNotFound},
		{V3Path + "/apis/apps/v2", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp, err := http.Get(srv.URL + tt.path)
			if err != nil {
				t.Fatalf("GET: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.status)
			}
		})
	}
}

func TestNewServiceRejectsBadResources(t *testing.T) {
	pods := Resource{Version: "v1", Kind: "Pod", Resource: "pods", Namespaced: true, Verbs: []string{"get"}}
	tests := []struct {
		name      string
		resources []Resource
		want      string
	}{
		{"missing kind", []Resource{{Version: "v1", Resource: "pods"}}, "version, kind and resource are required"},
		{"unregistered kind", []Resource{{Version: "v1", Kind: "Potato", Resource: "potatoes", Verbs: []string{"get"}}}, "failed to find the Go type"},
		{"unknown verb", []Resource{{Version: "v1", Kind: "Pod", Resource: "pods", Verbs: []string{"frobnicate"}}}, `unknown verb "frobnicate"`},
		{"duplicate", []Resource{pods, pods}, "listed twice"},
		{"unknown subresource verb", []Resource{{Version: "v1", Kind: "Pod", Resource: "pods", Subresources: []Subresource{{Name: "status", Verbs: []string{"list"}}}}}, `unknown verb "list"`},
		{"kind without schema", []Resource{{Group: "internal.apiserver.k8s.io", Version: "v1alpha1", Kind: "StorageVersion", Resource: "storageversions", Verbs: []string{"get"}}}, "cannot find model definition"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewService(tt.resources)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewService error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func BenchmarkNewService(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewService(testResources()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFirstServe(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		s, err := NewService(testResources())
		if err != nil {
			b.Fatal(err)
		}
		for _, accept := range []string{"application/json", "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"} {
			req := httptest.NewRequest(http.MethodGet, V2Path, nil)
			req.Header.Set("Accept", accept)
			s.Handler().ServeHTTP(httptest.NewRecorder(), req)
		}
		for _, path := range s.GroupVersionPaths() {
			s.Handler().ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, V3Path+"/"+path, nil))
		}
	}
}
