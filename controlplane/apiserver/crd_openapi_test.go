package apiserver_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/yaml"
)

// fooSchema is the schema of the upstream CustomResourcePublishOpenAPI
// specs: descriptions, a required field and an enum.
var fooSchema = []byte(`description: Foo CRD for Testing
type: object
properties:
  spec:
    type: object
    description: Specification of Foo
    properties:
      bars:
        description: List of Bars and their specs.
        type: array
        items:
          type: object
          required:
          - name
          properties:
            name:
              description: Name of Bar.
              type: string
            feeling:
              description: Whether Bar is feeling great.
              type: string
              enum:
              - Great
              - Down
`)

// fooCRD is a CRD of kind in group with the given versions, all served,
// the first stored, each with fooSchema.
func fooCRD(t *testing.T, group, plural, kind string, versions ...string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var props apiextensionsv1.JSONSchemaProps
	if err := yaml.UnmarshalStrict(fooSchema, &props); err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind, ListKind: kind + "List"},
		},
	}
	for i, v := range versions {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v, Served: true, Storage: i == 0,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: props.DeepCopy()},
		})
	}
	return crd
}

// expectedDefinition is the v2 definition the upstream specs expect of
// fooSchema, computed as they compute it.
func expectedDefinition(t *testing.T) spec.Schema {
	t.Helper()
	var external apiextensionsv1.JSONSchemaProps
	if err := yaml.UnmarshalStrict(fooSchema, &external); err != nil {
		t.Fatal(err)
	}
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&external, &internal, nil); err != nil {
		t.Fatal(err)
	}
	var out spec.Schema
	if err := validation.ConvertJSONSchemaPropsWithPostProcess(&internal, &out,
		validation.StripUnsupportedFormatsPostProcessorForVersion(environment.DefaultCompatibilityVersion())); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	var expect spec.Schema
	if err := json.Unmarshal(b, &expect); err != nil {
		t.Fatal(err)
	}
	return expect
}

// openAPIState is what the server publishes: the v2 definitions and the
// v3 group-version paths.
type openAPIState struct {
	definitions spec.Definitions
	v3Paths     map[string]bool
}

func publishedOpenAPI(t *testing.T) openAPIState {
	t.Helper()
	resp, body := shared.do(t, http.MethodGet, "/openapi/v2", "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /openapi/v2: %d %s", resp.StatusCode, body)
	}
	var sw spec.Swagger
	if err := json.Unmarshal([]byte(body), &sw); err != nil {
		t.Fatal(err)
	}
	resp, body = shared.do(t, http.MethodGet, "/openapi/v3", "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /openapi/v3: %d %s", resp.StatusCode, body)
	}
	var v3 struct {
		Paths map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal([]byte(body), &v3); err != nil {
		t.Fatal(err)
	}
	state := openAPIState{definitions: sw.Definitions, v3Paths: map[string]bool{}}
	for p := range v3.Paths {
		state.v3Paths[p] = true
	}
	return state
}

// waitOpenAPI polls the published documents until check has nothing to say.
func waitOpenAPI(t *testing.T, what string, check func(openAPIState) string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		msg := check(publishedOpenAPI(t))
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", what, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// definitionMatches says what is wrong with the definition name, "" if it
// is fooSchema's, compared as the upstream specs compare it.
func definitionMatches(s openAPIState, name string, expect spec.Schema) string {
	d, ok := s.definitions[name]
	if !ok {
		return name + " is not published"
	}
	delete(d.Properties, "metadata")
	delete(d.Properties, "apiVersion")
	delete(d.Properties, "kind")
	delete(d.Extensions, "x-kubernetes-group-version-kind")
	delete(d.Extensions, "x-kubernetes-selectable-fields")
	if !equality.Semantic.DeepEqual(expect, d) {
		got, _ := json.Marshal(d)
		want, _ := json.Marshal(expect)
		return name + " = " + string(got) + ", want " + string(want)
	}
	return ""
}

func TestCRDOpenAPIPublishesVersionsAsTheyChange(t *testing.T) {
	ext, _ := crdClients(t)
	ctx := ctxT(t)
	expect := expectedDefinition(t)
	const group = "openapi-versions.glassplane.io"
	def := func(version string) string { return "io.glassplane.openapi-versions." + version + ".Foo" }
	path := func(version string) string { return "apis/" + group + "/" + version }

	crd := fooCRD(t, group, "foos", "Foo", "v2", "v3")
	createEstablished(t, ext, crd)
	waitOpenAPI(t, "two served versions", func(s openAPIState) string {
		for _, v := range []string{"v2", "v3"} {
			if msg := definitionMatches(s, def(v), expect); msg != "" {
				return msg
			}
			if !s.v3Paths[path(v)] {
				return "/openapi/v3 lacks " + path(v)
			}
		}
		return ""
	})

	// Renaming v3 to v4 removes v3 and publishes v4.
	got, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Spec.Versions[1].Name = "v4"
	if got, err = ext.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitOpenAPI(t, "v3 renamed v4", func(s openAPIState) string {
		if _, ok := s.definitions[def("v3")]; ok {
			return def("v3") + " is still published"
		}
		if s.v3Paths[path("v3")] {
			return "/openapi/v3 still lists " + path("v3")
		}
		if !s.v3Paths[path("v4")] {
			return "/openapi/v3 lacks " + path("v4")
		}
		if msg := definitionMatches(s, def("v4"), expect); msg != "" {
			return msg
		}
		return definitionMatches(s, def("v2"), expect)
	})

	// A version no longer served goes.
	got.Spec.Versions[1].Served = false
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitOpenAPI(t, "v4 not served", func(s openAPIState) string {
		if _, ok := s.definitions[def("v4")]; ok {
			return def("v4") + " is still published"
		}
		if s.v3Paths[path("v4")] {
			return "/openapi/v3 still lists " + path("v4")
		}
		return definitionMatches(s, def("v2"), expect)
	})
}

func TestCRDOpenAPIPublishesKindsOfOneGroupVersion(t *testing.T) {
	ext, _ := crdClients(t)
	expect := expectedDefinition(t)
	const group = "openapi-kinds.glassplane.io"
	createEstablished(t, ext, fooCRD(t, group, "foos", "Foo", "v1"))
	createEstablished(t, ext, fooCRD(t, group, "waldos", "Waldo", "v1"))
	waitOpenAPI(t, "two kinds of one group version", func(s openAPIState) string {
		for _, kind := range []string{"Foo", "Waldo"} {
			if msg := definitionMatches(s, "io.glassplane.openapi-kinds.v1."+kind, expect); msg != "" {
				return msg
			}
		}
		if !s.v3Paths["apis/"+group+"/v1"] {
			return "/openapi/v3 lacks the group version"
		}
		return ""
	})
	resp, body := shared.do(t, http.MethodGet, "/openapi/v3/apis/"+group+"/v1", "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the v3 document: %d %s", resp.StatusCode, body)
	}
	var doc struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"Foo", "Waldo"} {
		if _, ok := doc.Components.Schemas["io.glassplane.openapi-kinds.v1."+kind]; !ok {
			t.Errorf("the v3 document of the group version lacks %s", kind)
		}
	}
}
