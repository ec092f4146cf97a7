package quota

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	resourcehelper "k8s.io/component-helpers/resource"
)

// ListFunc lists the objects of one resource in a namespace, for usage
// stats; nil where only one object's usage is needed (admission).
type ListFunc func(gr schema.GroupResource) generic.ListFuncByNamespace

var (
	podsGR     = schema.GroupResource{Resource: "pods"}
	servicesGR = schema.GroupResource{Resource: "services"}
	claimsGR   = schema.GroupResource{Resource: "persistentvolumeclaims"}
)

// legacyAliases are the object counts a quota may name without count/, as
// upstream's legacyObjectCountAliases.
var legacyAliases = map[schema.GroupResource]corev1.ResourceName{
	{Resource: "configmaps"}:             corev1.ResourceConfigMaps,
	{Resource: "resourcequotas"}:         corev1.ResourceQuotas,
	{Resource: "replicationcontrollers"}: corev1.ResourceReplicationControllers,
	{Resource: "secrets"}:                corev1.ResourceSecrets,
}

// NewRegistry returns the evaluators of pods, Services and claims and the
// object counts with legacy names; list (may be nil) feeds UsageStats.
func NewRegistry(list ListFunc, now func() time.Time) quota.Registry {
	lf := func(gr schema.GroupResource) generic.ListFuncByNamespace {
		if list == nil {
			return func(string) ([]runtime.Object, error) { return nil, fmt.Errorf("no lister for %s", gr) }
		}
		return list(gr)
	}
	evaluators := []quota.Evaluator{
		&podEvaluator{list: lf(podsGR), now: now},
		&serviceEvaluator{list: lf(servicesGR)},
		&claimEvaluator{list: lf(claimsGR)},
	}
	for gr, alias := range legacyAliases {
		evaluators = append(evaluators, generic.NewObjectCountEvaluator(gr, lf(gr), alias))
	}
	return generic.NewRegistry(evaluators)
}

// Evaluator returns the registry's evaluator of gr, or an object count
// evaluator for it (count/<resource>.<group>), as the quota admission
// plugin makes one for resources without their own.
func Evaluator(r quota.Registry, gr schema.GroupResource, list ListFunc) quota.Evaluator {
	if e := r.Get(gr); e != nil {
		return e
	}
	var lf generic.ListFuncByNamespace
	if list != nil {
		lf = list(gr)
	}
	e := generic.NewObjectCountEvaluator(gr, lf, "")
	r.Add(e)
	return e
}

// podResources are what the pod evaluator tracks, besides the hugepages
// and extended requests it matches by prefix.
var podResources = []corev1.ResourceName{
	"count/pods", corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage, corev1.ResourcePods,
}

// validationSet are the resources every container must state once a quota
// tracks them (a backward-compatibility rule of upstream's).
var validationSet = sets.New[corev1.ResourceName](
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory,
)

type podEvaluator struct {
	list generic.ListFuncByNamespace
	now  func() time.Time
}

var _ quota.Evaluator = &podEvaluator{}

func (p *podEvaluator) GroupResource() schema.GroupResource { return podsGR }

// Handles is upstream's: creates, updates that move the pod in or out of
// the Terminating scope, and resizes.
func (p *podEvaluator) Handles(a admission.Attributes) bool {
	op := a.GetOperation()
	switch a.GetSubresource() {
	case "":
		if op == admission.Update {
			pod, ok1 := a.GetObject().(*corev1.Pod)
			old, ok2 := a.GetOldObject().(*corev1.Pod)
			return ok1 && ok2 && isTerminating(pod) != isTerminating(old)
		}
		return op == admission.Create
	case "resize":
		return op == admission.Update
	}
	return false
}

// Constraints is podEvaluator.Constraints: each container must state the
// compute resources a quota tracks.
func (p *podEvaluator) Constraints(required []corev1.ResourceName, item runtime.Object) error {
	pod, ok := item.(*corev1.Pod)
	if !ok {
		return fmt.Errorf("unexpected input object %v", item)
	}
	requiredSet := sets.New(required...).Intersection(validationSet)
	missing := map[corev1.ResourceName]sets.Set[string]{}
	check := func(c *corev1.Container) {
		have := sets.New(quota.ResourceNames(computeUsage(c.Resources.Requests, c.Resources.Limits))...)
		for _, name := range sets.List(requiredSet.Difference(have)) {
			if missing[name] == nil {
				missing[name] = sets.New[string]()
			}
			missing[name].Insert(c.Name)
		}
	}
	for i := range pod.Spec.Containers {
		check(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		check(&pod.Spec.InitContainers[i])
	}
	if len(missing) == 0 {
		return nil
	}
	var msgs []string
	for _, name := range sets.List(sets.KeySet(missing)) {
		msgs = append(msgs, fmt.Sprintf("%s for: %s", name, strings.Join(sets.List(missing[name]), ",")))
	}
	return fmt.Errorf("must specify %s", strings.Join(msgs, "; "))
}

func (p *podEvaluator) Matches(q *corev1.ResourceQuota, item runtime.Object) (bool, error) {
	return generic.Matches(q, item, p.MatchingResources, podMatchesScope)
}

func (p *podEvaluator) MatchingResources(input []corev1.ResourceName) []corev1.ResourceName {
	result := quota.Intersection(input, podResources)
	for _, name := range input {
		s := string(name)
		if strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix+corev1.ResourceHugePagesPrefix) || strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) ||
			(strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) && strings.Contains(s, "/") && !strings.HasPrefix(s, "count/")) {
			result = append(result, name)
		}
	}
	return result
}

func (p *podEvaluator) MatchingScopes(item runtime.Object, selectors []corev1.ScopedResourceSelectorRequirement) ([]corev1.ScopedResourceSelectorRequirement, error) {
	var matched []corev1.ScopedResourceSelectorRequirement
	for _, s := range selectors {
		ok, err := podMatchesScope(s, item)
		if err != nil {
			return nil, err
		}
		if ok {
			matched = append(matched, s)
		}
	}
	return matched, nil
}

func (p *podEvaluator) UncoveredQuotaScopes(limited, matched []corev1.ScopedResourceSelectorRequirement) ([]corev1.ScopedResourceSelectorRequirement, error) {
	var uncovered []corev1.ScopedResourceSelectorRequirement
	for _, l := range limited {
		found := false
		for _, m := range matched {
			if m.ScopeName == l.ScopeName && m.Operator == l.Operator {
				found = true
				break
			}
		}
		if !found {
			uncovered = append(uncovered, l)
		}
	}
	return uncovered, nil
}

// Usage is PodUsageFunc: the object count always, the compute resources
// while the pod is not terminal.
func (p *podEvaluator) Usage(item runtime.Object) (corev1.ResourceList, error) {
	pod, ok := item.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("unexpected input object %v", item)
	}
	result := corev1.ResourceList{"count/pods": *resource.NewQuantity(1, resource.DecimalSI)}
	if !countsCompute(pod, p.now()) {
		return result, nil
	}
	opts := resourcehelper.PodResourcesOptions{}
	return quota.Add(result, computeUsage(resourcehelper.PodRequests(pod, opts), resourcehelper.PodLimits(pod, opts))), nil
}

func (p *podEvaluator) UsageStats(options quota.UsageStatsOptions) (quota.UsageStats, error) {
	return generic.CalculateUsageStats(options, p.list, podMatchesScope, p.Usage)
}

// countsCompute is QuotaV1Pod: a pod that finished, or whose deletion grace
// period is over, no longer counts its compute resources.
func countsCompute(pod *corev1.Pod, now time.Time) bool {
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return false
	}
	if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil {
		grace := time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
		if now.After(pod.DeletionTimestamp.Time.Add(grace)) {
			return false
		}
	}
	return true
}

// computeUsage is podComputeUsageHelper.
func computeUsage(requests, limits corev1.ResourceList) corev1.ResourceList {
	result := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(1, resource.DecimalSI)}
	pairs := []struct{ name, request, limit corev1.ResourceName }{
		{corev1.ResourceCPU, corev1.ResourceRequestsCPU, corev1.ResourceLimitsCPU},
		{corev1.ResourceMemory, corev1.ResourceRequestsMemory, corev1.ResourceLimitsMemory},
		{corev1.ResourceEphemeralStorage, corev1.ResourceRequestsEphemeralStorage, corev1.ResourceLimitsEphemeralStorage},
	}
	for _, pr := range pairs {
		if q, ok := requests[pr.name]; ok {
			result[pr.name] = q
			result[pr.request] = q
		}
		if q, ok := limits[pr.name]; ok {
			result[pr.limit] = q
		}
	}
	for name, q := range requests {
		s := string(name)
		if strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) {
			result[name] = q
			result[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+s)] = q
		} else if strings.Contains(s, "/") && !strings.Contains(s, "kubernetes.io/") {
			result[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+s)] = q
		}
	}
	return result
}

// podMatchesScope is podMatchesScopeFunc.
func podMatchesScope(sel corev1.ScopedResourceSelectorRequirement, obj runtime.Object) (bool, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return false, fmt.Errorf("unexpected input object %v", obj)
	}
	switch sel.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return isTerminating(pod), nil
	case corev1.ResourceQuotaScopeNotTerminating:
		return !isTerminating(pod), nil
	case corev1.ResourceQuotaScopeBestEffort:
		return isBestEffort(pod), nil
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !isBestEffort(pod), nil
	case corev1.ResourceQuotaScopePriorityClass:
		if sel.Operator == corev1.ScopeSelectorOpExists {
			return pod.Spec.PriorityClassName != "", nil
		}
		op := map[corev1.ScopeSelectorOperator]selection.Operator{
			corev1.ScopeSelectorOpIn: selection.In, corev1.ScopeSelectorOpNotIn: selection.NotIn,
			corev1.ScopeSelectorOpDoesNotExist: selection.DoesNotExist,
		}[sel.Operator]
		if op == "" {
			return false, fmt.Errorf("%q is not a valid scope selector operator", sel.Operator)
		}
		req, err := labels.NewRequirement(string(sel.ScopeName), op, sel.Values)
		if err != nil {
			return false, err
		}
		set := labels.Set{}
		if pod.Spec.PriorityClassName != "" {
			set[string(sel.ScopeName)] = pod.Spec.PriorityClassName
		}
		return labels.NewSelector().Add(*req).Matches(set), nil
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return usesCrossNamespaceAffinity(pod), nil
	}
	return false, nil
}

func isTerminating(pod *corev1.Pod) bool {
	return pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
}

// isBestEffort reports whether the pod's QoS class is BestEffort: no
// container requests or limits cpu or memory.
func isBestEffort(pod *corev1.Pod) bool {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass == corev1.PodQOSBestEffort
	}
	all := append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, c := range all {
		for _, list := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
			for name, q := range list {
				if (name == corev1.ResourceCPU || name == corev1.ResourceMemory) && !q.IsZero() {
					return false
				}
			}
		}
	}
	return true
}

func usesCrossNamespaceAffinity(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	cross := func(terms []corev1.PodAffinityTerm) bool {
		for _, t := range terms {
			if len(t.Namespaces) != 0 || t.NamespaceSelector != nil {
				return true
			}
		}
		return false
	}
	weighted := func(terms []corev1.WeightedPodAffinityTerm) bool {
		for _, t := range terms {
			if len(t.PodAffinityTerm.Namespaces) != 0 || t.PodAffinityTerm.NamespaceSelector != nil {
				return true
			}
		}
		return false
	}
	if pa := a.PodAffinity; pa != nil && (cross(pa.RequiredDuringSchedulingIgnoredDuringExecution) || weighted(pa.PreferredDuringSchedulingIgnoredDuringExecution)) {
		return true
	}
	if pa := a.PodAntiAffinity; pa != nil && (cross(pa.RequiredDuringSchedulingIgnoredDuringExecution) || weighted(pa.PreferredDuringSchedulingIgnoredDuringExecution)) {
		return true
	}
	return false
}
