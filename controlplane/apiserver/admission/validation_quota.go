package admission

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// standardResources is helper.standardResources: the unprefixed resource
// names Kubernetes knows.
var standardResources = sets.New(
	"cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
	"limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "services", "replicationcontrollers",
	"resourcequotas", "secrets", "configmaps", "persistentvolumeclaims", "storage", "requests.storage",
	"services.nodeports", "services.loadbalancers",
)

// standardQuotaResources is helper.standardQuotaResources: what a quota may
// track without a prefix.
var standardQuotaResources = sets.New(
	"cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.storage", "requests.ephemeral-storage",
	"limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "services", "replicationcontrollers",
	"resourcequotas", "secrets", "persistentvolumeclaims", "configmaps", "services.nodeports", "services.loadbalancers",
)

// standardQuotaScopes are the scopes Kubernetes defines.
var standardQuotaScopes = sets.New(
	corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating,
	corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort,
	corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity,
	corev1.ResourceQuotaScopeVolumeAttributesClass,
)

// podScopedQuotaResources are the resources a pod scope (other than
// BestEffort, which allows only pods) may apply to.
var podScopedQuotaResources = sets.New("pods", "cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu", "requests.memory")

func isStandardQuotaResourceName(name string) bool {
	return standardQuotaResources.Has(name) || strings.HasPrefix(name, corev1.DefaultResourceRequestsPrefix+corev1.ResourceHugePagesPrefix)
}

// quotaScopeValidForResource is helper.IsResourceQuotaScopeValidForResource.
func quotaScopeValidForResource(scope corev1.ResourceQuotaScope, name string) bool {
	switch scope {
	case corev1.ResourceQuotaScopeBestEffort:
		return name == "pods"
	case corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeNotBestEffort,
		corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return podScopedQuotaResources.Has(name)
	case corev1.ResourceQuotaScopeVolumeAttributesClass:
		return name == "persistentvolumeclaims" || name == "requests.storage"
	}
	return true
}

// validateResourceName is validateResourceName of pkg/apis/core/validation.
func validateResourceName(name string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(name) {
		errs = append(errs, field.Invalid(fld, name, msg))
	}
	if len(errs) != 0 {
		return errs
	}
	if !strings.Contains(name, "/") && !standardResources.Has(name) && !strings.HasPrefix(name, corev1.ResourceHugePagesPrefix) &&
		!strings.HasPrefix(name, corev1.DefaultResourceRequestsPrefix+corev1.ResourceHugePagesPrefix) {
		errs = append(errs, field.Invalid(fld, name, "must be a standard resource type or fully qualified"))
	}
	return errs
}

// validateQuotaResourceName is ValidateResourceQuotaResourceName.
func validateQuotaResourceName(name string, fld *field.Path) field.ErrorList {
	errs := validateResourceName(name, fld)
	if !strings.Contains(name, "/") && !isStandardQuotaResourceName(name) {
		errs = append(errs, field.Invalid(fld, name, "must be a standard resource for quota"))
	}
	return errs
}

// validateQuotaList validates the names and quantities of a quota's hard or
// used list.
func validateQuotaList(list corev1.ResourceList, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, k := range sets.List(sets.KeySet(list)) {
		p := fld.Key(string(k))
		errs = append(errs, validateQuotaResourceName(string(k), p)...)
		errs = append(errs, validateResourceQuantity(k, list[k], p)...)
	}
	return errs
}

// validateResourceQuota is ValidateResourceQuota (old == nil) and
// ValidateResourceQuotaUpdate.
func validateResourceQuota(q, old *corev1.ResourceQuota) field.ErrorList {
	var oldObj runtime.Object
	if old != nil {
		oldObj = old
	}
	errs := validateMeta(&q.ObjectMeta, oldObj, true, apimachineryvalidation.NameIsDNSSubdomain)
	spec := field.NewPath("spec")
	errs = append(errs, validateQuotaList(q.Spec.Hard, spec.Child("hard"))...)
	errs = append(errs, validateQuotaScopes(&q.Spec, spec)...)
	errs = append(errs, validateQuotaScopeSelector(&q.Spec, spec)...)
	if old == nil {
		errs = append(errs, validateQuotaList(q.Status.Hard, field.NewPath("status", "hard"))...)
		errs = append(errs, validateQuotaList(q.Status.Used, field.NewPath("status", "used"))...)
		return errs
	}
	if !sets.New(q.Spec.Scopes...).Equal(sets.New(old.Spec.Scopes...)) {
		errs = append(errs, field.Invalid(spec.Child("scopes"), q.Spec.Scopes, "field is immutable"))
	}
	return errs
}

// validateResourceQuotaStatusUpdate is ValidateResourceQuotaStatusUpdate.
func validateResourceQuotaStatusUpdate(q, old *corev1.ResourceQuota) field.ErrorList {
	errs := validateMetaUpdateOnly(q, old)
	errs = append(errs, validateQuotaList(q.Status.Hard, field.NewPath("status", "hard"))...)
	return append(errs, validateQuotaList(q.Status.Used, field.NewPath("status", "used"))...)
}

func validateQuotaScopes(spec *corev1.ResourceQuotaSpec, fld *field.Path) field.ErrorList {
	if len(spec.Scopes) == 0 {
		return nil
	}
	var errs field.ErrorList
	p := fld.Child("scopes")
	for _, scope := range spec.Scopes {
		if !standardQuotaScopes.Has(scope) {
			errs = append(errs, field.Invalid(p, spec.Scopes, "unsupported scope"))
		}
		for _, k := range sets.List(sets.KeySet(spec.Hard)) {
			if isStandardQuotaResourceName(string(k)) && !quotaScopeValidForResource(scope, string(k)) {
				errs = append(errs, field.Invalid(p, spec.Scopes, "unsupported scope applied to resource"))
			}
		}
	}
	if conflictingScopes(spec.Scopes) {
		errs = append(errs, field.Invalid(p, spec.Scopes, "conflicting scopes"))
	}
	return errs
}

func conflictingScopes(scopes []corev1.ResourceQuotaScope) bool {
	set := sets.New(scopes...)
	return set.HasAll(corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort) ||
		set.HasAll(corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating)
}

// validateQuotaScopeSelector is validateScopeSelector.
func validateQuotaScopeSelector(spec *corev1.ResourceQuotaSpec, fld *field.Path) field.ErrorList {
	if spec.ScopeSelector == nil {
		return nil
	}
	var errs field.ErrorList
	p := fld.Child("scopeSelector", "matchExpressions")
	var scopes []corev1.ResourceQuotaScope
	for _, req := range spec.ScopeSelector.MatchExpressions {
		if !standardQuotaScopes.Has(req.ScopeName) {
			errs = append(errs, field.Invalid(p.Child("scopeName"), req.ScopeName, "unsupported scope"))
		}
		for _, k := range sets.List(sets.KeySet(spec.Hard)) {
			if isStandardQuotaResourceName(string(k)) && !quotaScopeValidForResource(req.ScopeName, string(k)) {
				errs = append(errs, field.Invalid(p, spec.ScopeSelector, "unsupported scope applied to resource"))
			}
		}
		switch req.ScopeName {
		case corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopeTerminating,
			corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
			if req.Operator != corev1.ScopeSelectorOpExists {
				errs = append(errs, field.Invalid(p.Child("operator"), req.Operator,
					"must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"))
			}
		}
		switch req.Operator {
		case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
			if len(req.Values) == 0 {
				errs = append(errs, field.Required(p.Child("values"), "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
			}
		case corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist:
			if len(req.Values) != 0 {
				errs = append(errs, field.Invalid(p.Child("values"), req.Values, "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
			}
		default:
			errs = append(errs, field.Invalid(p.Child("operator"), req.Operator, "not a valid selector operator"))
		}
		scopes = append(scopes, req.ScopeName)
	}
	if conflictingScopes(scopes) {
		errs = append(errs, field.Invalid(p, spec.ScopeSelector, "conflicting scopes"))
	}
	return errs
}

// standardLimitTypes are the LimitRange item types Kubernetes defines.
var standardLimitTypes = sets.New(corev1.LimitTypePod, corev1.LimitTypeContainer, corev1.LimitTypePersistentVolumeClaim)

// validateLimitRange is ValidateLimitRange, with the metadata rules of an
// update when old is set.
func validateLimitRange(lr *corev1.LimitRange, old runtime.Object) field.ErrorList {
	errs := validateMeta(&lr.ObjectMeta, old, true, apimachineryvalidation.NameIsDNSSubdomain)
	fld := field.NewPath("spec", "limits")
	seen := sets.New[corev1.LimitType]()
	for i := range lr.Spec.Limits {
		p := fld.Index(i)
		limit := &lr.Spec.Limits[i]
		errs = append(errs, validateLimitType(limit.Type, p.Child("type"))...)
		if seen.Has(limit.Type) {
			errs = append(errs, field.Duplicate(p.Child("type"), limit.Type))
		}
		seen.Insert(limit.Type)

		keys := sets.New[corev1.ResourceName]()
		check := func(list corev1.ResourceList, name string) {
			for _, k := range sets.List(sets.KeySet(list)) {
				errs = append(errs, validateLimitRangeResourceName(limit.Type, k, p.Child(name).Key(string(k)))...)
				keys.Insert(k)
			}
		}
		check(limit.Max, "max")
		check(limit.Min, "min")
		if limit.Type == corev1.LimitTypePod {
			if len(limit.Default) > 0 {
				errs = append(errs, field.Forbidden(p.Child("default"), "may not be specified when `type` is 'Pod'"))
			}
			if len(limit.DefaultRequest) > 0 {
				errs = append(errs, field.Forbidden(p.Child("defaultRequest"), "may not be specified when `type` is 'Pod'"))
			}
		} else {
			check(limit.Default, "default")
			check(limit.DefaultRequest, "defaultRequest")
		}
		if limit.Type == corev1.LimitTypePersistentVolumeClaim {
			_, minFound := limit.Min[corev1.ResourceStorage]
			_, maxFound := limit.Max[corev1.ResourceStorage]
			if !minFound && !maxFound {
				errs = append(errs, field.Required(p.Child("limits"), "either minimum or maximum storage value is required, but neither was provided"))
			}
		}
		check(limit.MaxLimitRequestRatio, "maxLimitRequestRatio")
		for _, k := range sets.List(keys) {
			errs = append(errs, validateLimitRangeItemKey(limit, k, p)...)
		}
	}
	return errs
}

func validateLimitType(t corev1.LimitType, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(string(t)) {
		errs = append(errs, field.Invalid(fld, t, msg))
	}
	if len(errs) == 0 && !strings.Contains(string(t), "/") && !standardLimitTypes.Has(t) {
		errs = append(errs, field.Invalid(fld, t, "must be a standard limit type or fully qualified"))
	}
	return errs
}

func validateLimitRangeResourceName(t corev1.LimitType, name corev1.ResourceName, fld *field.Path) field.ErrorList {
	if t == corev1.LimitTypePod || t == corev1.LimitTypeContainer {
		return validateContainerResourceName(name, fld)
	}
	return validateResourceName(string(name), fld)
}

// validateLimitRangeItemKey checks how min, max, default, defaultRequest and
// maxLimitRequestRatio of one resource relate, with Kubernetes' messages.
func validateLimitRangeItemKey(limit *corev1.LimitRangeItem, k corev1.ResourceName, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	minQ, minFound := limit.Min[k]
	maxQ, maxFound := limit.Max[k]
	defQ, defFound := limit.Default[k]
	defReqQ, defReqFound := limit.DefaultRequest[k]
	ratio, ratioFound := limit.MaxLimitRequestRatio[k]
	if limit.Type == corev1.LimitTypePod {
		defFound, defReqFound = false, false
	}
	key := string(k)
	if minFound && maxFound && minQ.Cmp(maxQ) > 0 {
		errs = append(errs, field.Invalid(p.Child("min").Key(key), minQ, fmt.Sprintf("min value %s is greater than max value %s", minQ.String(), maxQ.String())))
	}
	if defReqFound && minFound && minQ.Cmp(defReqQ) > 0 {
		errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(key), defReqQ, fmt.Sprintf("min value %s is greater than default request value %s", minQ.String(), defReqQ.String())))
	}
	if defReqFound && maxFound && defReqQ.Cmp(maxQ) > 0 {
		errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(key), defReqQ, fmt.Sprintf("default request value %s is greater than max value %s", defReqQ.String(), maxQ.String())))
	}
	if defReqFound && defFound && defReqQ.Cmp(defQ) > 0 {
		errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(key), defReqQ, fmt.Sprintf("default request value %s is greater than default limit value %s", defReqQ.String(), defQ.String())))
	}
	if defFound && minFound && minQ.Cmp(defQ) > 0 {
		errs = append(errs, field.Invalid(p.Child("default").Key(key), minQ, fmt.Sprintf("min value %s is greater than default value %s", minQ.String(), defQ.String())))
	}
	if defFound && maxFound && defQ.Cmp(maxQ) > 0 {
		errs = append(errs, field.Invalid(p.Child("default").Key(key), maxQ, fmt.Sprintf("default value %s is greater than max value %s", defQ.String(), maxQ.String())))
	}
	if ratioFound && ratio.Cmp(*resource.NewQuantity(1, resource.DecimalSI)) < 0 {
		errs = append(errs, field.Invalid(p.Child("maxLimitRequestRatio").Key(key), ratio, fmt.Sprintf("ratio %s is less than 1", ratio.String())))
	}
	if ratioFound && minFound && maxFound {
		ratioValue := float64(ratio.Value())
		minValue, maxValue := minQ.Value(), maxQ.Value()
		if ratio.Value() < resource.MaxMilliValue && minValue < resource.MaxMilliValue && maxValue < resource.MaxMilliValue {
			ratioValue = float64(ratio.MilliValue()) / 1000
			minValue, maxValue = minQ.MilliValue(), maxQ.MilliValue()
		}
		ratioLimit := float64(maxValue) / float64(minValue)
		if ratioValue > ratioLimit {
			errs = append(errs, field.Invalid(p.Child("maxLimitRequestRatio").Key(key), ratio, fmt.Sprintf("ratio %s is greater than max/min = %f", ratio.String(), ratioLimit)))
		}
	}
	if !overcommitAllowed(k) && defFound && defReqFound && defQ.Cmp(defReqQ) != 0 {
		errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(key), defReqQ, fmt.Sprintf("default value %s must equal to defaultRequest value %s in %s", defQ.String(), defReqQ.String(), k)))
	}
	return errs
}
