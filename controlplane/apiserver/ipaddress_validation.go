package apiserver

import (
	"context"
	"net/netip"

	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateIPAddress is upstream's IPAddress validation: the name is an IP
// address in canonical form, spec.parentRef names a resource and an object
// and never changes. Users may write IPAddresses (to hold an address, as
// upstream allows); the allocator's repair only touches those it manages.
func validateIPAddress(_ context.Context, subresource string, obj, old runtime.Object) field.ErrorList {
	ip := obj.(*networkingv1.IPAddress)
	var errs field.ErrorList
	name := field.NewPath("metadata", "name")
	if addr, err := netip.ParseAddr(ip.Name); err != nil {
		errs = append(errs, field.Invalid(name, ip.Name, "must be a valid IP address"))
	} else if addr.String() != ip.Name {
		errs = append(errs, field.Invalid(name, ip.Name, "must be in canonical form (\""+addr.String()+"\")"))
	}
	ref := ip.Spec.ParentRef
	path := field.NewPath("spec", "parentRef")
	if ref == nil {
		errs = append(errs, field.Required(path, ""))
	} else {
		if ref.Resource == "" {
			errs = append(errs, field.Required(path.Child("resource"), ""))
		}
		if ref.Name == "" {
			errs = append(errs, field.Required(path.Child("name"), ""))
		}
	}
	if prev, ok := old.(*networkingv1.IPAddress); ok && !apiequality.Semantic.DeepEqual(prev.Spec.ParentRef, ip.Spec.ParentRef) {
		errs = append(errs, field.Invalid(path, ip.Spec.ParentRef, "field is immutable"))
	}
	return errs
}
