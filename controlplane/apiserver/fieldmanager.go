package apiserver

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/glassplane/glassplane/controlplane/apiserver/admission"
	"github.com/glassplane/glassplane/controlplane/apiserver/openapi"
)

// typeConverter is the type of a resource's TypeConverter hook.
type typeConverter = managedfields.TypeConverter

// builtinManagers caches the field managers of built-in kinds (by kind,
// subresource and status reset), and builtinTypes their type converters
// (by kind), each built from the kind's OpenAPI definitions on first use.
// Both are bounded by the kinds of client-go's scheme.
var (
	builtinManagers sync.Map // builtinManagerKey → *managedfields.FieldManager
	builtinTypes    sync.Map // schema.GroupVersionKind → managedfields.TypeConverter
)

type builtinManagerKey struct {
	kind        schema.GroupVersionKind
	subresource string
	hasStatus   bool
}

// fieldManager returns the field manager (k8s.io/apimachinery's
// managedfields, over structured-merge-diff) of writes to res through the
// subresource sub ("" for the object itself) with bodies of kind: it
// tracks metadata.managedFields on every write and merges server-side
// apply patches, as kube-apiserver's does.
//
// Its type converter is the resource's TypeConverter when set (the hook a
// CRD fills from its structural schema), else the OpenAPI definition of a
// built-in kind, else managedfields' deduced type converter, which treats
// every field of an object without a schema as atomic.
func fieldManager(res *resource, sub string, kind schema.GroupVersionKind) (*managedfields.FieldManager, error) {
	builtin := scheme.Scheme.Recognizes(kind)
	reset := resetFields(res, sub, kind.GroupVersion())
	if res.TypeConverter == nil && builtin {
		key := builtinManagerKey{kind: kind, subresource: sub, hasStatus: res.HasStatus}
		if fm, ok := builtinManagers.Load(key); ok {
			return fm.(*managedfields.FieldManager), nil
		}
		tc, err := builtinTypeConverter(kind)
		if err != nil {
			return nil, err
		}
		fm, err := managedfields.NewDefaultFieldManager(tc, runtime.UnsafeObjectConvertor(scheme.Scheme), defaulterFunc(admission.Default), scheme.Scheme, kind, kind.GroupVersion(), sub, reset)
		if err != nil {
			return nil, err
		}
		actual, _ := builtinManagers.LoadOrStore(key, fm)
		return actual.(*managedfields.FieldManager), nil
	}
	tc := res.TypeConverter
	if tc == nil {
		tc = managedfields.NewDeducedTypeConverter()
	}
	if builtin {
		return managedfields.NewDefaultFieldManager(tc, runtime.UnsafeObjectConvertor(scheme.Scheme), defaulterFunc(admission.Default), scheme.Scheme, kind, kind.GroupVersion(), sub, reset)
	}
	return managedfields.NewDefaultCRDFieldManager(tc, unstructuredConverter{}, defaulterFunc(func(runtime.Object) {}), unstructuredCreater{}, kind, kind.GroupVersion(), sub, reset)
}

// builtinTypeConverter returns the type converter of a built-in kind,
// built from the OpenAPI definitions of the kind and of what it refers to,
// as kube-apiserver builds its own from the definitions it serves.
func builtinTypeConverter(kind schema.GroupVersionKind) (managedfields.TypeConverter, error) {
	if tc, ok := builtinTypes.Load(kind); ok {
		return tc.(managedfields.TypeConverter), nil
	}
	models, err := openapi.Models([]schema.GroupVersionKind{kind})
	if err != nil {
		return nil, err
	}
	tc, err := managedfields.NewTypeConverter(models, false)
	if err != nil {
		return nil, fmt.Errorf("failed to build the type converter of %v: %w", kind, err)
	}
	actual, _ := builtinTypes.LoadOrStore(kind, tc)
	return actual.(managedfields.TypeConverter), nil
}

// resetFields are the fields a write through sub may not set, left out of
// what its manager owns, as the strategies' GetResetFields: the status of
// an object with a status subresource, and the spec written through status.
func resetFields(res *resource, sub string, gv schema.GroupVersion) map[fieldpath.APIVersion]fieldpath.Filter {
	var path fieldpath.Path
	switch {
	case sub == "" && res.HasStatus:
		path = fieldpath.MakePathOrDie("status")
	case sub == "status":
		path = fieldpath.MakePathOrDie("spec")
	default:
		return nil
	}
	return map[fieldpath.APIVersion]fieldpath.Filter{
		fieldpath.APIVersion(gv.String()): fieldpath.NewExcludeSetFilter(fieldpath.NewSet(path)),
	}
}

// defaulterFunc is a runtime.ObjectDefaulter.
type defaulterFunc func(runtime.Object)

func (f defaulterFunc) Default(obj runtime.Object) { f(obj) }

// unstructuredConverter converts custom resources, kept as unstructured
// objects of one schema, between versions by setting their apiVersion, as
// a CRD's conversion strategy None does.
type unstructuredConverter struct{}

func (unstructuredConverter) Convert(in, out, context any) error {
	return errors.New("unstructured objects are converted only by ConvertToVersion")
}

func (unstructuredConverter) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	kind := in.GetObjectKind().GroupVersionKind()
	gvk, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{kind})
	if !ok {
		return nil, fmt.Errorf("%v is unstructured and is not suitable for converting to %q", kind, target)
	}
	// A copy: the field manager converts the object it was given to the
	// versions of its managedFields entries and goes on with the object.
	out := in.DeepCopyObject()
	out.GetObjectKind().SetGroupVersionKind(gvk)
	return out, nil
}

func (unstructuredConverter) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return "", "", errors.New("unstructured objects have no field label conversions")
}

// unstructuredCreater makes the empty objects of kinds outside the scheme
// (custom resources) as unstructured objects.
type unstructuredCreater struct{}

func (unstructuredCreater) New(kind schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kind)
	return u, nil
}

// writeOptions are the fieldManager and force query parameters of a write.
type writeOptions struct {
	// manager is the fieldManager parameter, or the prefix of the
	// User-Agent when it is unset (never for apply).
	manager string
	force   bool
}

// writeOptions reads and checks fieldManager and force as kube-apiserver's
// Validate{Create,Update,Patch}Options do; pt is the patch type of a
// PATCH, "" for a create or an update.
func (q *request) writeOptions(pt types.PatchType) (*writeOptions, error) {
	var opts metav1.PatchOptions
	if err := decodeQuery(q.r.URL.Query(), &opts); err != nil {
		return nil, err
	}
	var errs field.ErrorList
	kind := "UpdateOptions"
	switch {
	case pt != "":
		kind = "PatchOptions"
		// dryRun and fieldValidation are checked where they are read.
		errs = metav1validation.ValidatePatchOptions(&metav1.PatchOptions{FieldManager: opts.FieldManager, Force: opts.Force}, pt)
	default:
		if q.r.Method == "POST" {
			kind = "CreateOptions"
		}
		errs = metav1validation.ValidateFieldManager(opts.FieldManager, field.NewPath("fieldManager"))
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: kind}, "", errs)
	}
	out := &writeOptions{manager: opts.FieldManager, force: opts.Force != nil && *opts.Force}
	if out.manager == "" {
		out.manager = prefixFromUserAgent(q.r.UserAgent())
	}
	return out, nil
}

// prefixFromUserAgent is the manager of a write without fieldManager, as
// kube-apiserver names it: the User-Agent up to its first "/", without
// unprintable characters, cut at 128 bytes ("kubectl", "kube-controller-manager").
func prefixFromUserAgent(u string) string {
	m := strings.Split(u, "/")[0]
	var buf bytes.Buffer
	for _, r := range m {
		if !unicode.IsPrint(r) {
			continue
		}
		if buf.Len()+utf8.RuneLen(r) > metav1validation.FieldManagerMaxLength {
			break
		}
		buf.WriteRune(r)
	}
	return buf.String()
}

// trackCreate records in a new object's managedFields that manager set its
// fields, as kube-apiserver's create handler does (with the object's
// defaults, which kube-apiserver fills in when it decodes the body).
func (q *request) trackCreate(obj runtime.Object, opts *writeOptions) (runtime.Object, error) {
	fm, err := fieldManager(q.res, "", q.res.GVK)
	if err != nil {
		return nil, err
	}
	live, err := newObject(q.res, q.res.GVK)
	if err != nil {
		return nil, err
	}
	admission.Default(obj)
	return fm.UpdateNoErrors(live, obj, opts.manager), nil
}

// newObject returns an empty object of res for the kind of its bodies.
func newObject(res *resource, kind schema.GroupVersionKind) (runtime.Object, error) {
	if kind == res.GVK {
		obj := res.New()
		obj.GetObjectKind().SetGroupVersionKind(kind)
		return obj, nil
	}
	obj, err := scheme.Scheme.New(kind)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	obj.GetObjectKind().SetGroupVersionKind(kind)
	return obj, nil
}

// fieldChange computes the new view of an object from its live view (with
// its managedFields) and returns it with its managedFields updated.
type fieldChange func(fm *managedfields.FieldManager, live runtime.Object) (runtime.Object, error)

// mergeTracked writes a change through the view v with managedFields
// tracked: change computes the new view from the live one, the view merges
// it into the stored object cur, and the result carries the managedFields
// of the new view (the parent's, translated back, for scale).
func (q *request) mergeTracked(v *view, cur runtime.Object, change fieldChange) (runtime.Object, error) {
	kind := v.kind(q.res)
	fm, err := fieldManager(q.res, q.info.Subresource, kind)
	if err != nil {
		return nil, err
	}
	live := v.get(q.res, cur)
	var scale *managedfields.ScaleHandler
	if kind == scaleKind {
		cm, _ := meta.Accessor(cur)
		scale = managedfields.NewScaleHandler(cm.GetManagedFields(), q.res.GroupVersion(), replicasPaths(q.res))
		entries, err := scale.ToSubresource()
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		live = live.DeepCopyObject()
		lm, _ := meta.Accessor(live)
		lm.SetManagedFields(entries)
	}
	next, err := change(fm, live)
	if err != nil {
		return nil, err
	}
	nm, err := meta.Accessor(next)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	managed := nm.GetManagedFields()
	merged, err := v.merge(q.res, cur, next)
	if err != nil {
		return nil, err
	}
	if scale != nil {
		if managed, err = scale.ToParent(managed); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
	}
	mm, _ := meta.Accessor(merged)
	mm.SetManagedFields(managed)
	return merged, nil
}

// trackUpdate is the change of an update or a non-apply patch: in, the new
// view, with its defaults, records what manager changed.
func (q *request) trackUpdate(in runtime.Object, opts *writeOptions) fieldChange {
	return func(fm *managedfields.FieldManager, live runtime.Object) (runtime.Object, error) {
		admission.Default(in)
		return fm.UpdateNoErrors(live, in, opts.manager), nil
	}
}

// replicasPaths says where the replicas a Scale shows live in res's
// objects, for translating managedFields between the two.
func replicasPaths(res *resource) managedfields.ResourcePathMappings {
	return managedfields.ResourcePathMappings{res.GroupVersion().String(): fieldpath.MakePathOrDie("spec", "replicas")}
}

// applyError answers an error of the field manager's Apply: the Status
// errors it makes (a conflict's 409, a bad version's 400) as they are; the
// others come from a patch its schema refuses (a field not declared in
// it, a duplicate list key), which kube-apiserver answers as a 500 with
// this text and Glassplane, as a request a client got wrong, as a 400.
func applyError(err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	return apierrors.NewBadRequest(err.Error())
}
