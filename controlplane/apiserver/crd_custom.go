package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/util/jsonpath"
	"k8s.io/kube-openapi/pkg/spec3"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/glassplane/glassplane/controlplane/apiserver/openapi"
)

// customResource is what a registry entry built from one version of a
// CustomResourceDefinition adds to the generic handlers: objects are
// *unstructured.Unstructured, decoded, pruned, defaulted, validated and
// printed by apiextensions-apiserver's own packages, as kube-apiserver's
// customresource handler does.
type customResource struct {
	// crdName is the CRD this entry was built from.
	crdName string
	// listKind is the kind of lists (spec.names.listKind).
	listKind schema.GroupVersionKind
	// Structural is the version's structural schema (nil when the CRD
	// preserves unknown fields without one). The entry's TypeConverter
	// (server-side apply) is built from the same schemas (crdTypeConverter).
	Structural *structuralschema.Structural
	// preserveUnknownFields is the CRD's spec.preserveUnknownFields.
	preserveUnknownFields bool
	strategy              crStrategy
	statusStrategy        crStatusStrategy
	table                 rest.TableConvertor
	scale                 *apiextensionsv1.CustomResourceSubresourceScale
}

// crStrategy is the part of apiextensions-apiserver's customresource
// strategy the generic handlers call.
type crStrategy interface {
	PrepareForCreate(ctx context.Context, obj runtime.Object)
	PrepareForUpdate(ctx context.Context, obj, old runtime.Object)
	Validate(ctx context.Context, obj runtime.Object) field.ErrorList
	ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
}

// crStatusStrategy is the part of its status strategy they call.
type crStatusStrategy interface {
	PrepareForUpdate(ctx context.Context, obj, old runtime.Object)
	ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
}

// crdConverter makes crd's converter between its versions with
// apiextensions-apiserver's factory, as kube-apiserver's crdHandler does:
// apiVersion rewritten with conversion None, the CRD's webhook called with
// Webhook.
func crdConverter(crd *apiextensionsv1.CustomResourceDefinition, converters *conversion.CRConverterFactory) (runtime.ObjectConvertor, error) {
	if converters == nil {
		return nil, fmt.Errorf("%s: conversion is not available on this server", crd.Name)
	}
	if crd.Spec.Conversion == nil {
		none := *crd
		none.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
		crd = &none
	}
	safe, _, err := converters.NewConverter(crd)
	if err != nil {
		return nil, fmt.Errorf("%s: failed to make its converter: %w", crd.Name, err)
	}
	return safe, nil
}

// customResourceEntries builds one registry entry per served version of crd,
// as kube-apiserver's crdHandler builds one storage per version. The
// storage version's entry is flagged by StorageGVK on every entry. With
// conversion Webhook, every entry converts what it stores to the storage
// version, and what it reads from the version it was stored at, through
// convert (crdConverter's, which calls the webhook).
func customResourceEntries(crd *apiextensionsv1.CustomResourceDefinition, convert runtime.ObjectConvertor) ([]*resource, error) {
	storageVersion := ""
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			storageVersion = v.Name
		}
	}
	names := crd.Status.AcceptedNames
	if names.Kind == "" {
		names = crd.Spec.Names
	}
	namespaced := crd.Spec.Scope == apiextensionsv1.NamespaceScoped
	// Without a type converter, server-side apply treats the objects as
	// schemaless (managedfields' deduced type converter).
	tc, tcErr := crdTypeConverter(crd)
	webhook := crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter
	if webhook && convert == nil {
		return nil, fmt.Errorf("%s: conversion webhooks are not available on this server", crd.Name)
	}
	var out []*resource
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		cr, err := newCustomResource(crd, v, names)
		if err != nil {
			return nil, err
		}
		gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: names.Kind}
		res := &resource{
			GVK: gvk, Resource: names.Plural, Singular: names.Singular, ShortNames: names.ShortNames,
			Namespaced: namespaced, Categories: names.Categories, Verbs: verbsAll,
			StorageResource: crd.Spec.Group + "/" + names.Plural,
			StorageGVK:      schema.GroupVersionKind{Group: crd.Spec.Group, Version: storageVersion, Kind: names.Kind},
			Custom:          cr,
			PrepareCreate:   cr.strategy.PrepareForCreate,
			PrepareUpdate:   cr.prepareForUpdate,
			Validate:        cr.validate,
			FieldLabels:     selectableFieldLabels(v.SelectableFields),
			TypeConverter:   tc,
		}
		if webhook {
			res.Stored = webhookConversion(convert, gvk, res.StorageGVK)
		}
		if v.Subresources != nil && v.Subresources.Status != nil {
			res.HasStatus = true
			res.Subresources = append(res.Subresources, customStatusSubresource())
		}
		if v.Subresources != nil && v.Subresources.Scale != nil {
			res.Subresources = append(res.Subresources, customScaleSubresource())
		}
		out = append(out, res)
	}
	return out, tcErr
}

// webhookConversion is the stored form of a CRD version whose conversion
// is a webhook: an object is converted to the storage version to be
// stored, and from the version it was stored at to gvk's when read (no
// call when they are the same). A failed call is the API server's 500
// naming the webhook's error, as kube-apiserver answers.
func webhookConversion(convert runtime.ObjectConvertor, gvk, storage schema.GroupVersionKind) *storedForm {
	to := func(target schema.GroupVersion) func(runtime.Object) (runtime.Object, error) {
		return func(obj runtime.Object) (runtime.Object, error) {
			if obj.GetObjectKind().GroupVersionKind().GroupVersion() == target {
				return obj, nil
			}
			out, err := convert.ConvertToVersion(obj, target)
			if err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			return out, nil
		}
	}
	return &storedForm{GVK: storage, ToStored: to(storage.GroupVersion()), FromStored: to(gvk.GroupVersion())}
}

// crdTypeConverter builds server-side apply's type converter of crd's
// kinds from the OpenAPI v3 documents of its versions merged with the
// definitions they refer to (ObjectMeta, ...), as upstream's
// buildOpenAPIModelsForApply does.
func crdTypeConverter(crd *apiextensionsv1.CustomResourceDefinition) (managedfields.TypeConverter, error) {
	// ConfigMap's models hold ObjectMeta and every definition it refers to.
	static, err := openapi.Models([]schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("ConfigMap")})
	if err != nil {
		return nil, err
	}
	specs := []*spec3.OpenAPI{{Version: "3.0.0", Components: &spec3.Components{Schemas: static}}}
	for _, v := range crd.Spec.Versions {
		doc, err := builder.BuildOpenAPIV3(crd, v.Name, builder.Options{})
		if err != nil {
			return nil, fmt.Errorf("failed to build the OpenAPI document of %s %s: %w", crd.Name, v.Name, err)
		}
		specs = append(specs, doc)
	}
	merged, err := builder.MergeSpecsV3(specs...)
	if err != nil {
		return nil, fmt.Errorf("failed to merge the OpenAPI documents of %s: %w", crd.Name, err)
	}
	tc, err := managedfields.NewTypeConverter(merged.Components.Schemas, crd.Spec.PreserveUnknownFields)
	if err != nil {
		return nil, fmt.Errorf("failed to build the type converter of %s: %w", crd.Name, err)
	}
	return tc, nil
}

// newCustomResource builds the strategy of one version of crd.
func newCustomResource(crd *apiextensionsv1.CustomResourceDefinition, v apiextensionsv1.CustomResourceDefinitionVersion, names apiextensionsv1.CustomResourceDefinitionNames) (*customResource, error) {
	kind := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: names.Kind}
	var props *apiextensionsinternal.JSONSchemaProps
	if v.Schema != nil {
		internal := &apiextensionsinternal.CustomResourceValidation{}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, internal, nil); err != nil {
			return nil, fmt.Errorf("failed to convert the schema of %s: %w", kind, err)
		}
		props = internal.OpenAPIV3Schema
	}
	cr := &customResource{
		crdName:               crd.Name,
		listKind:              kind.GroupVersion().WithKind(names.ListKind),
		preserveUnknownFields: crd.Spec.PreserveUnknownFields,
	}
	if cr.listKind.Kind == "" {
		cr.listKind.Kind = names.Kind + "List"
	}
	if props != nil {
		s, err := structuralschema.NewStructural(props)
		if err != nil && !crd.Spec.PreserveUnknownFields {
			return nil, fmt.Errorf("failed to make the schema of %s structural: %w", kind, err)
		}
		if s != nil {
			s = s.DeepCopy()
			if err := structuraldefaulting.PruneDefaults(s); err != nil {
				return nil, fmt.Errorf("failed to prune the defaults of %s: %w", kind, err)
			}
		}
		cr.Structural = s
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(props)
	if err != nil {
		return nil, fmt.Errorf("failed to build the validator of %s: %w", kind, err)
	}
	var status *apiextensionsinternal.CustomResourceSubresourceStatus
	var statusValidator apiservervalidation.SchemaValidator
	if v.Subresources != nil && v.Subresources.Status != nil {
		status = &apiextensionsinternal.CustomResourceSubresourceStatus{}
		if props != nil && props.Properties != nil {
			if statusSchema, ok := props.Properties["status"]; ok {
				if statusValidator, _, err = apiservervalidation.NewSchemaValidator(&statusSchema); err != nil {
					return nil, fmt.Errorf("failed to build the status validator of %s: %w", kind, err)
				}
			}
		}
	}
	var scale *apiextensionsinternal.CustomResourceSubresourceScale
	if v.Subresources != nil && v.Subresources.Scale != nil {
		cr.scale = v.Subresources.Scale
		scale = &apiextensionsinternal.CustomResourceSubresourceScale{}
		if err := apiextensionsv1.Convert_v1_CustomResourceSubresourceScale_To_apiextensions_CustomResourceSubresourceScale(v.Subresources.Scale, scale, nil); err != nil {
			return nil, fmt.Errorf("failed to convert the scale subresource of %s: %w", kind, err)
		}
	}
	structural := cr.Structural
	if structural == nil {
		structural = &structuralschema.Structural{Extensions: structuralschema.Extensions{XPreserveUnknownFields: true}}
	}
	strategy := customresource.NewStrategy(crTyper{}, crd.Spec.Scope == apiextensionsv1.NamespaceScoped, kind,
		validator, statusValidator, structural, status, scale, v.SelectableFields)
	cr.strategy = strategy
	cr.statusStrategy = customresource.NewStatusStrategy(strategy)
	columns := v.AdditionalPrinterColumns
	if len(columns) == 0 {
		columns = []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"}}
	}
	if cr.table, err = tableconvertor.New(columns); err != nil {
		cr.table, _ = tableconvertor.New(nil)
	}
	return cr, nil
}

// crTyper names an unstructured object's kind from its own apiVersion and
// kind, as the upstream handler's unstructured typer does.
type crTyper struct{}

func (crTyper) ObjectKinds(obj runtime.Object) ([]schema.GroupVersionKind, bool, error) {
	return []schema.GroupVersionKind{obj.GetObjectKind().GroupVersionKind()}, false, nil
}

func (crTyper) Recognizes(schema.GroupVersionKind) bool { return true }

// selectableFieldLabels returns a FieldLabels function for a version's
// selectableFields: each field's value as a string ("" when absent).
func selectableFieldLabels(selectable []apiextensionsv1.SelectableField) func(runtime.Object) fields.Set {
	if len(selectable) == 0 {
		return nil
	}
	type path struct {
		name string
		jp   *jsonpath.JSONPath
	}
	var paths []path
	for _, sf := range selectable {
		jp := jsonpath.New("selectableField")
		jp.AllowMissingKeys(true)
		if err := jp.Parse("{" + sf.JSONPath + "}"); err != nil {
			continue
		}
		paths = append(paths, path{strings.TrimPrefix(sf.JSONPath, "."), jp})
	}
	return func(obj runtime.Object) fields.Set {
		set := fields.Set{}
		u, _ := obj.(*unstructured.Unstructured)
		for _, p := range paths {
			set[p.name] = ""
			if u == nil {
				continue
			}
			results, err := p.jp.FindResults(u.Object)
			if err != nil || len(results) == 0 || len(results[0]) == 0 {
				continue
			}
			switch v := results[0][0].Interface().(type) {
			case string:
				set[p.name] = v
			case bool:
				set[p.name] = strconv.FormatBool(v)
			case int64:
				set[p.name] = strconv.FormatInt(v, 10)
			case float64:
				set[p.name] = strconv.FormatFloat(v, 'f', -1, 64)
			}
		}
		return set
	}
}

// newObject returns an empty object of the entry's kind.
func (cr *customResource) newObject(gvk schema.GroupVersionKind) runtime.Object {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// newList returns an empty list of the entry's list kind.
func (cr *customResource) newList() runtime.Object {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(cr.listKind)
	return l
}

// prune drops the fields the schema does not declare (unless it preserves
// them) and coerces metadata, as the upstream decoder does; it returns the
// paths of what it dropped.
func (cr *customResource) prune(u *unstructured.Unstructured) ([]string, error) {
	if cr.Structural == nil || cr.preserveUnknownFields {
		return nil, nil
	}
	var unknown []string
	objectMeta, found, metaUnknown, err := schemaobjectmeta.GetObjectMetaWithOptions(u.Object, schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		return nil, err
	}
	unknown = append(unknown, metaUnknown...)
	apiVersion, kind := u.GetAPIVersion(), u.GetKind()
	unknown = append(unknown, structuralpruning.PruneWithOptions(u.Object, cr.Structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, cr.Structural)
	if ferr, paths := schemaobjectmeta.CoerceWithOptions(nil, u.Object, cr.Structural, false, schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true}); ferr != nil {
		return nil, ferr
	} else {
		unknown = append(unknown, paths...)
	}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	if found {
		if err := schemaobjectmeta.SetObjectMeta(u.Object, objectMeta); err != nil {
			return nil, err
		}
	}
	return unknown, nil
}

// applyDefaults fills in the schema's defaults, as kube-apiserver does on
// every decode of a custom resource (request bodies and storage).
func (cr *customResource) applyDefaults(obj runtime.Object) {
	if u, ok := obj.(*unstructured.Unstructured); ok && cr.Structural != nil {
		structuraldefaulting.Default(u.Object, cr.Structural)
	}
}

// normalize is what kube-apiserver does to a custom resource a mutating
// webhook or policy changed: the schema's defaults after the patch, then
// the schema coercion of its conversion back, which prunes the fields the
// schema does not declare.
func (cr *customResource) normalize(obj runtime.Object) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	cr.applyDefaults(u)
	_, err := cr.prune(u)
	return err
}

// decodeCustom decodes a request body (JSON, or YAML for the YAML decoder) as
// an object of the entry's kind gvk: defaulted, pruned per the request's
// fieldValidation, with apiVersion and kind checked as kube-apiserver
// checks them.
func (q *request) decodeCustom(ser runtime.Decoder, body []byte, gvk schema.GroupVersionKind) (runtime.Object, error) {
	if ser == protobuf {
		return nil, unsupportedMediaType(mediaProtobuf, mediaJSON, mediaYAML)
	}
	validation, err := q.fieldValidation()
	if err != nil {
		return nil, err
	}
	if ser == strictYAML {
		if body, err = sigsyaml.YAMLToJSON(body); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the body of the request could not be decoded as YAML: %v", err))
		}
	}
	var content map[string]any
	if err := json.Unmarshal(body, &content); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, gvk.Kind, err))
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(body); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	actual := u.GroupVersionKind()
	if actual.GroupVersion() != gvk.GroupVersion() {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", actual.GroupVersion(), gvk.GroupVersion()))
	}
	if actual.Kind != gvk.Kind {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: the kind in the data does not match the expected kind", actual.Kind, actual.Version, gvk.Kind))
	}
	cr := q.res.Custom
	cr.applyDefaults(u)
	unknown, err := cr.prune(u)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if len(unknown) > 0 {
		switch validation {
		case fieldValidationStrict:
			msgs := make([]string, len(unknown))
			for i, p := range unknown {
				msgs[i] = fmt.Sprintf("unknown field %q", p)
			}
			return nil, apierrors.NewBadRequest(fmt.Sprintf("strict decoding error: %s", strings.Join(msgs, ", ")))
		case fieldValidationWarn:
			for _, p := range unknown {
				q.w.Header().Add("Warning", fmt.Sprintf("299 - %s", strconv.Quote(fmt.Sprintf("unknown field %q", p))))
			}
		}
	}
	return u, nil
}

// validate is the entry's validation of a write: the strategy's Validate
// or ValidateUpdate on the object (and through scale), its status
// strategy's on the status subresource.
func (cr *customResource) validate(ctx context.Context, subresource string, obj, old runtime.Object) field.ErrorList {
	switch {
	case subresource == "status" && old != nil:
		return cr.statusStrategy.ValidateUpdate(ctx, obj, old)
	case old == nil:
		return cr.strategy.Validate(ctx, obj)
	}
	return cr.strategy.ValidateUpdate(ctx, obj, old)
}

// prepareForUpdate is the strategy's PrepareForUpdate in the registry's
// argument order.
func (cr *customResource) prepareForUpdate(ctx context.Context, old, next runtime.Object) {
	cr.strategy.PrepareForUpdate(ctx, next, old)
}

// customStatusSubresource serves a custom resource's status: only status
// changes, as upstream's status strategy has it.
func customStatusSubresource() *subresource {
	return &subresource{Name: "status", Verbs: verbsStatus, view: &view{
		get: identity,
		merge: func(res *resource, cur, in runtime.Object) (runtime.Object, error) {
			preserveMetadata(cur, in)
			res.Custom.statusStrategy.PrepareForUpdate(context.Background(), in, cur)
			return in, nil
		},
	}}
}

// customScaleSubresource serves a custom resource's autoscaling/v1 Scale
// through the CRD's specReplicasPath, statusReplicasPath and
// labelSelectorPath.
func customScaleSubresource() *subresource {
	return &subresource{Name: "scale", Kind: scaleKind, Verbs: verbsStatus, view: &view{
		bodyKind: scaleKind,
		get:      customToScale,
		merge: func(res *resource, cur, in runtime.Object) (runtime.Object, error) {
			scale := in.(*autoscalingv1.Scale)
			if scale.Spec.Replicas < 0 {
				return nil, apierrors.NewInvalid(scaleKind.GroupKind(), scale.Name, field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), scale.Spec.Replicas, "must be greater than or equal to 0")})
			}
			next := cur.DeepCopyObject().(*unstructured.Unstructured)
			path := jsonPathFields(res.Custom.scale.SpecReplicasPath)
			if err := unstructured.SetNestedField(next.Object, int64(scale.Spec.Replicas), path...); err != nil {
				return nil, apierrors.NewBadRequest(err.Error())
			}
			prepareForUpdate(res, cur, next)
			return next, nil
		},
	}}
}

// customToScale reads a custom resource's Scale.
func customToScale(res *resource, obj runtime.Object) runtime.Object {
	u := obj.(*unstructured.Unstructured)
	sc := res.Custom.scale
	spec, _, _ := unstructured.NestedInt64(u.Object, jsonPathFields(sc.SpecReplicasPath)...)
	status, _, _ := unstructured.NestedInt64(u.Object, jsonPathFields(sc.StatusReplicasPath)...)
	scale := &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{
			Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(),
			ResourceVersion: u.GetResourceVersion(), CreationTimestamp: u.GetCreationTimestamp(),
		},
		Spec:   autoscalingv1.ScaleSpec{Replicas: int32(spec)},
		Status: autoscalingv1.ScaleStatus{Replicas: int32(status)},
	}
	if sc.LabelSelectorPath != nil {
		scale.Status.Selector, _, _ = unstructured.NestedString(u.Object, jsonPathFields(*sc.LabelSelectorPath)...)
	}
	scale.SetGroupVersionKind(scaleKind)
	return scale
}

// jsonPathFields splits a simple JSON path (".spec.replicas").
func jsonPathFields(p string) []string {
	return strings.Split(strings.TrimPrefix(p, "."), ".")
}

// customTable converts a custom resource or list to a Table with the
// CRD's additionalPrinterColumns, through upstream's table convertor.
func (q *request) customTable(obj runtime.Object) (*metav1.Table, error) {
	table, err := q.res.Custom.table.ConvertToTable(q.ctx, obj, nil)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	table.TypeMeta = metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}
	if q.info.Verb == "watch" && q.tableColumnsSent {
		table.ColumnDefinitions = nil
	}
	q.tableColumnsSent = true
	include := q.r.URL.Query().Get("includeObject")
	for i := range table.Rows {
		row := &table.Rows[i]
		obj, _ := row.Object.Object.(*unstructured.Unstructured)
		if obj == nil {
			continue
		}
		switch include {
		case string(metav1.IncludeObject):
		case string(metav1.IncludeNone):
			row.Object.Object = nil
		default:
			m, err := meta.Accessor(obj)
			if err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			pom := meta.AsPartialObjectMetadata(m)
			pom.TypeMeta = metav1.TypeMeta{Kind: asPartialObjectMetadata, APIVersion: "meta.k8s.io/v1"}
			row.Object.Object = pom
		}
	}
	return table, nil
}
