package nodeaffinity

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// requiredNodeAffinity is a pod's spec.nodeSelector together with its
// requiredDuringSchedulingIgnoredDuringExecution node affinity, parsed once.
type requiredNodeAffinity struct {
	// labelSelector is spec.nodeSelector, nil when the pod has none.
	labelSelector labels.Selector
	// nodeSelector is the required node affinity, nil when the pod has none.
	nodeSelector *nodeSelector
}

// getRequiredNodeAffinity parses the pod's required node constraints.
func getRequiredNodeAffinity(pod *v1.Pod) requiredNodeAffinity {
	var r requiredNodeAffinity
	if len(pod.Spec.NodeSelector) > 0 {
		r.labelSelector = labels.SelectorFromSet(pod.Spec.NodeSelector)
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		r.nodeSelector = newNodeSelector(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
	}
	return r
}

// match reports whether node satisfies both the nodeSelector and the
// required node affinity. The error collects the terms that failed to parse
// when no term matched.
func (r requiredNodeAffinity) match(node *v1.Node) (bool, error) {
	if r.labelSelector != nil && !r.labelSelector.Matches(labels.Set(node.Labels)) {
		return false, nil
	}
	if r.nodeSelector != nil {
		return r.nodeSelector.match(node)
	}
	return true, nil
}

// nodeSelector is a parsed v1.NodeSelector: its terms are ORed. A term that
// failed to parse never matches; its error is kept until match.
type nodeSelector struct {
	terms []nodeSelectorTerm
}

func newNodeSelector(ns *v1.NodeSelector) *nodeSelector {
	path := field.NewPath("nodeSelectorTerms")
	parsed := make([]nodeSelectorTerm, 0, len(ns.NodeSelectorTerms))
	for i := range ns.NodeSelectorTerms {
		term := &ns.NodeSelectorTerms[i]
		if isEmptyNodeSelectorTerm(term) {
			continue
		}
		parsed = append(parsed, newNodeSelectorTerm(term, path.Index(i)))
	}
	return &nodeSelector{terms: parsed}
}

// match reports whether any term matches node. An empty list of terms
// matches nothing.
func (ns *nodeSelector) match(node *v1.Node) (bool, error) {
	if node == nil {
		return false, nil
	}
	nodeLabels := labels.Set(node.Labels)
	nodeFields := extractNodeFields(node)
	var errs []error
	for i := range ns.terms {
		ok, termErrs := ns.terms[i].match(nodeLabels, nodeFields)
		if len(termErrs) > 0 {
			errs = append(errs, termErrs...)
			continue
		}
		if ok {
			return true, nil
		}
	}
	return false, utilerrors.Flatten(utilerrors.NewAggregate(errs))
}

// preferredSchedulingTerm is one parsed preferred term and its weight.
type preferredSchedulingTerm struct {
	nodeSelectorTerm
	weight int64
}

// preferredSchedulingTerms are a pod's parsed
// preferredDuringSchedulingIgnoredDuringExecution terms.
type preferredSchedulingTerms []preferredSchedulingTerm

// newPreferredSchedulingTerms parses terms, skipping those with weight 0 or
// no requirements, and fails if any term does not parse.
func newPreferredSchedulingTerms(terms []v1.PreferredSchedulingTerm) (preferredSchedulingTerms, error) {
	path := field.NewPath("preferredDuringSchedulingIgnoredDuringExecution")
	var errs []error
	parsed := make(preferredSchedulingTerms, 0, len(terms))
	for i := range terms {
		if terms[i].Weight == 0 || isEmptyNodeSelectorTerm(&terms[i].Preference) {
			continue
		}
		t := preferredSchedulingTerm{nodeSelectorTerm: newNodeSelectorTerm(&terms[i].Preference, path.Index(i).Child("preference")), weight: int64(terms[i].Weight)}
		if len(t.parseErrs) > 0 {
			errs = append(errs, t.parseErrs...)
			continue
		}
		parsed = append(parsed, t)
	}
	if len(errs) > 0 {
		return nil, utilerrors.Flatten(utilerrors.NewAggregate(errs))
	}
	return parsed, nil
}

// score sums the weights of the terms node matches.
func (ts preferredSchedulingTerms) score(node *v1.Node) int64 {
	if len(ts) == 0 {
		return 0
	}
	nodeLabels := labels.Set(node.Labels)
	nodeFields := extractNodeFields(node)
	var sum int64
	for i := range ts {
		if ok, _ := ts[i].match(nodeLabels, nodeFields); ok {
			sum += ts[i].weight
		}
	}
	return sum
}

// nodeSelectorTerm is a parsed v1.NodeSelectorTerm: its matchExpressions
// and matchFields are ANDed.
type nodeSelectorTerm struct {
	matchLabels labels.Selector
	matchFields fields.Selector
	parseErrs   []error
}

func newNodeSelectorTerm(term *v1.NodeSelectorTerm, path *field.Path) nodeSelectorTerm {
	var t nodeSelectorTerm
	if len(term.MatchExpressions) != 0 {
		var errs []error
		t.matchLabels, errs = requirementsAsLabelSelector(term.MatchExpressions, path.Child("matchExpressions"))
		t.parseErrs = append(t.parseErrs, errs...)
	}
	if len(term.MatchFields) != 0 {
		var errs []error
		t.matchFields, errs = requirementsAsFieldSelector(term.MatchFields, path.Child("matchFields"))
		t.parseErrs = append(t.parseErrs, errs...)
	}
	return t
}

// match reports whether the node's labels and fields satisfy the term. A
// node without a name is not checked against matchFields.
func (t *nodeSelectorTerm) match(nodeLabels labels.Set, nodeFields fields.Set) (bool, []error) {
	if t.matchLabels == nil && t.matchFields == nil {
		return false, nil
	}
	if len(t.parseErrs) > 0 {
		return false, t.parseErrs
	}
	if t.matchLabels != nil && !t.matchLabels.Matches(nodeLabels) {
		return false, nil
	}
	if t.matchFields != nil && len(nodeFields) > 0 && !t.matchFields.Matches(nodeFields) {
		return false, nil
	}
	return true, nil
}

var labelSelectorOperators = []v1.NodeSelectorOperator{
	v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn, v1.NodeSelectorOpExists,
	v1.NodeSelectorOpDoesNotExist, v1.NodeSelectorOpGt, v1.NodeSelectorOpLt,
}

// requirementsAsLabelSelector turns matchExpressions into a label selector:
// In, NotIn, Exists, DoesNotExist, Gt and Lt.
func requirementsAsLabelSelector(reqs []v1.NodeSelectorRequirement, path *field.Path) (labels.Selector, []error) {
	selector := labels.NewSelector()
	var errs []error
	for i, r := range reqs {
		p := path.Index(i)
		var op selection.Operator
		switch r.Operator {
		case v1.NodeSelectorOpIn:
			op = selection.In
		case v1.NodeSelectorOpNotIn:
			op = selection.NotIn
		case v1.NodeSelectorOpExists:
			op = selection.Exists
		case v1.NodeSelectorOpDoesNotExist:
			op = selection.DoesNotExist
		case v1.NodeSelectorOpGt:
			op = selection.GreaterThan
		case v1.NodeSelectorOpLt:
			op = selection.LessThan
		default:
			errs = append(errs, field.NotSupported(p.Child("operator"), r.Operator, labelSelectorOperators))
			continue
		}
		req, err := labels.NewRequirement(r.Key, op, r.Values, field.WithPath(p))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		selector = selector.Add(*req)
	}
	return selector, errs
}

// requirementsAsFieldSelector turns matchFields into a field selector. Only
// In and NotIn with exactly one value are valid, as in the API.
func requirementsAsFieldSelector(reqs []v1.NodeSelectorRequirement, path *field.Path) (fields.Selector, []error) {
	var selectors []fields.Selector
	var errs []error
	for i, r := range reqs {
		p := path.Index(i)
		switch r.Operator {
		case v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn:
			if len(r.Values) != 1 {
				errs = append(errs, field.Invalid(p.Child("values"), r.Values, "must have one element"))
				continue
			}
			if r.Operator == v1.NodeSelectorOpIn {
				selectors = append(selectors, fields.OneTermEqualSelector(r.Key, r.Values[0]))
			} else {
				selectors = append(selectors, fields.OneTermNotEqualSelector(r.Key, r.Values[0]))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("operator"), r.Operator, []v1.NodeSelectorOperator{v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn}))
		}
	}
	return fields.AndSelectors(selectors...), errs
}

func isEmptyNodeSelectorTerm(term *v1.NodeSelectorTerm) bool {
	return len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0
}

// extractNodeFields is the set of node fields matchFields may name.
func extractNodeFields(node *v1.Node) fields.Set {
	f := fields.Set{}
	if node.Name != "" {
		f[metav1.ObjectNameField] = node.Name
	}
	return f
}

// RequiredNodeAffinity is a pod's nodeSelector and required node affinity,
// parsed once, for plugins that must honour them (PodTopologySpread's
// nodeAffinityPolicy: Honor).
type RequiredNodeAffinity struct{ r requiredNodeAffinity }

// GetRequiredNodeAffinity parses the pod's required node constraints.
func GetRequiredNodeAffinity(pod *v1.Pod) RequiredNodeAffinity {
	return RequiredNodeAffinity{r: getRequiredNodeAffinity(pod)}
}

// Match reports whether node satisfies the pod's nodeSelector and required
// node affinity; a term that fails to parse never matches.
func (r RequiredNodeAffinity) Match(node *v1.Node) bool {
	ok, _ := r.r.match(node)
	return ok
}
