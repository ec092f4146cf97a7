package web

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// widgetsCRD is example.com's Widget: namespaced, two versions (v1beta1
// deprecated, v1 stored), a schema with required fields, bounds, an enum,
// a list, a map and CEL rules, status and scale subresources and printer
// columns.
func widgetsCRD() *apiextensionsv1.CustomResourceDefinition {
	schemaOf := func() *apiextensionsv1.CustomResourceValidation {
		return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"spec": {
					Type: "object", Required: []string{"replicas", "color"}, Description: "What the widget should be.",
					XValidations: apiextensionsv1.ValidationRules{{Rule: "self.replicas <= 5 || self.color == 'red'", Message: "only red widgets come in more than 5"}},
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"replicas": {Type: "integer", Minimum: ptr.To(0.0), Maximum: ptr.To(10.0), Description: "How many <copies>."},
						"color":    {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"red"`)}, {Raw: []byte(`"blue"`)}}},
						"tags":     {Type: "array", XListType: ptr.To("set"), Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
						"ports": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
							Type: "object", Required: []string{"port"},
							Properties: map[string]apiextensionsv1.JSONSchemaProps{"port": {Type: "integer"}, "target": {XIntOrString: true}},
						}}},
						"labels": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
					},
				},
				"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"replicas": {Type: "integer"}, "selector": {Type: "string"}}},
			},
		}}
	}
	subresources := &apiextensionsv1.CustomResourceSubresources{
		Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
		Scale:  &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas", LabelSelectorPath: ptr.To(".status.selector")},
	}
	columns := []apiextensionsv1.CustomResourceColumnDefinition{
		{Name: "Color", Type: "string", JSONPath: ".spec.color"},
		{Name: "Replicas", Type: "integer", JSONPath: ".spec.replicas", Description: "wanted copies"},
		{Name: "Tags", Type: "string", JSONPath: ".spec.tags", Priority: 1},
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList", ShortNames: []string{"wd"}, Categories: []string{"all", "toys"},
			},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1beta1", Served: true, Deprecated: true, DeprecationWarning: ptr.To("example.com/v1beta1 Widget is deprecated; use v1"), Schema: schemaOf()},
				{Name: "v1", Served: true, Storage: true, Schema: schemaOf(), Subresources: subresources, AdditionalPrinterColumns: columns},
			},
		},
	}
}

// getPage fetches path and returns the status, the parsed page and its
// text.
func (e *env) getPage(t *testing.T, path string) (int, *html.Node, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
	req.Header.Set("Accept", "text/html")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	doc, err := html.Parse(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, doc, string(body)
}

// TestCustomResourcePages creates a CRD and an object of it through a
// real API server and reads them on the dashboard: the CRD page (names,
// versions, schema tree, printer columns, subresources, conditions, the
// object count), the list of its objects with the CRD's columns, the
// object's page at its key /registry/example.com/widgets/<ns>/<name>, and
// the etcd explorer's link from that key; bad names get the API's message.
func TestCustomResourcePages(t *testing.T) {
	e := newAPIEnv(t)
	e.createCRD(t, widgetsCRD())
	widgets := e.dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).Namespace("default")
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1", "namespace": "default"},
		"spec":     map[string]any{"replicas": int64(3), "color": "blue", "tags": []any{"a", "b"}},
	}}
	created, err := widgets.Create(e.ctx, w, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create widget: %v", err)
	}

	t.Run("the CRD list", func(t *testing.T) {
		code, doc, _ := e.getPage(t, "/crds")
		rows := byTestID(doc, "crd-row")
		if code != http.StatusOK || len(rows) != 1 || attr(rows[0], "data-name") != "widgets.example.com" {
			t.Fatalf("GET /crds = %d with %d rows", code, len(rows))
		}
	})

	t.Run("the CRD page", func(t *testing.T) {
		code, doc, raw := e.getPage(t, "/crds/widgets.example.com")
		if code != http.StatusOK {
			t.Fatalf("GET = %d: %s", code, raw)
		}
		for id, want := range map[string]string{
			"crd-group": "example.com", "crd-kind": "Widget", "crd-plural": "widgets", "crd-shortnames": "wd",
			"crd-categories": "all, toys", "crd-scope": "Namespaced",
		} {
			if got := textByID(t, doc, id); got != want {
				t.Errorf("%s = %q, want %q", id, got, want)
			}
		}
		versions := byTestID(doc, "crd-version")
		if len(versions) != 2 {
			t.Fatalf("versions = %d, want 2", len(versions))
		}
		if v := versions[0]; attr(v, "data-version") != "v1beta1" || attr(v, "data-deprecated") != "true" || attr(v, "data-storage") != "false" {
			t.Errorf("v1beta1 %v", v.Attr)
		}
		v1 := versions[1]
		if attr(v1, "data-version") != "v1" || attr(v1, "data-storage") != "true" || attr(v1, "data-served") != "true" {
			t.Errorf("v1 %v", v1.Attr)
		}
		fields := map[string]*html.Node{}
		for _, f := range byTestID(v1, "schema-field") {
			fields[attr(f, "data-path")] = f
		}
		for path, want := range map[string]struct {
			typ      string
			required bool
		}{
			"spec": {"object", false}, "spec.replicas": {"integer", true}, "spec.color": {"string", true},
			"spec.tags": {"[]string", false}, "spec.ports": {"[]object", false}, "spec.ports[*].port": {"integer", true},
			"spec.ports[*].target": {"int-or-string", false}, "spec.labels": {"map[string]string", false}, "status.selector": {"string", false},
		} {
			f, ok := fields[path]
			if !ok {
				t.Errorf("the schema tree has no %s (has %d fields)", path, len(fields))
				continue
			}
			if attr(f, "data-type") != want.typ || attr(f, "data-required") != boolText(want.required) {
				t.Errorf("%s: type %q required %q, want %q %v", path, attr(f, "data-type"), attr(f, "data-required"), want.typ, want.required)
			}
		}
		if got := text(fields["spec.replicas"]); !strings.Contains(got, "minimum 0") || !strings.Contains(got, "maximum 10") || !strings.Contains(got, "How many <copies>.") {
			t.Errorf("spec.replicas reads %q", got)
		}
		if strings.Contains(raw, "How many <copies>") {
			t.Error("a description is not escaped")
		}
		if got := text(fields["spec.color"]); !strings.Contains(got, `enum "red", "blue"`) {
			t.Errorf("spec.color reads %q", got)
		}
		if got := text(fields["spec.tags"]); !strings.Contains(got, "list-type set") {
			t.Errorf("spec.tags reads %q", got)
		}
		rules := byTestID(fields["spec"], "schema-rule")
		if len(rules) != 1 || !strings.Contains(text(rules[0]), "self.replicas <= 5 || self.color == 'red'") || !strings.Contains(text(rules[0]), "only red widgets") {
			t.Errorf("spec's rules: %d", len(rules))
		}
		cols := byTestID(v1, "crd-column")
		if len(cols) != 3 || attr(cols[1], "data-name") != "Replicas" || !strings.Contains(text(cols[1]), ".spec.replicas") {
			t.Errorf("printer columns: %d", len(cols))
		}
		if got := textByID(t, v1, "crd-subresources"); !strings.Contains(got, "status") || !strings.Contains(got, "scale (spec .spec.replicas, status .status.replicas, selector .status.selector)") {
			t.Errorf("subresources %q", got)
		}
		conds := map[string]string{}
		for _, c := range byTestID(doc, "crd-condition") {
			conds[attr(c, "data-type")] = attr(c, "data-status")
		}
		if conds["Established"] != "True" || conds["NamesAccepted"] != "True" {
			t.Errorf("conditions %v", conds)
		}
		link := byTestID(doc, "crd-list-link")
		if len(link) != 1 || attr(link[0], "data-count") != "1" || attr(link[0], "href") != "/objects/widgets.example.com" {
			t.Errorf("the objects link: %d links", len(link))
		}
	})

	t.Run("the list of widgets with the CRD's columns", func(t *testing.T) {
		code, doc, raw := e.getPage(t, "/objects/widgets.example.com?namespace=default")
		if code != http.StatusOK {
			t.Fatalf("GET = %d: %s", code, raw)
		}
		rows := byTestID(doc, "resource-row")
		if len(rows) != 1 || attr(rows[0], "data-name") != "w1" {
			t.Fatalf("rows = %d", len(rows))
		}
		head := text(byTestID(doc, "resource-list")[0])
		if got := text(rows[0]); !strings.Contains(head, "Color") || !strings.Contains(head, "Replicas") || strings.Contains(head, "Tags") ||
			!strings.Contains(got, "blue") || !strings.Contains(got, "3") {
			t.Errorf("head %q, row %q", head, got)
		}
		if a := findAll(rows[0], func(n *html.Node) bool { return n.Data == "a" }); len(a) == 0 || attr(a[0], "href") != "/objects/widgets.example.com/default/w1" {
			t.Errorf("the row links to %v", a)
		}
	})

	for _, path := range []string{"/objects/widgets.example.com/default/w1", "/objects/widgets/default/w1"} {
		t.Run("the object page at "+path, func(t *testing.T) {
			code, doc, raw := e.getPage(t, path)
			if code != http.StatusOK {
				t.Fatalf("GET = %d: %s", code, raw)
			}
			o := byTestID(doc, "object")[0]
			if attr(o, "data-key") != "/registry/example.com/widgets/default/w1" || attr(o, "data-kind") != "Widget" ||
				attr(o, "data-uid") != string(created.GetUID()) || attr(o, "data-resource") != "widgets" {
				t.Errorf("object %v", o.Attr)
			}
			if got := textByID(t, doc, "object-yaml"); !strings.Contains(got, "color: blue") {
				t.Errorf("YAML %q", got)
			}
		})
	}

	t.Run("the CRD's own object page", func(t *testing.T) {
		code, doc, raw := e.getPage(t, "/objects/customresourcedefinitions/widgets.example.com")
		if code != http.StatusOK {
			t.Fatalf("GET = %d: %s", code, raw)
		}
		o := byTestID(doc, "object")[0]
		if attr(o, "data-key") != "/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com" || attr(o, "data-kind") != "CustomResourceDefinition" {
			t.Errorf("object %v", o.Attr)
		}
	})

	t.Run("the etcd explorer links the key to the object page", func(t *testing.T) {
		_, doc, _ := e.getPage(t, "/etcd?key=/registry/example.com/widgets/default/w1")
		link := byTestID(doc, "etcd-object-link")
		if len(link) != 1 || attr(link[0], "href") != "/objects/widgets.example.com/default/w1" {
			t.Errorf("etcd object link %d", len(link))
		}
	})

	t.Run("the object page's Delete deletes the widget through the API", func(t *testing.T) {
		b := newBrowser(t, e.srv.URL)
		e.login(t, b)
		_, page := b.do(http.MethodGet, "/objects/widgets.example.com/default/w1", nil)
		m := csrfRE.FindStringSubmatch(page)
		if m == nil {
			t.Fatal("no CSRF token on the object page")
		}
		resp, _ := b.do(http.MethodPost, "/objects/widgets/default/w1/delete", url.Values{"_csrf": {m[1]}}, "Origin", e.srv.URL, "Sec-Fetch-Site", "same-origin")
		if resp.StatusCode != http.StatusSeeOther || strings.Contains(resp.Header.Get("Location"), "error=") {
			t.Fatalf("delete answered %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		if _, err := widgets.Get(e.ctx, "w1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("after Delete: %v", err)
		}
	})

	t.Run("bad names get the API's message", func(t *testing.T) {
		for _, tt := range []struct {
			path, want string
			code       int
		}{
			{"/crds/nothings.example.com", `customresourcedefinitions.apiextensions.k8s.io "nothings.example.com" not found`, http.StatusNotFound},
			{"/crds/Not_A_Name", `metadata.name: Invalid value: "Not_A_Name"`, http.StatusBadRequest},
			{"/objects/nothings", `the server doesn't have a resource type "nothings"`, http.StatusNotFound},
			{"/objects/" + url.PathEscape(hostileName), `the server doesn't have a resource type "` + hostileName + `"`, http.StatusNotFound},
			{"/objects/widgets.example.com?namespace=Bad_NS", `namespace "Bad_NS" is invalid`, http.StatusBadRequest},
		} {
			code, doc, _ := e.getPage(t, tt.path)
			if code != tt.code || !strings.Contains(text(doc), tt.want) {
				t.Errorf("GET %s = %d, want %d with %q", tt.path, code, tt.code, tt.want)
			}
		}
	})
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// textByID is the text of the one element with data-testid id.
func textByID(t *testing.T, n *html.Node, id string) string {
	t.Helper()
	els := byTestID(n, id)
	if len(els) != 1 {
		t.Fatalf("%d elements %s, want 1", len(els), id)
	}
	return strings.TrimSpace(text(els[0]))
}

// TestCRDPagesRefuseBadInputAsText asks the CRD and list pages for
// hostile names on a dashboard without an API connection: each answers
// a Kubernetes-worded message as text, never a 500 nor markup.
func TestCRDPagesRefuseBadInputAsText(t *testing.T) {
	e := newEnv(t)
	for _, tt := range []struct {
		path string
		code int
		want string
	}{
		{"/crds", http.StatusServiceUnavailable, errNoAPI.Error()},
		{"/crds/" + url.PathEscape(hostileName), http.StatusBadRequest, "metadata.name: Invalid value"},
		{"/crds/widgets.example.com", http.StatusServiceUnavailable, errNoAPI.Error()},
		{"/objects/" + url.PathEscape(hostileName), http.StatusServiceUnavailable, errNoAPI.Error()},
		{"/objects/pods?namespace=" + url.QueryEscape(hostileName), http.StatusBadRequest, "is invalid"},
	} {
		t.Run(tt.path, func(t *testing.T) {
			code, doc, raw := e.getPage(t, tt.path)
			if code != tt.code || !strings.Contains(text(doc), tt.want) {
				t.Errorf("GET = %d, want %d with %q: %s", code, tt.code, tt.want, text(doc))
			}
			if strings.Contains(raw, "<img") {
				t.Error("a hostile name became markup")
			}
		})
	}
}
