package rawjson

import (
	"bytes"
	"encoding/json"
	"errors"
)

// IsObject tells whether the JSON value b is an object.
func IsObject(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}

// IsArray tells whether the JSON value b is an array.
func IsArray(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '['
}

// IsString tells whether the JSON value b is a string.
func IsString(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '"'
}

// Equal tells whether the JSON values a and b, both valid, are equal as
// JSON: objects by their members in any order, arrays element by element,
// strings by their text however escaped, numbers and literals by their
// bytes (1 and 1.0 differ, as json.Number does). Equal bytes answer at
// once, so equal parts of documents encoded alike cost a comparison.
func Equal(a, b []byte) bool {
	a, b = bytes.TrimSpace(a), bytes.TrimSpace(b)
	if bytes.Equal(a, b) {
		return true
	}
	switch {
	case IsObject(a) && IsObject(b):
		am, err := ObjectMembers(a)
		if err != nil {
			return false
		}
		bm, err := ObjectMembers(b)
		if err != nil || len(am) != len(bm) {
			return false
		}
		for k, av := range am {
			if bv, ok := bm[k]; !ok || !Equal(av, bv) {
				return false
			}
		}
		return true
	case IsArray(a) && IsArray(b):
		ae, err := ArrayElements(a)
		if err != nil {
			return false
		}
		be, err := ArrayElements(b)
		if err != nil || len(ae) != len(be) {
			return false
		}
		for i := range ae {
			if !Equal(ae[i], be[i]) {
				return false
			}
		}
		return true
	case IsString(a) && IsString(b):
		var as, bs string
		return json.Unmarshal(a, &as) == nil && json.Unmarshal(b, &bs) == nil && as == bs
	}
	return false
}

// IsNull tells whether the JSON value b is null.
func IsNull(b []byte) bool {
	return string(bytes.TrimSpace(b)) == "null"
}

// ObjectMembers splits the JSON object doc, which must be valid JSON, into
// its members' raw values (slices of doc, later keys winning, as
// json.Unmarshal into a map does). It scans doc once; json.Unmarshal
// validates it first and copies every value, most of the cost of a patch
// to a large object.
func ObjectMembers(doc []byte) (map[string]json.RawMessage, error) {
	bad := func() (map[string]json.RawMessage, error) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(doc, &m); err != nil {
			return nil, err
		}
		return nil, errors.New("not a JSON object")
	}
	i := SkipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return bad()
	}
	out := map[string]json.RawMessage{}
	if i = SkipSpace(doc, i+1); i < len(doc) && doc[i] == '}' {
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
		if i = SkipSpace(doc, end); i >= len(doc) || doc[i] != ':' {
			return bad()
		}
		i = SkipSpace(doc, i+1)
		vend := skipValue(doc, i)
		if vend < 0 {
			return bad()
		}
		out[key] = doc[i:vend:vend]
		if i = SkipSpace(doc, vend); i >= len(doc) {
			return bad()
		}
		switch doc[i] {
		case ',':
			i = SkipSpace(doc, i+1)
		case '}':
			return out, nil
		default:
			return bad()
		}
	}
}

// ArrayElements splits the JSON array doc, which must be valid JSON, into
// its elements' raw values.
func ArrayElements(doc []byte) ([]json.RawMessage, error) {
	bad := errors.New("not a JSON array")
	i := SkipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '[' {
		return nil, bad
	}
	var out []json.RawMessage
	if i = SkipSpace(doc, i+1); i < len(doc) && doc[i] == ']' {
		return out, nil
	}
	for {
		end := skipValue(doc, i)
		if end < 0 {
			return nil, bad
		}
		out = append(out, doc[i:end:end])
		if i = SkipSpace(doc, end); i >= len(doc) {
			return nil, bad
		}
		switch doc[i] {
		case ',':
			i = SkipSpace(doc, i+1)
		case ']':
			return out, nil
		default:
			return nil, bad
		}
	}
}

// SkipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func SkipSpace(b []byte, i int) int {
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
