package admission

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// patchOp is one RFC 6902 operation.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// MarshalJSON keeps "value" for add and replace even when it is null or
// empty, and leaves it out of remove.
func (o patchOp) MarshalJSON() ([]byte, error) {
	if o.Op == "remove" {
		return json.Marshal(struct {
			Op   string `json:"op"`
			Path string `json:"path"`
		}{o.Op, o.Path})
	}
	return json.Marshal(struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}{o.Op, o.Path, o.Value})
}

// CreateJSONPatch returns the RFC 6902 JSON patch that turns the JSON
// document before into after, or "" when they are equal. Object members are
// visited in key order so the patch is deterministic; arrays that only grew
// or shrank at the end get add or remove operations for the tail, other
// array changes are diffed element by element when the lengths match and
// replaced whole otherwise.
func CreateJSONPatch(before, after []byte) (string, error) {
	var a, b any
	if err := decodeJSON(before, &a); err != nil {
		return "", fmt.Errorf("failed to decode the original document: %w", err)
	}
	if err := decodeJSON(after, &b); err != nil {
		return "", fmt.Errorf("failed to decode the changed document: %w", err)
	}
	ops := diffValue("", a, b, nil)
	if len(ops) == 0 {
		return "", nil
	}
	out, err := json.Marshal(ops)
	if err != nil {
		return "", fmt.Errorf("failed to encode the patch: %w", err)
	}
	return string(out), nil
}

func decodeJSON(data []byte, v *any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

func diffValue(path string, a, b any, ops []patchOp) []patchOp {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			return append(ops, patchOp{Op: "replace", Path: path, Value: b})
		}
		return diffObject(path, av, bv, ops)
	case []any:
		bv, ok := b.([]any)
		if !ok {
			return append(ops, patchOp{Op: "replace", Path: path, Value: b})
		}
		return diffArray(path, av, bv, ops)
	default:
		if !reflect.DeepEqual(a, b) {
			return append(ops, patchOp{Op: "replace", Path: path, Value: b})
		}
		return ops
	}
}

func diffObject(path string, a, b map[string]any, ops []patchOp) []patchOp {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := path + "/" + escapePointer(k)
		av, inA := a[k]
		bv, inB := b[k]
		switch {
		case inA && !inB:
			ops = append(ops, patchOp{Op: "remove", Path: p})
		case !inA && inB:
			ops = append(ops, patchOp{Op: "add", Path: p, Value: bv})
		default:
			ops = diffValue(p, av, bv, ops)
		}
	}
	return ops
}

func diffArray(path string, a, b []any, ops []patchOp) []patchOp {
	common := min(len(a), len(b))
	if len(a) != len(b) && !reflect.DeepEqual(a[:common], b[:common]) {
		return append(ops, patchOp{Op: "replace", Path: path, Value: b})
	}
	for i := 0; i < common; i++ {
		ops = diffValue(path+"/"+strconv.Itoa(i), a[i], b[i], ops)
	}
	for i := common; i < len(b); i++ {
		ops = append(ops, patchOp{Op: "add", Path: path + "/" + strconv.Itoa(i), Value: b[i]})
	}
	for i := len(a) - 1; i >= common; i-- {
		ops = append(ops, patchOp{Op: "remove", Path: path + "/" + strconv.Itoa(i)})
	}
	return ops
}

// escapePointer escapes one JSON pointer reference token (RFC 6901).
func escapePointer(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
}
