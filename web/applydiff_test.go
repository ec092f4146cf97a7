package web

import (
	"testing"
)

func TestSplitManifestAndFieldLine(t *testing.T) {
	manifest := `apiVersion: v1
kind: Namespace
metadata:
  name: a
---
# the pod
apiVersion: v1
kind: Pod
metadata:
  name: My_Pod
spec:
  containers:
  - name: c
    image: x
  - name: d
    image: ""
---
`
	docs, err := splitManifest(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 || docs[0].Line != 1 || docs[1].Line != 6 {
		t.Fatalf("docs: %+v", docs)
	}
	tests := []struct {
		path string
		line int
	}{
		{"metadata.name", 10},
		{"spec.containers[1].image", 16},
		{"spec.containers[1]", 15},
		{"spec.containers[7].image", 12},
		{"status.phase", 0},
	}
	for _, tc := range tests {
		if got := fieldLine(docs[1], tc.path); got != tc.line {
			t.Errorf("fieldLine(%q) = %d, want %d", tc.path, got, tc.line)
		}
	}
	if _, err := splitManifest("a: [\n"); err == nil {
		t.Error("broken YAML parsed")
	}
}

func TestAddedFields(t *testing.T) {
	submitted := map[string]any{
		"metadata": map[string]any{"name": "p"},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "x"}}},
	}
	stored := map[string]any{
		"metadata": map[string]any{"name": "p", "uid": "u", "managedFields": []any{"x"}},
		"spec": map[string]any{
			"containers":    []any{map[string]any{"name": "c", "image": "x", "imagePullPolicy": "IfNotPresent"}},
			"schedulerName": "default-scheduler",
		},
	}
	got := addedFields(submitted, stored)
	want := []string{"metadata.uid", "spec.containers[0].imagePullPolicy", "spec.schedulerName"}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i, w := range want {
		if got[i].Path != w || !got[i].Added {
			t.Errorf("got[%d] = %+v, want added %s", i, got[i], w)
		}
	}
}
