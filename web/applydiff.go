package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/glassplane/glassplane/components"
)

// document is one YAML document of a submitted manifest.
type document struct {
	// JSON is the document converted for the API.
	JSON []byte
	// YAML is the document's text and Line the manifest line (from 1) it
	// starts on, for pointing at a field.
	YAML string
	Line int
	// Path is where the document sits in YAML when it is an item of a
	// List ("items[2]"), empty otherwise; field paths are found below it.
	Path string
}

// docSeparator is a YAML document separator line, as the API machinery's
// YAML reader splits on.
var docSeparator = regexp.MustCompile(`^---\s*($|#)`)

// splitManifest cuts a multi-document YAML (or JSON) manifest into its
// non-empty documents, remembering where each starts. A key given twice in
// one mapping is refused, as kubectl's strict YAML decoding refuses it.
func splitManifest(manifest string) ([]document, error) {
	var docs []document
	lines := strings.SplitAfter(manifest, "\n")
	start := 0
	flush := func(end int) error {
		text := strings.Join(lines[start:end], "")
		if strings.TrimSpace(text) == "" {
			return nil
		}
		js, err := yaml.YAMLToJSONStrict([]byte(text))
		if err != nil {
			return fmt.Errorf("failed to parse document %d (line %d): %w", len(docs)+1, start+1, err)
		}
		if string(js) == "null" {
			return nil
		}
		docs = append(docs, document{JSON: js, YAML: text, Line: start + 1})
		return nil
	}
	for i, l := range lines {
		if docSeparator.MatchString(strings.TrimRight(l, "\r\n")) {
			if err := flush(i); err != nil {
				return nil, err
			}
			start = i + 1
		}
	}
	if err := flush(len(lines)); err != nil {
		return nil, err
	}
	return docs, nil
}

// pathToken matches one step of a Kubernetes field path:
// "containers", "containers[0]", "labels[app]".
var pathToken = regexp.MustCompile(`([^.\[\]]+)|\[([^\]]*)\]`)

// fieldLine finds the manifest line of a field path (as in a metav1.Status
// cause: "spec.containers[0].image") in doc; it stops at the deepest part
// that exists, and answers 0 when not even the first does.
func fieldLine(doc document, path string) int {
	var root yamlv3.Node
	if err := yamlv3.Unmarshal([]byte(doc.YAML), &root); err != nil || len(root.Content) == 0 {
		return 0
	}
	node, line := root.Content[0], 0
	if doc.Path != "" {
		path = doc.Path + "." + path
	}
	for _, m := range pathToken.FindAllStringSubmatch(path, -1) {
		key := m[1]
		if key == "" {
			key = m[2]
		}
		next, keyLine := child(node, key)
		if next == nil {
			break
		}
		node, line = next, keyLine
	}
	if line == 0 {
		return 0
	}
	return doc.Line + line - 1
}

// child steps into a mapping by key or a sequence by index; the line is
// the key's (or the item's).
func child(n *yamlv3.Node, key string) (*yamlv3.Node, int) {
	switch n.Kind {
	case yamlv3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				return n.Content[i+1], n.Content[i].Line
			}
		}
	case yamlv3.SequenceNode:
		if i, err := strconv.Atoi(key); err == nil && i >= 0 && i < len(n.Content) {
			return n.Content[i], n.Content[i].Line
		}
	}
	return nil, 0
}

// fieldErrors are the causes of an API error that name a field, each with
// its line in doc.
func fieldErrors(err error, doc document) []components.FieldError {
	var se apierrors.APIStatus
	if !errors.As(err, &se) || se.Status().Details == nil {
		return nil
	}
	var out []components.FieldError
	for _, c := range se.Status().Details.Causes {
		if c.Field == "" {
			continue
		}
		out = append(out, components.FieldError{Path: c.Field, Message: c.Message, Line: fieldLine(doc, c.Field)})
	}
	return out
}

// maxValueLen bounds a value shown in the defaults diff.
const maxValueLen = 120

// addedFields lists what the API server put into the object that the
// submitted document did not have (defaults, admission's changes, the
// server-set metadata), or set to another value; managedFields is left out,
// and a Secret's values are masked.
func addedFields(submitted, stored map[string]any) []components.FieldChange {
	if stored["kind"] == "Secret" {
		submitted, stored = runtime.DeepCopyJSON(submitted), runtime.DeepCopyJSON(stored)
		maskSecretObject(submitted)
		maskSecretObject(stored)
	}
	var out []components.FieldChange
	diffValue("", submitted, stored, &out)
	slices.SortStableFunc(out, func(a, b components.FieldChange) int { return strings.Compare(a.Path, b.Path) })
	return out
}

func diffValue(path string, before, after any, out *[]components.FieldChange) {
	if path == "metadata.managedFields" {
		return
	}
	switch a := after.(type) {
	case map[string]any:
		b, ok := before.(map[string]any)
		if !ok {
			break
		}
		for k, v := range a {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if bv, had := b[k]; had {
				diffValue(p, bv, v, out)
			} else if p != "metadata.managedFields" {
				*out = append(*out, components.FieldChange{Path: p, Value: compact(v), Added: true})
			}
		}
		return
	case []any:
		b, ok := before.([]any)
		if !ok || len(b) != len(a) {
			break
		}
		for i := range a {
			diffValue(fmt.Sprintf("%s[%d]", path, i), b[i], a[i], out)
		}
		return
	}
	if compact(before) != compact(after) {
		*out = append(*out, components.FieldChange{Path: path, Value: compact(after), Was: compact(before)})
	}
}

func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(b)
	if len(s) > maxValueLen {
		s = s[:maxValueLen] + "…"
	}
	return s
}
