package web

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
)

func TestSchemaRows(t *testing.T) {
	item := &apiextensionsv1.JSONSchemaProps{
		Type: "object", Required: []string{"name"},
		XValidations: apiextensionsv1.ValidationRules{{Rule: "self.name != ''", Message: "a name"}},
		Properties:   map[string]apiextensionsv1.JSONSchemaProps{"name": {Type: "string", MaxLength: ptr.To[int64](63)}, "any": {XPreserveUnknownFields: ptr.To(true)}},
	}
	root := &apiextensionsv1.JSONSchemaProps{
		Type:         "object",
		XValidations: apiextensionsv1.ValidationRules{{Rule: "has(self.spec)", Reason: ptr.To(apiextensionsv1.FieldValueRequired)}},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Required: []string{"items"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"items": {Type: "array", XListType: ptr.To("map"), XListMapKeys: []string{"name"}, Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: item}},
				"env":   {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int32"}}},
				"mode":  {Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`"fast"`)}, Nullable: true},
				"pod":   {Type: "object", XEmbeddedResource: true},
			}},
		},
	}
	rows, note := schemaRows(root)
	if note != "" {
		t.Errorf("note %q", note)
	}
	var got []string
	for _, r := range rows {
		got = append(got, strings.Repeat(" ", r.Depth)+r.Path+" "+r.Type)
	}
	want := []string{
		". object",
		"spec object",
		" spec.env map[string]integer",
		" spec.items []object",
		"  spec.items[*].any any",
		"  spec.items[*].name string",
		" spec.mode string",
		" spec.pod Object (embedded resource)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	byPath := map[string]int{}
	for i, r := range rows {
		byPath[r.Path] = i
	}
	checks := []struct {
		path string
		ok   func(i int) bool
	}{
		{".", func(i int) bool { return len(rows[i].Rules) == 1 && rows[i].Rules[0].Reason == "FieldValueRequired" }},
		{"spec.items", func(i int) bool {
			r := rows[i]
			return r.Required && strings.Join(r.Constraints, ";") == "list-type map (keys name)" &&
				len(r.Rules) == 1 && r.Rules[0].FieldPath == "[*]" && r.Rules[0].Message == "a name"
		}},
		{"spec.items[*].name", func(i int) bool { return rows[i].Required && strings.Join(rows[i].Constraints, ";") == "maxLength 63" }},
		{"spec.items[*].any", func(i int) bool { return strings.Join(rows[i].Constraints, ";") == "preserves unknown fields" }},
		{"spec.env", func(i int) bool { return !rows[i].Required }},
		{"spec.mode", func(i int) bool { return strings.Join(rows[i].Constraints, ";") == `default "fast";nullable` }},
	}
	for _, c := range checks {
		if i, ok := byPath[c.path]; !ok || !c.ok(i) {
			t.Errorf("%s: %+v", c.path, rows[byPath[c.path]])
		}
	}
}

func TestSchemaRowsBounded(t *testing.T) {
	deep := &apiextensionsv1.JSONSchemaProps{Type: "string"}
	for range maxSchemaDepth + 5 {
		deep = &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"a": *deep}}
	}
	rows, note := schemaRows(deep)
	if len(rows) != maxSchemaDepth+1 || !strings.Contains(note, "deeper than") {
		t.Errorf("deep schema: %d rows, note %q", len(rows), note)
	}
	wide := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
	for i := range maxSchemaRows + 10 {
		wide.Properties[strings.Repeat("x", 1+i/26)+string(rune('a'+i%26))] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	}
	rows, note = schemaRows(wide)
	if len(rows) != maxSchemaRows || !strings.Contains(note, "more than") {
		t.Errorf("wide schema: %d rows, note %q", len(rows), note)
	}
}
