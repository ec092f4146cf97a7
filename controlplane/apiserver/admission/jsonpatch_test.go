package admission

import (
	"encoding/json"
	"reflect"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

func TestCreateJSONPatch(t *testing.T) {
	tests := []struct {
		name   string
		before string
		after  string
		want   string
	}{
		{name: "equal documents", before: `{"a":1,"b":[1,2]}`, after: `{"b":[1,2],"a":1}`, want: ``},
		{name: "add member", before: `{"a":1}`, after: `{"a":1,"b":"x"}`, want: `[{"op":"add","path":"/b","value":"x"}]`},
		{name: "remove member", before: `{"a":1,"b":2}`, after: `{"a":1}`, want: `[{"op":"remove","path":"/b"}]`},
		{name: "replace scalar", before: `{"a":1}`, after: `{"a":2}`, want: `[{"op":"replace","path":"/a","value":2}]`},
		{name: "replace with null", before: `{"a":1}`, after: `{"a":null}`, want: `[{"op":"replace","path":"/a","value":null}]`},
		{name: "nested add with empty object", before: `{"spec":{}}`, after: `{"spec":{"securityContext":{}}}`, want: `[{"op":"add","path":"/spec/securityContext","value":{}}]`},
		{name: "escaped keys", before: `{"labels":{}}`, after: `{"labels":{"a/b~c":"x"}}`, want: `[{"op":"add","path":"/labels/a~1b~0c","value":"x"}]`},
		{name: "array append", before: `{"l":[1]}`, after: `{"l":[1,2,3]}`, want: `[{"op":"add","path":"/l/1","value":2},{"op":"add","path":"/l/2","value":3}]`},
		{name: "array truncate", before: `{"l":[1,2,3]}`, after: `{"l":[1]}`, want: `[{"op":"remove","path":"/l/2"},{"op":"remove","path":"/l/1"}]`},
		{name: "array element change", before: `{"l":[{"a":1},{"a":2}]}`, after: `{"l":[{"a":1},{"a":3,"b":true}]}`, want: `[{"op":"replace","path":"/l/1/a","value":3},{"op":"add","path":"/l/1/b","value":true}]`},
		{name: "array reorder with new length", before: `{"l":[1,2]}`, after: `{"l":[2,1,3]}`, want: `[{"op":"replace","path":"/l","value":[2,1,3]}]`},
		{name: "type change", before: `{"a":{"b":1}}`, after: `{"a":[1]}`, want: `[{"op":"replace","path":"/a","value":[1]}]`},
		{name: "big numbers keep precision", before: `{"n":1}`, after: `{"n":9007199254740993}`, want: `[{"op":"replace","path":"/n","value":9007199254740993}]`},
		{name: "whole document from null", before: `null`, after: `{"a":1}`, want: `[{"op":"replace","path":"","value":{"a":1}}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CreateJSONPatch([]byte(tt.before), []byte(tt.after))
			if err != nil {
				t.Fatalf("CreateJSONPatch: %v", err)
			}
			if got != tt.want {
				t.Fatalf("patch\ngot:  %s\nwant: %s", got, tt.want)
			}
			if got == "" || tt.before == "null" {
				return
			}
			assertPatchApplies(t, tt.before, got, tt.after)
		})
	}
}

// assertPatchApplies applies patch to before with an independent RFC 6902
// implementation and checks the result equals after.
func assertPatchApplies(t *testing.T, before, patch, after string) {
	t.Helper()
	p, err := jsonpatch.DecodePatch([]byte(patch))
	if err != nil {
		t.Fatalf("decode patch %s: %v", patch, err)
	}
	applied, err := p.Apply([]byte(before))
	if err != nil {
		t.Fatalf("apply patch %s: %v", patch, err)
	}
	var gotDoc, wantDoc any
	if err := json.Unmarshal(applied, &gotDoc); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(after), &wantDoc); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotDoc, wantDoc) {
		t.Fatalf("patched document\ngot:  %s\nwant: %s", applied, after)
	}
}

func TestCreateJSONPatchRejectsInvalidJSON(t *testing.T) {
	for _, tt := range []struct{ name, before, after string }{
		{"bad original", `{`, `{}`},
		{"bad changed", `{}`, `{"a":`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := CreateJSONPatch([]byte(tt.before), []byte(tt.after)); err == nil {
				t.Fatal("want an error")
			}
		})
	}
}
