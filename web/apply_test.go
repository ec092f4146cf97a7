package web

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/html"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
)

// fixedMapper knows pods only; Reset has nothing to forget.
type fixedMapper struct{ meta.RESTMapper }

func (fixedMapper) Reset() {}

// fakeApplier applies to a fake dynamic client that refuses invalid pod
// names the way the API server's validation does.
func fakeApplier() *applier {
	m := meta.NewDefaultRESTMapper([]schema.GroupVersion{corev1.SchemeGroupVersion})
	m.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	dyn := fake.NewSimpleDynamicClient(scheme.Scheme)
	dyn.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		obj := action.(clienttesting.CreateAction).GetObject().(metaObject)
		if name := obj.GetName(); strings.ContainsAny(name, "_ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
			return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, name, field.ErrorList{
				field.Invalid(field.NewPath("metadata", "name"), name, "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'"),
			})
		}
		return false, nil, nil
	})
	return &applier{dyn: dyn, mapper: fixedMapper{m}}
}

type metaObject interface{ GetName() string }

func examplePod() string {
	for _, e := range examples {
		if e.Name == "pod" {
			return e.YAML
		}
	}
	return ""
}

func TestApplier(t *testing.T) {
	a := fakeApplier()
	ctx := context.Background()
	changed := strings.Replace(examplePod(), "hello:latest", "hello:v2", 1)
	tests := []struct {
		name     string
		manifest string
		want     []string // "ref => action" or "ref => !error substring"
		err      string
	}{
		{name: "create", manifest: examplePod(), want: []string{"pod/mypod => created"}},
		{name: "same again", manifest: examplePod(), want: []string{"pod/mypod => unchanged"}},
		{name: "changed image", manifest: changed, want: []string{"pod/mypod => configured"}},
		{name: "several documents", manifest: "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: x}]}\n---\n---\n" +
			"apiVersion: v1\nkind: Pod\nmetadata: {name: My_Pod}\nspec: {containers: [{name: c, image: x}]}\n---\n" +
			"apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n",
			want: []string{"pod/a => created", `pod/My_Pod => !Pod "My_Pod" is invalid: metadata.name: Invalid value: "My_Pod"`, `widget.example.com/w => !no matches for kind "Widget"`}},
		{name: "missing kind", manifest: "apiVersion: v1\nmetadata: {name: x}\n", want: []string{"document 1 => !error validating data: kind not set"}},
		{name: "missing apiVersion", manifest: "kind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c, image: x}]}\n",
			want: []string{"document 1 => !error validating data: apiVersion not set"}},
		{name: "duplicate key", manifest: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  name: b\n", err: `line 5: key "name" already set in map`},
		{name: "a List applies its items", manifest: "apiVersion: v1\nkind: List\nitems:\n" +
			"- apiVersion: v1\n  kind: Pod\n  metadata: {name: l1}\n  spec: {containers: [{name: c, image: x}]}\n" +
			"- kind: Pod\n  metadata: {name: l2}\n",
			want: []string{"pod/l1 => created", "document 2 => !apiVersion not set"}},
		{name: "unparsable", manifest: "a: [", err: "failed to parse document 1"},
		{name: "empty", manifest: "---\n", err: "no documents"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			results, err := a.apply(ctx, nil, tt.manifest, false)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(results) != len(tt.want) {
				t.Fatalf("results = %+v, want %d", results, len(tt.want))
			}
			for i, w := range tt.want {
				ref, rest, _ := strings.Cut(w, " => ")
				r := results[i]
				if r.Ref != ref {
					t.Errorf("result %d ref = %q, want %q", i, r.Ref, ref)
				}
				if msg, isErr := strings.CutPrefix(rest, "!"); isErr {
					if !strings.Contains(r.Error, msg) {
						t.Errorf("result %d error = %q, want %q", i, r.Error, msg)
					}
				} else if r.Action != rest || r.Error != "" {
					t.Errorf("result %d = %+v, want %s", i, r, rest)
				}
			}
		})
	}
	got, err := a.dyn.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace("default").Get(ctx, "mypod", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(got.Object, "spec", "containers")
	if len(containers) != 1 || containers[0].(map[string]any)["image"] != "glassplane.local/hello:v2" {
		t.Errorf("stored containers = %v", containers)
	}
}

// TestApplyListFieldLine checks that a field error of a List's item points
// at the item's line in the manifest.
func TestApplyListFieldLine(t *testing.T) {
	manifest := "apiVersion: v1\nkind: List\nitems:\n" +
		"- apiVersion: v1\n  kind: Pod\n  metadata: {name: ok}\n  spec: {containers: [{name: c, image: x}]}\n" +
		"- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: Bad_Name\n  spec: {containers: [{name: c, image: x}]}\n"
	results, err := fakeApplier().apply(context.Background(), nil, manifest, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 || results[1].Error == "" || len(results[1].Fields) != 1 {
		t.Fatalf("results = %+v", results)
	}
	if got := results[1].Fields[0].Line; got != 11 {
		t.Errorf("metadata.name of items[1] points at line %d, want 11", got)
	}
}

func TestApplyForm(t *testing.T) {
	s := newSecurityEnv(t)
	s.dash.applier = fakeApplier()
	b := newBrowser(t, s.url)
	if resp, _ := b.do(http.MethodGet, strings.TrimPrefix(s.dash.LoginLink(), s.url), nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login link = %d", resp.StatusCode)
	}

	resp, body := b.do(http.MethodGet, "/apply?example=pod", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /apply = %d", resp.StatusCode)
	}
	doc, _ := html.Parse(strings.NewReader(body))
	if got := text(byTestID(doc, "manifest")[0]); !strings.Contains(got, "name: mypod") {
		t.Fatalf("example not filled in: %q", got)
	}
	token := regexp.MustCompile(`name="_csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if token == nil {
		t.Fatal("no csrf token in the form")
	}

	t.Run("without token", func(t *testing.T) {
		resp, _ := b.do(http.MethodPost, "/apply", url.Values{"manifest": {examplePod()}})
		if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusBadRequest {
			t.Errorf("status = %d, want the request refused", resp.StatusCode)
		}
	})
	t.Run("with token", func(t *testing.T) {
		resp, b := b.do(http.MethodPost, "/apply", url.Values{"manifest": {examplePod()}, "_csrf": {token[1]}, "action": {"apply"}})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status = %d: %s", resp.StatusCode, b)
		}
		doc, _ := html.Parse(strings.NewReader(b))
		results := byTestID(doc, "apply-result")
		if len(results) != 1 || attr(results[0], "data-action") != "created" || !strings.Contains(text(results[0]), "pod/mypod") {
			t.Errorf("results = %d", len(results))
		}
	})
	t.Run("without an API connection", func(t *testing.T) {
		s.dash.applier = nil
		resp, _ := b.do(http.MethodPost, "/apply", url.Values{"manifest": {examplePod()}, "_csrf": {token[1]}})
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("status = %d, want 503", resp.StatusCode)
		}
	})
}
