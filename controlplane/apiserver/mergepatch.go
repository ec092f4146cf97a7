package apiserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"slices"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
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
	if !isJSONObject(patch) || !isJSONObject(doc) {
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
	fields, err := objectMembers(doc)
	if err != nil {
		return nil, err
	}
	for k, v := range p {
		if isJSONNull(v) {
			delete(fields, k)
			continue
		}
		cur, exists := fields[k]
		var err error
		switch {
		case exists && isJSONObject(cur) && isJSONObject(v):
			fields[k], err = mergeInto(cur, v)
		case exists && isJSONObject(cur):
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
	switch i := skipSpace(v, 0); {
	case i < len(v) && v[i] == '{':
		fields, err := objectMembers(v)
		if err != nil {
			return nil, err
		}
		for k, e := range fields {
			if isJSONNull(e) {
				delete(fields, k)
				continue
			}
			if fields[k], err = pruneNulls(e); err != nil {
				return nil, err
			}
		}
		return writeObject(fields), nil
	case i < len(v) && v[i] == '[':
		elems, err := arrayElements(v)
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

func isJSONObject(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}

func isJSONNull(b []byte) bool {
	return string(bytes.TrimSpace(b)) == "null"
}

// objectMembers splits the JSON object doc, which must be valid JSON, into
// its members' raw values (slices of doc, later keys winning, as
// json.Unmarshal into a map does). It scans doc once; json.Unmarshal
// validates it first and copies every value, most of the cost of a patch
// to a large object.
func objectMembers(doc []byte) (map[string]json.RawMessage, error) {
	bad := func() (map[string]json.RawMessage, error) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(doc, &m); err != nil {
			return nil, err
		}
		return nil, errors.New("not a JSON object")
	}
	i := skipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return bad()
	}
	out := map[string]json.RawMessage{}
	if i = skipSpace(doc, i+1); i < len(doc) && doc[i] == '}' {
		return out, nil
	}
	for {
		if i >= len(doc) || doc[i] != '"' {
			return bad()
		}
		end := skipString(doc, i)
		if end < 0 {
			return bad()
		}
		var key string
		if raw := doc[i:end]; bytes.IndexByte(raw, '\\') < 0 {
			key = string(raw[1 : len(raw)-1])
		} else if err := json.Unmarshal(raw, &key); err != nil {
			return nil, err
		}
		if i = skipSpace(doc, end); i >= len(doc) || doc[i] != ':' {
			return bad()
		}
		i = skipSpace(doc, i+1)
		vend := skipValue(doc, i)
		if vend < 0 {
			return bad()
		}
		out[key] = doc[i:vend:vend]
		if i = skipSpace(doc, vend); i >= len(doc) {
			return bad()
		}
		switch doc[i] {
		case ',':
			i = skipSpace(doc, i+1)
		case '}':
			return out, nil
		default:
			return bad()
		}
	}
}

// arrayElements splits the JSON array doc, which must be valid JSON, into
// its elements' raw values.
func arrayElements(doc []byte) ([]json.RawMessage, error) {
	bad := errors.New("not a JSON array")
	i := skipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '[' {
		return nil, bad
	}
	var out []json.RawMessage
	if i = skipSpace(doc, i+1); i < len(doc) && doc[i] == ']' {
		return out, nil
	}
	for {
		end := skipValue(doc, i)
		if end < 0 {
			return nil, bad
		}
		out = append(out, doc[i:end:end])
		if i = skipSpace(doc, end); i >= len(doc) {
			return nil, bad
		}
		switch doc[i] {
		case ',':
			i = skipSpace(doc, i+1)
		case ']':
			return out, nil
		default:
			return nil, bad
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] (a
// quote), or -1 if it does not end.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// skipValue returns the index after the value starting at b[i], or -1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				if i = skipString(b, i); i < 0 {
					return -1
				}
				i--
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	for j := i; j < len(b); j++ {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			if j == i {
				return -1
			}
			return j
		}
	}
	if i < len(b) {
		return len(b)
	}
	return -1
}
