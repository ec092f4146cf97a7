package dynamic

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/glassplane/glassplane/controlplane/apiserver/admission"
)

// objectInterfaces are the plugins' admission.ObjectInterfaces. Glassplane
// keeps every built-in object in its one served version (the typed
// k8s.io/api object), so "conversion" is between objects of the same type:
// a copy. Kinds client-go's scheme does not know are custom resources and
// made unstructured, as kube-apiserver's CRD handler does; they convert
// between their CRD's versions through the CRD's converter (kinds), for
// webhooks and policies matched through another version (matchPolicy
// Equivalent).
type objectInterfaces struct {
	kinds *kindRegistry
}

func newObjectInterfaces() *objectInterfaces {
	return &objectInterfaces{kinds: newKindRegistry()}
}

func (o *objectInterfaces) GetObjectCreater() runtime.ObjectCreater     { return creater{} }
func (o *objectInterfaces) GetObjectTyper() runtime.ObjectTyper         { return typer{} }
func (o *objectInterfaces) GetObjectDefaulter() runtime.ObjectDefaulter { return defaulter{} }
func (o *objectInterfaces) GetObjectConvertor() runtime.ObjectConvertor { return convertor{o.kinds} }
func (o *objectInterfaces) GetEquivalentResourceMapper() runtime.EquivalentResourceMapper {
	return o.kinds
}

// creater makes typed objects of client-go's scheme, unstructured otherwise.
type creater struct{}

func (creater) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	if scheme.Scheme.Recognizes(gvk) {
		return scheme.Scheme.New(gvk)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// typer answers with client-go's scheme, or an unstructured object's own kind.
type typer struct{}

func (typer) ObjectKinds(obj runtime.Object) ([]schema.GroupVersionKind, bool, error) {
	if u, ok := obj.(runtime.Unstructured); ok {
		gvk := u.GetObjectKind().GroupVersionKind()
		if gvk.Empty() {
			return nil, false, fmt.Errorf("unstructured object has no kind")
		}
		return []schema.GroupVersionKind{gvk}, false, nil
	}
	return scheme.Scheme.ObjectKinds(obj)
}

func (typer) Recognizes(gvk schema.GroupVersionKind) bool { return true }

// defaulter applies Kubernetes' defaults to a patched object, as the
// scheme's defaulter does in kube-apiserver.
type defaulter struct{}

func (defaulter) Default(obj runtime.Object) { admission.Default(obj) }

// convertor copies between objects of one type, and between the
// unstructured and typed forms of one kind (a mutating policy's apply
// configuration yields an unstructured object, as in kube-apiserver). A
// custom resource converts to another version of its kind through its
// CRD's converter.
type convertor struct{ kinds *kindRegistry }

func (c convertor) Convert(in, out, _ any) error {
	if in == out {
		return nil
	}
	switch i := in.(type) {
	case *unstructured.Unstructured:
		if o, ok := out.(*unstructured.Unstructured); ok {
			return c.convertCustom(i, o)
		}
		return runtime.DefaultUnstructuredConverter.FromUnstructured(i.Object, out)
	default:
		if u, ok := out.(*unstructured.Unstructured); ok {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(in)
			if err != nil {
				return err
			}
			u.Object = m
			return nil
		}
	}
	iv, ov := reflect.ValueOf(in), reflect.ValueOf(out)
	if iv.Kind() != reflect.Pointer || ov.Kind() != reflect.Pointer || iv.Type() != ov.Type() {
		return fmt.Errorf("converting %T to %T: only objects of one version are served", in, out)
	}
	ov.Elem().Set(iv.Elem())
	return nil
}

// convertCustom fills out (whose kind says the version wanted, if any) from
// in: a deep copy of the same version, or the CRD's conversion to another.
func (c convertor) convertCustom(in, out *unstructured.Unstructured) error {
	from, to := in.GroupVersionKind(), out.GroupVersionKind()
	if to.Empty() || to == from {
		out.Object = runtime.DeepCopyJSON(in.Object)
		return nil
	}
	convert := c.kinds.converter(from.GroupKind())
	if convert == nil || to.GroupKind() != from.GroupKind() {
		return fmt.Errorf("converting %v to %v: no conversion between them is served", from, to)
	}
	return convert.Convert(in, out, nil)
}

func (c convertor) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	kinds, _, err := typer{}.ObjectKinds(in)
	if err != nil {
		return nil, err
	}
	target, ok := gv.KindForGroupVersionKinds(kinds)
	if ok && target != kinds[0] && target.GroupKind() == kinds[0].GroupKind() {
		if convert := c.kinds.converter(kinds[0].GroupKind()); convert != nil {
			return convert.ConvertToVersion(in, gv)
		}
	}
	if !ok || target != kinds[0] {
		return nil, fmt.Errorf("converting %T to %v: only objects of one version are served", in, gv)
	}
	if u, ok := in.(*unstructured.Unstructured); ok && scheme.Scheme.Recognizes(kinds[0]) {
		out, err := scheme.Scheme.New(kinds[0])
		if err != nil {
			return nil, err
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
			return nil, err
		}
		out.GetObjectKind().SetGroupVersionKind(kinds[0])
		return out, nil
	}
	return in, nil
}

func (convertor) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}
