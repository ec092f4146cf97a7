package dynamic

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// renamer converts by rewriting apiVersion, as a CRD's None conversion.
type renamer struct{ runtime.ObjectConvertor }

func (renamer) Convert(in, out, _ any) error {
	o := out.(*unstructured.Unstructured)
	gvk := o.GroupVersionKind()
	o.Object = in.(*unstructured.Unstructured).DeepCopy().Object
	o.SetGroupVersionKind(gvk)
	return nil
}

// TestKindRegistryCustomResources: a custom resource's versions are
// equivalent per subresource, replaced as its CRD changes, and its objects
// convert between versions only through its converter; nothing of it stays
// once it is gone.
func TestKindRegistryCustomResources(t *testing.T) {
	o := newObjectInterfaces()
	gr := schema.GroupResource{Group: "example.io", Resource: "widgets"}
	v1, beta := gr.WithVersion("v1"), gr.WithVersion("v1beta1")
	kind := func(v string) schema.GroupVersionKind {
		return schema.GroupVersionKind{Group: "example.io", Version: v, Kind: "Widget"}
	}
	scale := schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}
	obj := func(v string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": int64(1)}}}
		u.SetGroupVersionKind(kind(v))
		return u
	}
	convert := func() error {
		out := &unstructured.Unstructured{}
		out.SetGroupVersionKind(kind("v1"))
		in := obj("v1beta1")
		if err := o.GetObjectConvertor().Convert(in, out, nil); err != nil {
			return err
		}
		if out.GetAPIVersion() != "example.io/v1" || in.GetAPIVersion() != "example.io/v1beta1" {
			t.Errorf("converted %q from %q, want v1 from an untouched v1beta1", out.GetAPIVersion(), in.GetAPIVersion())
		}
		return nil
	}
	mapper := o.GetEquivalentResourceMapper()

	o.kinds.setCustom(gr, []ResourceKind{
		{Resource: v1, Kind: kind("v1")}, {Resource: v1, Subresource: "scale", Kind: scale},
		{Resource: beta, Kind: kind("v1beta1")},
	}, renamer{})
	for _, tc := range []struct {
		gvr  schema.GroupVersionResource
		sub  string
		want []schema.GroupVersionResource
		kind schema.GroupVersionKind
	}{
		{beta, "", []schema.GroupVersionResource{v1, beta}, kind("v1beta1")},
		{v1, "scale", []schema.GroupVersionResource{v1}, scale},
		{beta, "scale", []schema.GroupVersionResource{v1}, schema.GroupVersionKind{}},
	} {
		if got := mapper.EquivalentResourcesFor(tc.gvr, tc.sub); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("equivalents of %v %q = %v, want %v", tc.gvr, tc.sub, got, tc.want)
		}
		if got := mapper.KindFor(tc.gvr, tc.sub); got != tc.kind {
			t.Errorf("kind of %v %q = %v, want %v", tc.gvr, tc.sub, got, tc.kind)
		}
	}
	if err := convert(); err != nil {
		t.Errorf("v1beta1 to v1: %v", err)
	}

	o.kinds.setCustom(gr, []ResourceKind{{Resource: v1, Kind: kind("v1")}}, renamer{})
	if got := mapper.EquivalentResourcesFor(v1, ""); !reflect.DeepEqual(got, []schema.GroupVersionResource{v1}) {
		t.Errorf("after v1beta1 went, equivalents of v1 = %v", got)
	}
	if got := mapper.KindFor(beta, ""); !got.Empty() {
		t.Errorf("after v1beta1 went, its kind is %v", got)
	}

	o.kinds.setCustom(gr, nil, nil)
	if got := mapper.EquivalentResourcesFor(v1, ""); len(got) != 0 {
		t.Errorf("after the CRD went, equivalents of v1 = %v", got)
	}
	if err := convert(); err == nil {
		t.Error("converted a Widget after its CRD went")
	}
}
