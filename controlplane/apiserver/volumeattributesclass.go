package apiserver

import (
	"context"
	"strings"

	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxVolumeAttributesClassParameters is how many parameters a
// VolumeAttributesClass may have, as upstream's validation allows.
const maxVolumeAttributesClassParameters = 512

// validateVolumeAttributesClass is kube-apiserver's validation of a
// storage.k8s.io/v1 VolumeAttributesClass: a driverName that is a
// qualified name, at least one parameter, and neither may change.
func validateVolumeAttributesClass(_ context.Context, _ string, obj, old runtime.Object) field.ErrorList {
	vac := obj.(*storagev1.VolumeAttributesClass)
	if prev, ok := old.(*storagev1.VolumeAttributesClass); ok {
		errs := apimachineryvalidation.ValidateObjectMetaUpdate(&vac.ObjectMeta, &prev.ObjectMeta, field.NewPath("metadata"))
		if vac.DriverName != prev.DriverName {
			errs = append(errs, field.Forbidden(field.NewPath("driverName"), "updates to driverName are forbidden."))
		}
		if !apiequality.Semantic.DeepEqual(vac.Parameters, prev.Parameters) {
			errs = append(errs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
		}
		return errs
	}
	errs := apimachineryvalidation.ValidateObjectMeta(&vac.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	driver := field.NewPath("driverName")
	switch {
	case vac.DriverName == "":
		errs = append(errs, field.Required(driver, ""))
	case len(vac.DriverName) > validation.DNS1123SubdomainMaxLength:
		errs = append(errs, field.TooLong(driver, "", validation.DNS1123SubdomainMaxLength))
	default:
		for _, msg := range validation.IsQualifiedName(strings.ToLower(vac.DriverName)) {
			errs = append(errs, field.Invalid(driver, vac.DriverName, msg))
		}
	}
	params := field.NewPath("parameters")
	switch {
	case len(vac.Parameters) == 0:
		errs = append(errs, field.Required(params, "must contain at least one key/value pair"))
	case len(vac.Parameters) > maxVolumeAttributesClassParameters:
		errs = append(errs, field.TooLong(params, "", maxVolumeAttributesClassParameters))
	}
	return errs
}
