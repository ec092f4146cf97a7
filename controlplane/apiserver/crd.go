package apiserver

import (
	"context"
	"fmt"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/scheme"
)

// apiextensions.k8s.io/v1 joins client-go's scheme, so the generic
// handlers serve CustomResourceDefinitions as any typed built-in, with the
// v1 defaults (conversion strategy None, ...) applied on decode.
func init() {
	if err := apiextensionsv1.AddToScheme(scheme.Scheme); err != nil {
		panic(fmt.Sprintf("failed to add apiextensions.k8s.io/v1 to the scheme: %v", err))
	}
	install.Install(crdScheme)
}

// crdScheme holds apiextensions.k8s.io's internal and versioned types, for
// the conversion to the internal type its validation takes.
var crdScheme = runtime.NewScheme()

// crdResources are the apiextensions.k8s.io/v1 resources.
func crdResources() []*resource {
	return []*resource{{
		GVK:      apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"),
		Resource: "customresourcedefinitions", Singular: "customresourcedefinition", ShortNames: []string{"crd", "crds"},
		Categories: []string{"api-extensions"}, Verbs: verbsAll,
		StorageResource: "apiextensions.k8s.io/customresourcedefinitions",
		HasStatus:       true, TracksGeneration: true,
		Subresources:  []*subresource{statusSubresource()},
		PrepareCreate: prepareCRDForCreate,
		PrepareUpdate: prepareCRDForUpdate,
		Validate:      validateCRD,
	}}
}

// prepareCRDForCreate applies the v1 defaults (what decoding into
// kube-apiserver fills in: listKind, singular, conversion None, ...) and
// does what upstream's CRD strategy does on create: status starts empty but
// for the stored version. The
// customresourcecleanup finalizer is set here, so that deleting the CRD
// deletes its objects first.
func prepareCRDForCreate(_ context.Context, obj runtime.Object) {
	crd := obj.(*apiextensionsv1.CustomResourceDefinition)
	scheme.Scheme.Default(crd)
	crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			crd.Status.StoredVersions = []string{v.Name}
		}
	}
	if !containsString(crd.Finalizers, apiextensionsv1.CustomResourceCleanupFinalizer) {
		crd.Finalizers = append(crd.Finalizers, apiextensionsv1.CustomResourceCleanupFinalizer)
	}
}

// prepareCRDForUpdate applies the v1 defaults and adds a new storage
// version to status.storedVersions, as upstream's strategy does.
func prepareCRDForUpdate(_ context.Context, _, next runtime.Object) {
	crd := next.(*apiextensionsv1.CustomResourceDefinition)
	scheme.Scheme.Default(crd)
	for _, v := range crd.Spec.Versions {
		if v.Storage && !containsString(crd.Status.StoredVersions, v.Name) {
			crd.Status.StoredVersions = append(crd.Status.StoredVersions, v.Name)
		}
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// validateCRD validates a CRD with apiextensions-apiserver's own rules
// (structural schemas, CEL rules, names, versions), on the internal type
// as upstream does.
func validateCRD(ctx context.Context, subresource string, obj, old runtime.Object) field.ErrorList {
	in, err := toInternalCRD(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	var errs field.ErrorList
	switch {
	case subresource == "status" && old != nil:
		prev, err := toInternalCRD(old)
		if err != nil {
			return field.ErrorList{field.InternalError(nil, err)}
		}
		return apiextensionsvalidation.ValidateUpdateCustomResourceDefinitionStatus(ctx, in, prev)
	case subresource != "":
		return nil
	case old == nil:
		errs = apiextensionsvalidation.ValidateCustomResourceDefinition(ctx, in)
	default:
		prev, err := toInternalCRD(old)
		if err != nil {
			return field.ErrorList{field.InternalError(nil, err)}
		}
		errs = apiextensionsvalidation.ValidateCustomResourceDefinitionUpdate(ctx, in, prev)
	}
	return errs
}

// toInternalCRD converts a v1 CRD to the internal type the validation takes.
func toInternalCRD(obj runtime.Object) (*apiextensionsinternal.CustomResourceDefinition, error) {
	out := &apiextensionsinternal.CustomResourceDefinition{}
	if err := crdScheme.Convert(obj, out, nil); err != nil {
		return nil, fmt.Errorf("failed to convert the CustomResourceDefinition: %w", err)
	}
	return out, nil
}
