package apiserver

import (
	"context"
	"fmt"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/util/shufflesharding"
	"k8s.io/utils/ptr"
)

// The flowcontrol.apiserver.k8s.io/v1 defaults, as kube-apiserver's
// scheme sets them.
const (
	defaultMatchingPrecedence       = 1000
	defaultNominalConcurrencyShares = 30
	defaultQueues                   = 64
	defaultHandSize                 = 8
	defaultQueueLengthLimit         = 50
)

// defaultFlowControl fills in what kube-apiserver's defaulting fills in a
// FlowSchema or a PriorityLevelConfiguration: the matching precedence, a
// limited level's nominal concurrency shares and lendable percent, the
// queuing parameters, an exempt level's (zero) shares and percent.
func defaultFlowControl(obj runtime.Object) {
	switch o := obj.(type) {
	case *flowcontrolv1.FlowSchema:
		if o.Spec.MatchingPrecedence == 0 {
			o.Spec.MatchingPrecedence = defaultMatchingPrecedence
		}
	case *flowcontrolv1.PriorityLevelConfiguration:
		if o.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt && o.Spec.Exempt == nil && o.Spec.Limited == nil {
			o.Spec.Exempt = &flowcontrolv1.ExemptPriorityLevelConfiguration{}
		}
		if e := o.Spec.Exempt; e != nil {
			if e.NominalConcurrencyShares == nil {
				e.NominalConcurrencyShares = ptr.To[int32](0)
			}
			if e.LendablePercent == nil {
				e.LendablePercent = ptr.To[int32](0)
			}
		}
		if l := o.Spec.Limited; l != nil {
			if l.NominalConcurrencyShares == nil {
				l.NominalConcurrencyShares = ptr.To[int32](defaultNominalConcurrencyShares)
			}
			if l.LendablePercent == nil {
				l.LendablePercent = ptr.To[int32](0)
			}
			if q := l.LimitResponse.Queuing; q != nil {
				if q.Queues == 0 {
					q.Queues = defaultQueues
				}
				if q.HandSize == 0 {
					q.HandSize = defaultHandSize
				}
				if q.QueueLengthLimit == 0 {
					q.QueueLengthLimit = defaultQueueLengthLimit
				}
			}
		}
	}
}

// validateFlowSchema is kube-apiserver's validation of a FlowSchema's
// metadata and spec (a status write checks the metadata only).
func validateFlowSchema(_ context.Context, subresource string, obj, old runtime.Object) field.ErrorList {
	fs := obj.(*flowcontrolv1.FlowSchema)
	errs := validateClusterMeta(&fs.ObjectMeta, old)
	if subresource == "status" {
		return errs
	}
	return append(errs, validateFlowSchemaSpec(&fs.Spec, field.NewPath("spec"))...)
}

func validateFlowSchemaSpec(spec *flowcontrolv1.FlowSchemaSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.MatchingPrecedence <= 0 || spec.MatchingPrecedence > 10000 {
		errs = append(errs, field.Invalid(p.Child("matchingPrecedence"), spec.MatchingPrecedence, "must be between 1 and 10000, inclusive"))
	}
	if spec.PriorityLevelConfiguration.Name == "" {
		errs = append(errs, field.Required(p.Child("priorityLevelConfiguration", "name"), "must reference a priority level"))
	} else {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(spec.PriorityLevelConfiguration.Name, false) {
			errs = append(errs, field.Invalid(p.Child("priorityLevelConfiguration", "name"), spec.PriorityLevelConfiguration.Name, msg))
		}
	}
	if d := spec.DistinguisherMethod; d != nil && d.Type != flowcontrolv1.FlowDistinguisherMethodByUserType && d.Type != flowcontrolv1.FlowDistinguisherMethodByNamespaceType {
		errs = append(errs, field.NotSupported(p.Child("distinguisherMethod", "type"), d.Type, []string{string(flowcontrolv1.FlowDistinguisherMethodByUserType), string(flowcontrolv1.FlowDistinguisherMethodByNamespaceType)}))
	}
	for i, rule := range spec.Rules {
		rp := p.Child("rules").Index(i)
		if len(rule.Subjects) == 0 {
			errs = append(errs, field.Required(rp.Child("subjects"), "each rule must have at least one subject"))
		}
		for j, s := range rule.Subjects {
			errs = append(errs, validateFlowSubject(s, rp.Child("subjects").Index(j))...)
		}
		if len(rule.ResourceRules) == 0 && len(rule.NonResourceRules) == 0 {
			errs = append(errs, field.Required(rp, "at least one of resourceRules and nonResourceRules has to be non-empty"))
		}
		for j, r := range rule.ResourceRules {
			errs = append(errs, validateResourcePolicyRule(r, rp.Child("resourceRules").Index(j))...)
		}
		for j, r := range rule.NonResourceRules {
			np := rp.Child("nonResourceRules").Index(j)
			if len(r.Verbs) == 0 {
				errs = append(errs, field.Required(np.Child("verbs"), "verbs must contain at least one value"))
			}
			if len(r.NonResourceURLs) == 0 {
				errs = append(errs, field.Required(np.Child("nonResourceURLs"), "nonResourceURLs must contain at least one value"))
			}
		}
	}
	return errs
}

// validateFlowSubject checks that a subject's kind names the one member it
// sets, as the flow matcher reads that member.
func validateFlowSubject(s flowcontrolv1.Subject, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch s.Kind {
	case flowcontrolv1.SubjectKindUser:
		if s.User == nil {
			errs = append(errs, field.Required(p.Child("user"), "user is required when subject kind is 'User'"))
		} else if s.User.Name == "" {
			errs = append(errs, field.Required(p.Child("user", "name"), ""))
		}
	case flowcontrolv1.SubjectKindGroup:
		if s.Group == nil {
			errs = append(errs, field.Required(p.Child("group"), "group is required when subject kind is 'Group'"))
		} else if s.Group.Name == "" {
			errs = append(errs, field.Required(p.Child("group", "name"), ""))
		}
	case flowcontrolv1.SubjectKindServiceAccount:
		if s.ServiceAccount == nil {
			errs = append(errs, field.Required(p.Child("serviceAccount"), "serviceAccount is required when subject kind is 'ServiceAccount'"))
		} else {
			if s.ServiceAccount.Name == "" {
				errs = append(errs, field.Required(p.Child("serviceAccount", "name"), ""))
			}
			if s.ServiceAccount.Namespace == "" {
				errs = append(errs, field.Required(p.Child("serviceAccount", "namespace"), ""))
			}
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("kind"), s.Kind, []string{string(flowcontrolv1.SubjectKindServiceAccount), string(flowcontrolv1.SubjectKindGroup), string(flowcontrolv1.SubjectKindUser)}))
	}
	if s.Kind != flowcontrolv1.SubjectKindUser && s.User != nil {
		errs = append(errs, field.Forbidden(p.Child("user"), "user is forbidden when subject kind is not 'User'"))
	}
	if s.Kind != flowcontrolv1.SubjectKindGroup && s.Group != nil {
		errs = append(errs, field.Forbidden(p.Child("group"), "group is forbidden when subject kind is not 'Group'"))
	}
	if s.Kind != flowcontrolv1.SubjectKindServiceAccount && s.ServiceAccount != nil {
		errs = append(errs, field.Forbidden(p.Child("serviceAccount"), "serviceAccount is forbidden when subject kind is not 'ServiceAccount'"))
	}
	return errs
}

func validateResourcePolicyRule(r flowcontrolv1.ResourcePolicyRule, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(r.Verbs) == 0 {
		errs = append(errs, field.Required(p.Child("verbs"), "verbs must contain at least one value"))
	}
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(r.Resources) == 0 {
		errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
	}
	if len(r.Namespaces) == 0 && !r.ClusterScope {
		errs = append(errs, field.Required(p.Child("namespaces"), "resource rules that are not cluster scoped must supply at least one namespace"))
	}
	return errs
}

// validatePriorityLevelConfiguration is kube-apiserver's validation of a
// PriorityLevelConfiguration's metadata and spec (a status write checks
// the metadata only): its type and the one of limited and exempt that goes
// with it, the shares and percentages, the limit response and its queuing
// (hand size no larger than the queues, within 60 bits of entropy for
// shuffle sharding); "exempt" is the one exempt level.
func validatePriorityLevelConfiguration(_ context.Context, subresource string, obj, old runtime.Object) field.ErrorList {
	pl := obj.(*flowcontrolv1.PriorityLevelConfiguration)
	errs := validateClusterMeta(&pl.ObjectMeta, old)
	if subresource == "status" {
		return errs
	}
	p := field.NewPath("spec")
	switch pl.Spec.Type {
	case flowcontrolv1.PriorityLevelEnablementExempt:
		if pl.Spec.Limited != nil {
			errs = append(errs, field.Forbidden(p.Child("limited"), "must be nil if the type is not Limited"))
		}
		if pl.Name != flowcontrolv1.PriorityLevelConfigurationNameExempt {
			errs = append(errs, field.Invalid(p.Child("type"), pl.Spec.Type, "type 'Exempt' is a reserved type for the exempt priority level"))
		}
		if e := pl.Spec.Exempt; e != nil {
			errs = append(errs, validateShares(e.NominalConcurrencyShares, e.LendablePercent, nil, p.Child("exempt"))...)
		}
	case flowcontrolv1.PriorityLevelEnablementLimited:
		if pl.Spec.Exempt != nil {
			errs = append(errs, field.Forbidden(p.Child("exempt"), "must be nil if the type is Limited"))
		}
		if pl.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt {
			errs = append(errs, field.Invalid(p.Child("type"), pl.Spec.Type, "the exempt priority level must be of type 'Exempt'"))
		}
		l := pl.Spec.Limited
		if l == nil {
			errs = append(errs, field.Required(p.Child("limited"), "must not be empty when type is Limited"))
			break
		}
		lp := p.Child("limited")
		errs = append(errs, validateShares(l.NominalConcurrencyShares, l.LendablePercent, l.BorrowingLimitPercent, lp)...)
		errs = append(errs, validateLimitResponse(l.LimitResponse, lp.Child("limitResponse"))...)
	case "":
		errs = append(errs, field.Required(p.Child("type"), "must be 'Exempt' or 'Limited'"))
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), pl.Spec.Type, []string{string(flowcontrolv1.PriorityLevelEnablementExempt), string(flowcontrolv1.PriorityLevelEnablementLimited)}))
	}
	return errs
}

func validateShares(shares, lendable, borrowing *int32, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if shares != nil && *shares < 0 {
		errs = append(errs, field.Invalid(p.Child("nominalConcurrencyShares"), *shares, "must be a non-negative integer"))
	}
	if lendable != nil && (*lendable < 0 || *lendable > 100) {
		errs = append(errs, field.Invalid(p.Child("lendablePercent"), *lendable, "must be between 0 and 100, inclusive"))
	}
	if borrowing != nil && *borrowing < 0 {
		errs = append(errs, field.Invalid(p.Child("borrowingLimitPercent"), *borrowing, "if specified, must be a non-negative integer"))
	}
	return errs
}

func validateLimitResponse(r flowcontrolv1.LimitResponse, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch r.Type {
	case flowcontrolv1.LimitResponseTypeReject:
		if r.Queuing != nil {
			errs = append(errs, field.Forbidden(p.Child("queuing"), "must be nil if limited.limitResponse.type is not Limited"))
		}
	case flowcontrolv1.LimitResponseTypeQueue:
		q := r.Queuing
		if q == nil {
			errs = append(errs, field.Required(p.Child("queuing"), "must not be empty if limited.limitResponse.type is Limited"))
			break
		}
		qp := p.Child("queuing")
		if q.QueueLengthLimit <= 0 {
			errs = append(errs, field.Invalid(qp.Child("queueLengthLimit"), q.QueueLengthLimit, "must be positive"))
		}
		if q.Queues <= 0 {
			errs = append(errs, field.Invalid(qp.Child("queues"), q.Queues, "must be positive"))
		}
		if q.HandSize <= 0 {
			errs = append(errs, field.Invalid(qp.Child("handSize"), q.HandSize, "must be positive"))
		} else if q.HandSize > q.Queues {
			errs = append(errs, field.Invalid(qp.Child("handSize"), q.HandSize, fmt.Sprintf("should not be greater than queues (%d)", q.Queues)))
		} else if bits := shufflesharding.RequiredEntropyBits(int(q.Queues), int(q.HandSize)); bits > shufflesharding.MaxHashBits {
			errs = append(errs, field.Invalid(qp.Child("handSize"), q.HandSize, fmt.Sprintf("required entropy bits of deckSize %d and handSize %d should not be greater than %d", q.Queues, q.HandSize, shufflesharding.MaxHashBits)))
		}
	case "":
		errs = append(errs, field.Required(p.Child("type"), "must be 'Queue' or 'Reject'"))
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), r.Type, []string{string(flowcontrolv1.LimitResponseTypeQueue), string(flowcontrolv1.LimitResponseTypeReject)}))
	}
	return errs
}

// sanitizeFlowControl is what the flow controller's informers keep of an
// object: defaulted as a write would be, and a FlowSchema that fails
// validation (stored before this server validated them) with no rules, so
// that it matches nothing rather than stop the controller.
func sanitizeFlowControl(obj any) (any, error) {
	switch o := obj.(type) {
	case *flowcontrolv1.FlowSchema:
		defaultFlowControl(o)
		if len(validateFlowSchemaSpec(&o.Spec, field.NewPath("spec"))) > 0 {
			o.Spec.Rules = nil
		}
	case *flowcontrolv1.PriorityLevelConfiguration:
		defaultFlowControl(o)
	}
	return obj, nil
}

// validateClusterMeta checks a cluster-scoped flowcontrol object's metadata
// on create (old nil) and on update.
func validateClusterMeta(m *metav1.ObjectMeta, old runtime.Object) field.ErrorList {
	p := field.NewPath("metadata")
	switch o := old.(type) {
	case *flowcontrolv1.FlowSchema:
		return apimachineryvalidation.ValidateObjectMetaUpdate(m, &o.ObjectMeta, p)
	case *flowcontrolv1.PriorityLevelConfiguration:
		return apimachineryvalidation.ValidateObjectMetaUpdate(m, &o.ObjectMeta, p)
	}
	return apimachineryvalidation.ValidateObjectMeta(m, false, apimachineryvalidation.NameIsDNSSubdomain, p)
}
