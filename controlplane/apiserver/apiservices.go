package apiserver

import (
	"context"
	"fmt"
	"slices"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

func init() { utilruntime.Must(apiregistrationv1.AddToScheme(scheme.Scheme)) }

// AutomanagedLabel marks the APIServices the API server registers for its
// own group versions, as kube-apiserver's autoregister controller does.
const AutomanagedLabel = "kube-aggregator.kubernetes.io/automanaged"

// apiServiceResources is apiregistration.k8s.io/v1 APIService, the
// aggregation layer's registry: the API server registers one local
// APIService per group version it serves (Available, "Local"), as
// kube-apiserver does. One that names a Service is proxied to that
// Service's extension API server (aggregator.go), whose availability
// kube-aggregator's controller writes into its status.
func apiServiceResources() []*resource {
	return []*resource{{
		GVK: apiregistrationv1.SchemeGroupVersion.WithKind("APIService"), Resource: "apiservices", Singular: "apiservice",
		Categories: []string{"api-extensions"},
		Verbs:      verbsAll, StorageResource: "apiregistration.k8s.io/apiservices", HasStatus: true,
		Subresources: []*subresource{statusSubresource()},
		PrepareCreate: func(_ context.Context, obj runtime.Object) {
			a := obj.(*apiregistrationv1.APIService)
			a.Status = apiServiceStatus(a)
		},
		PrepareUpdate: func(_ context.Context, old, next runtime.Object) {
			a := next.(*apiregistrationv1.APIService)
			if !apiequality.Semantic.DeepEqual(a.Spec.Service, old.(*apiregistrationv1.APIService).Spec.Service) {
				a.Status = apiServiceStatus(a)
			}
		},
		Validate: validateAPIService,
	}}
}

// apiServiceStatus is a new APIService's status, as kube-aggregator's
// strategy makes it: a local one is Available at once; one served by an
// extension API server has no condition until the availability controller
// has probed it.
func apiServiceStatus(a *apiregistrationv1.APIService) apiregistrationv1.APIServiceStatus {
	if a.Spec.Service != nil {
		return apiregistrationv1.APIServiceStatus{}
	}
	return apiregistrationv1.APIServiceStatus{Conditions: []apiregistrationv1.APIServiceCondition{{
		Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionTrue, LastTransitionTime: metav1.Now(),
		Reason: "Local", Message: "Local APIServices are always available",
	}}}
}

// validateAPIService is kube-aggregator's validation of an APIService: its
// name is version.group, the priorities in range, and a local one (no
// Service) has no CA bundle or insecureSkipTLSVerify.
func validateAPIService(_ context.Context, sub string, obj, old runtime.Object) field.ErrorList {
	a := obj.(*apiregistrationv1.APIService)
	var errs field.ErrorList
	if prev, ok := old.(*apiregistrationv1.APIService); ok {
		errs = apimachineryvalidation.ValidateObjectMetaUpdate(&a.ObjectMeta, &prev.ObjectMeta, field.NewPath("metadata"))
		if sub == "status" {
			return errs
		}
	}
	want := a.Spec.Version + "." + a.Spec.Group
	errs = append(errs, apimachineryvalidation.ValidateObjectMeta(&a.ObjectMeta, false, func(name string, _ bool) []string {
		if msgs := path.ValidatePathSegmentName(name, false); len(msgs) > 0 {
			return msgs
		}
		if name != want {
			return []string{fmt.Sprintf("must be `spec.version+\".\"+spec.group`: %q", want)}
		}
		return nil
	}, field.NewPath("metadata"))...)
	spec := field.NewPath("spec")
	if a.Spec.Group == "" && a.Spec.Version != "v1" {
		errs = append(errs, field.Required(spec.Child("group"), "only v1 may have an empty group and it better be legacy kube"))
	}
	if a.Spec.Group != "" {
		for _, msg := range validation.IsDNS1123Subdomain(a.Spec.Group) {
			errs = append(errs, field.Invalid(spec.Child("group"), a.Spec.Group, msg))
		}
	}
	for _, msg := range validation.IsDNS1035Label(a.Spec.Version) {
		errs = append(errs, field.Invalid(spec.Child("version"), a.Spec.Version, msg))
	}
	if p := a.Spec.GroupPriorityMinimum; p <= 0 || p > 20000 {
		errs = append(errs, field.Invalid(spec.Child("groupPriorityMinimum"), p, "must be positive and less than 20000"))
	}
	if p := a.Spec.VersionPriority; p <= 0 || p > 1000 {
		errs = append(errs, field.Invalid(spec.Child("versionPriority"), p, "must be positive and less than 1000"))
	}
	svc := a.Spec.Service
	if svc == nil {
		if len(a.Spec.CABundle) != 0 {
			errs = append(errs, field.Invalid(spec.Child("caBundle"), fmt.Sprintf("%d bytes", len(a.Spec.CABundle)), "local APIServices may not have a caBundle"))
		}
		if a.Spec.InsecureSkipTLSVerify {
			errs = append(errs, field.Invalid(spec.Child("insecureSkipTLSVerify"), a.Spec.InsecureSkipTLSVerify, "local APIServices may not have insecureSkipTLSVerify"))
		}
		return errs
	}
	if svc.Namespace == "" {
		errs = append(errs, field.Required(spec.Child("service", "namespace"), ""))
	}
	if svc.Name == "" {
		errs = append(errs, field.Required(spec.Child("service", "name"), ""))
	}
	if svc.Port != nil {
		if msgs := validation.IsValidPortNum(int(*svc.Port)); len(msgs) > 0 {
			errs = append(errs, field.Invalid(spec.Child("service", "port"), *svc.Port, "port is not valid: "+msgs[0]))
		}
	}
	if a.Spec.InsecureSkipTLSVerify && len(a.Spec.CABundle) > 0 {
		errs = append(errs, field.Invalid(spec.Child("insecureSkipTLSVerify"), a.Spec.InsecureSkipTLSVerify, "may not be true if caBundle is present"))
	}
	return errs
}

// apiServicePriority is a group version's place in discovery.
type apiServicePriority struct{ group, version int32 }

// apiServicePriorities are kube-apiserver's priorities of the group
// versions Glassplane serves (cmd/kube-apiserver/app/aggregator.go and
// DefaultGenericAPIServicePriorities); a group version not listed gets no
// APIService, as upstream skips it.
var apiServicePriorities = map[schema.GroupVersion]apiServicePriority{
	{Group: "", Version: "v1"}:                             {18000, 1},
	{Group: "events.k8s.io", Version: "v1"}:                {17750, 15},
	{Group: "authentication.k8s.io", Version: "v1"}:        {17700, 15},
	{Group: "authorization.k8s.io", Version: "v1"}:         {17600, 15},
	{Group: "certificates.k8s.io", Version: "v1"}:          {17300, 15},
	{Group: "rbac.authorization.k8s.io", Version: "v1"}:    {17000, 15},
	{Group: "apiextensions.k8s.io", Version: "v1"}:         {16700, 15},
	{Group: "admissionregistration.k8s.io", Version: "v1"}: {16700, 15},
	{Group: "coordination.k8s.io", Version: "v1"}:          {16500, 15},
	{Group: "discovery.k8s.io", Version: "v1"}:             {16200, 15},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}: {16100, 21},
	{Group: "apiregistration.k8s.io", Version: "v1"}:       {18000, 15},
	{Group: "storagemigration.k8s.io", Version: "v1"}:      {15800, 15},
	{Group: "apps", Version: "v1"}:                         {17800, 15},
	{Group: "autoscaling", Version: "v1"}:                  {17500, 15},
	{Group: "autoscaling", Version: "v2"}:                  {17500, 30},
	{Group: "batch", Version: "v1"}:                        {17400, 15},
	{Group: "networking.k8s.io", Version: "v1"}:            {17200, 15},
	{Group: "policy", Version: "v1"}:                       {17100, 15},
	{Group: "storage.k8s.io", Version: "v1"}:               {16800, 15},
	{Group: "scheduling.k8s.io", Version: "v1"}:            {16600, 15},
	{Group: "node.k8s.io", Version: "v1"}:                  {16300, 15},
	{Group: "resource.k8s.io", Version: "v1"}:              {16200, 21},
}

// bootstrapAPIServices registers a local APIService, when it is missing,
// for each group version the server serves that upstream gives a
// priority, as kube-apiserver's autoregister controller does on start.
func (s *Server) bootstrapAPIServices(ctx context.Context) error {
	res := s.byPath[apiregistrationv1.SchemeGroupVersion.WithResource("apiservices")]
	var gvs []schema.GroupVersion
	for _, r := range s.resources {
		gv := r.GVK.GroupVersion()
		if _, ok := apiServicePriorities[gv]; ok && !slices.Contains(gvs, gv) {
			gvs = append(gvs, gv)
		}
	}
	for _, gv := range gvs {
		p := apiServicePriorities[gv]
		a := &apiregistrationv1.APIService{
			ObjectMeta: metav1.ObjectMeta{Name: gv.Version + "." + gv.Group, Labels: map[string]string{AutomanagedLabel: "onstart"}},
			Spec:       apiregistrationv1.APIServiceSpec{Group: gv.Group, Version: gv.Version, GroupPriorityMinimum: p.group, VersionPriority: p.version},
		}
		prepareForCreate(res, a)
		_, err := s.createInStore(ctx, res, a)
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("failed to register apiservice %q: %w", a.Name, err)
		}
	}
	return nil
}

// apiServicePrinter is kube-aggregator's table of APIServices: the Service
// ("Local" for the API server's own) and whether it is available, with the
// reason when not.
var apiServicePrinter = printer{
	columns: []metav1.TableColumnDefinition{nameCol,
		col("Service", "string", "The reference to the service that hosts this API endpoint.", 0),
		col("Available", "string", "Whether this service is available.", 0),
		ageCol,
	},
	cells: func(obj runtime.Object) []any {
		a := obj.(*apiregistrationv1.APIService)
		service := "Local"
		if a.Spec.Service != nil {
			service = a.Spec.Service.Namespace + "/" + a.Spec.Service.Name
		}
		available := "Unknown"
		for _, c := range a.Status.Conditions {
			if c.Type != apiregistrationv1.Available {
				continue
			}
			available = string(c.Status)
			if c.Status != apiregistrationv1.ConditionTrue {
				available += " (" + c.Reason + ")"
			}
		}
		return []any{a.Name, service, available, age(a.CreationTimestamp)}
	},
}
