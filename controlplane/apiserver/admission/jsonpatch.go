package admission

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/glassplane/glassplane/controlplane/apiserver/internal/rawjson"
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
//
// The documents are compared as raw JSON: a part whose bytes are equal in
// both (most of an object a plugin defaulted a few fields of) is passed
// over without being decoded, and values in the patch are the after
// document's bytes.
func CreateJSONPatch(before, after []byte) (string, error) {
	if !json.Valid(before) {
		return "", fmt.Errorf("failed to decode the original document: %w", syntaxError(before))
	}
	if !json.Valid(after) {
		return "", fmt.Errorf("failed to decode the changed document: %w", syntaxError(after))
	}
	return diffJSON(before, after)
}

// diffJSON is CreateJSONPatch for documents known to be valid JSON (both
// encoded by json.Marshal, as the admission chain's are).
func diffJSON(before, after []byte) (string, error) {
	ops, err := diffValue("", before, after, nil)
	if err != nil {
		return "", err
	}
	if len(ops) == 0 {
		return "", nil
	}
	out, err := json.Marshal(ops)
	if err != nil {
		return "", fmt.Errorf("failed to encode the patch: %w", err)
	}
	return string(out), nil
}

// syntaxError is encoding/json's error for the invalid document b.
func syntaxError(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	return errors.New("invalid JSON")
}

func diffValue(path string, a, b json.RawMessage, ops []patchOp) ([]patchOp, error) {
	if bytes.Equal(a, b) {
		return ops, nil
	}
	switch {
	case rawjson.IsObject(a) && rawjson.IsObject(b):
		am, err := rawjson.ObjectMembers(a)
		if err != nil {
			return nil, err
		}
		bm, err := rawjson.ObjectMembers(b)
		if err != nil {
			return nil, err
		}
		return diffObject(path, am, bm, ops)
	case rawjson.IsArray(a) && rawjson.IsArray(b):
		ae, err := rawjson.ArrayElements(a)
		if err != nil {
			return nil, err
		}
		be, err := rawjson.ArrayElements(b)
		if err != nil {
			return nil, err
		}
		return diffArray(path, ae, be, ops)
	case rawjson.Equal(a, b):
		return ops, nil
	}
	return append(ops, patchOp{Op: "replace", Path: path, Value: b}), nil
}

func diffObject(path string, a, b map[string]json.RawMessage, ops []patchOp) ([]patchOp, error) {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var err error
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
			if ops, err = diffValue(p, av, bv, ops); err != nil {
				return nil, err
			}
		}
	}
	return ops, nil
}

func diffArray(path string, a, b []json.RawMessage, ops []patchOp) ([]patchOp, error) {
	common := min(len(a), len(b))
	if len(a) != len(b) {
		for i := range common {
			if !rawjson.Equal(a[i], b[i]) {
				return append(ops, patchOp{Op: "replace", Path: path, Value: b}), nil
			}
		}
	}
	var err error
	for i := range common {
		if ops, err = diffValue(path+"/"+strconv.Itoa(i), a[i], b[i], ops); err != nil {
			return nil, err
		}
	}
	for i := common; i < len(b); i++ {
		ops = append(ops, patchOp{Op: "add", Path: path + "/" + strconv.Itoa(i), Value: b[i]})
	}
	for i := len(a) - 1; i >= common; i-- {
		ops = append(ops, patchOp{Op: "remove", Path: path + "/" + strconv.Itoa(i)})
	}
	return ops, nil
}

// escapePointer escapes one JSON pointer reference token (RFC 6901).
func escapePointer(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
}
