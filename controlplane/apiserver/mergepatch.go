package apiserver

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	"github.com/glassplane/glassplane/controlplane/apiserver/internal/rawjson"
)

// mergePatch applies a JSON merge patch (RFC 7386) to doc with the results
// of jsonpatch.MergePatch, which kube-apiserver uses, including its pruning
// of nulls from values added where doc had none. It takes apart only the
// parts of doc the patch reaches and copies the rest as raw bytes: a status
// patch to a pod leaves the spec untouched, where jsonpatch.MergePatch
// decodes and re-encodes the whole document (a tenth of the API server's
// time under a pod-creating load went there). Patches that are not JSON
// objects, and documents that are not, go to jsonpatch.MergePatch for its
// answers and errors.
func mergePatch(doc, patch []byte) ([]byte, error) {
	if !rawjson.IsObject(patch) || !rawjson.IsObject(doc) {
		return jsonpatch.MergePatch(doc, patch)
	}
	return mergeInto(doc, patch)
}

// mergeInto merges the patch object patch into the JSON object doc. doc
// must be valid JSON, as a stored object is: it is split, not validated
// (the patch is).
func mergeInto(doc, patch []byte) ([]byte, error) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, err
	}
	fields, err := rawjson.ObjectMembers(doc)
	if err != nil {
		return nil, err
	}
	for k, v := range p {
		if rawjson.IsNull(v) {
			delete(fields, k)
			continue
		}
		cur, exists := fields[k]
		var err error
		switch {
		case exists && rawjson.IsObject(cur) && rawjson.IsObject(v):
			fields[k], err = mergeInto(cur, v)
		case exists && rawjson.IsObject(cur):
			fields[k] = v
		default:
			// What lands where doc had no object loses its nulls, as in
			// jsonpatch.MergePatch.
			fields[k], err = pruneNulls(v)
		}
		if err != nil {
			return nil, err
		}
	}
	return writeObject(fields), nil
}

// pruneNulls drops null members from the objects in v, also inside arrays,
// as jsonpatch.MergePatch does for values it adds. v is valid JSON (a part
// of the validated patch); it is taken apart only where it holds a null.
func pruneNulls(v json.RawMessage) (json.RawMessage, error) {
	if !bytes.Contains(v, []byte("null")) {
		return v, nil
	}
	switch i := rawjson.SkipSpace(v, 0); {
	case i < len(v) && v[i] == '{':
		fields, err := rawjson.ObjectMembers(v)
		if err != nil {
			return nil, err
		}
		for k, e := range fields {
			if rawjson.IsNull(e) {
				delete(fields, k)
				continue
			}
			if fields[k], err = pruneNulls(e); err != nil {
				return nil, err
			}
		}
		return writeObject(fields), nil
	case i < len(v) && v[i] == '[':
		elems, err := rawjson.ArrayElements(v)
		if err != nil {
			return nil, err
		}
		out := []byte{'['}
		for j, e := range elems {
			if j > 0 {
				out = append(out, ',')
			}
			if e, err = pruneNulls(e); err != nil {
				return nil, err
			}
			out = append(out, e...)
		}
		return append(out, ']'), nil
	}
	return v, nil
}

// writeObject writes fields as a JSON object, keys sorted.
func writeObject(fields map[string]json.RawMessage) []byte {
	n := 2
	for k, v := range fields {
		n += len(k) + len(v) + 4
	}
	out := make([]byte, 0, n)
	out = append(out, '{')
	for i, k := range slices.Sorted(maps.Keys(fields)) {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendKey(out, k)
		out = append(out, ':')
		out = append(out, fields[k]...)
	}
	return append(out, '}')
}

// appendKey writes k as a JSON string: as it is when it needs no escaping
// (every key of a Kubernetes object), else as json.Marshal writes it.
func appendKey(out []byte, k string) []byte {
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			name, _ := json.Marshal(k)
			return append(out, name...)
		}
	}
	out = append(out, '"')
	out = append(out, k...)
	return append(out, '"')
}
