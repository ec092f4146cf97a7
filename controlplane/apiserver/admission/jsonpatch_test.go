package admission

import (
	"encoding/json"
	"math/rand/v2"
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
		{name: "equal however spaced and escaped", before: `{"a": "\u0041/", "l": [ 1, {"b" : true} ]}`, after: `{"l":[1,{"b":true}],"a":"A\/"}`, want: ``},
		{name: "values keep the changed document's member order", before: `{"a":{}}`, after: `{"a":{"z":1,"m":{"y":2,"b":3}}}`, want: `[{"op":"add","path":"/a/m","value":{"y":2,"b":3}},{"op":"add","path":"/a/z","value":1}]`},
		{name: "array of new length differing in an object member order only", before: `{"l":[{"a":1,"b":2}]}`, after: `{"l":[{"b":2,"a":1},3]}`, want: `[{"op":"add","path":"/l/1","value":3}]`},
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

// TestCreateJSONPatchOnRandomDocuments diffs random pairs of related
// documents and applies each patch with an independent implementation.
func TestCreateJSONPatchOnRandomDocuments(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		before := randomValue(rng, 0)
		after := mutateValue(rng, before, 0)
		b, _ := json.Marshal(map[string]any{"doc": before})
		a, _ := json.Marshal(map[string]any{"doc": after})
		patch, err := CreateJSONPatch(b, a)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if patch == "" {
			if !reflect.DeepEqual(before, after) {
				t.Fatalf("case %d: empty patch for different documents\n%s\n%s", i, b, a)
			}
			continue
		}
		assertPatchApplies(t, string(b), patch, string(a))
	}
}

// randomValue is a random JSON value as json.Unmarshal returns them.
func randomValue(rng *rand.Rand, depth int) any {
	switch n := rng.IntN(6); {
	case n == 0 && depth < 4:
		m := map[string]any{}
		for range rng.IntN(4) {
			m[string(rune('a'+rng.IntN(5)))] = randomValue(rng, depth+1)
		}
		return m
	case n == 1 && depth < 4:
		l := make([]any, rng.IntN(4))
		for i := range l {
			l[i] = randomValue(rng, depth+1)
		}
		return l
	case n == 2:
		return float64(rng.IntN(3))
	case n == 3:
		return []string{"x", "y/~", "<&>"}[rng.IntN(3)]
	case n == 4:
		return rng.IntN(2) == 0
	}
	return nil
}

// mutateValue returns v, a copy with some parts changed, added or removed.
func mutateValue(rng *rand.Rand, v any, depth int) any {
	if rng.IntN(8) == 0 {
		return randomValue(rng, depth)
	}
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			if rng.IntN(6) != 0 {
				out[k] = mutateValue(rng, e, depth+1)
			}
		}
		if rng.IntN(4) == 0 {
			out[string(rune('a'+rng.IntN(5)))] = randomValue(rng, depth+1)
		}
		return out
	case []any:
		out := make([]any, 0, len(v)+1)
		for _, e := range v {
			out = append(out, mutateValue(rng, e, depth+1))
		}
		if rng.IntN(4) == 0 {
			out = append(out, randomValue(rng, depth+1))
		} else if len(out) > 0 && rng.IntN(4) == 0 {
			out = out[:len(out)-1]
		}
		return out
	}
	return v
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
