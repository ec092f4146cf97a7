package quota

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
)

// noScopes is the Evaluator part of kinds quota scopes do not apply to.
type noScopes struct{}

func (noScopes) MatchingScopes(runtime.Object, []corev1.ScopedResourceSelectorRequirement) ([]corev1.ScopedResourceSelectorRequirement, error) {
	return nil, nil
}

func (noScopes) UncoveredQuotaScopes([]corev1.ScopedResourceSelectorRequirement, []corev1.ScopedResourceSelectorRequirement) ([]corev1.ScopedResourceSelectorRequirement, error) {
	return nil, nil
}

func (noScopes) Constraints([]corev1.ResourceName, runtime.Object) error { return nil }

var serviceResources = []corev1.ResourceName{
	"count/services", corev1.ResourceServices, corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers,
}

// serviceEvaluator counts Services, their node ports and load balancers.
type serviceEvaluator struct {
	noScopes
	list generic.ListFuncByNamespace
}

var _ quota.Evaluator = &serviceEvaluator{}

func (s *serviceEvaluator) GroupResource() schema.GroupResource { return servicesGR }

func (s *serviceEvaluator) Handles(a admission.Attributes) bool {
	op := a.GetOperation()
	return op == admission.Create || op == admission.Update
}

func (s *serviceEvaluator) Matches(q *corev1.ResourceQuota, item runtime.Object) (bool, error) {
	return generic.Matches(q, item, s.MatchingResources, generic.MatchesNoScopeFunc)
}

func (s *serviceEvaluator) MatchingResources(input []corev1.ResourceName) []corev1.ResourceName {
	return quota.Intersection(input, serviceResources)
}

// Usage is serviceEvaluator.Usage: one service, its node ports (each port
// of a NodePort or LoadBalancer Service that allocates them), one load
// balancer.
func (s *serviceEvaluator) Usage(item runtime.Object) (corev1.ResourceList, error) {
	svc, ok := item.(*corev1.Service)
	if !ok {
		return nil, fmt.Errorf("unexpected input object %v", item)
	}
	one := *resource.NewQuantity(1, resource.DecimalSI)
	result := corev1.ResourceList{"count/services": one, corev1.ResourceServices: one}
	ports := *resource.NewQuantity(int64(len(svc.Spec.Ports)), resource.DecimalSI)
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		result[corev1.ResourceServicesNodePorts] = ports
	case corev1.ServiceTypeLoadBalancer:
		result[corev1.ResourceServicesLoadBalancers] = one
		if svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts {
			result[corev1.ResourceServicesNodePorts] = ports
		} else {
			n := int64(0)
			for _, p := range svc.Spec.Ports {
				if p.NodePort != 0 {
					n++
				}
			}
			result[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(n, resource.DecimalSI)
		}
	}
	return result, nil
}

func (s *serviceEvaluator) UsageStats(options quota.UsageStatsOptions) (quota.UsageStats, error) {
	return generic.CalculateUsageStats(options, s.list, generic.MatchesNoScopeFunc, s.Usage)
}

// claimEvaluator counts PersistentVolumeClaims and the storage they ask
// for, in all and per StorageClass.
type claimEvaluator struct {
	noScopes
	list generic.ListFuncByNamespace
}

var _ quota.Evaluator = &claimEvaluator{}

const storageClassSuffix = ".storageclass.storage.k8s.io/"

func (c *claimEvaluator) GroupResource() schema.GroupResource { return claimsGR }

func (c *claimEvaluator) Handles(a admission.Attributes) bool {
	op := a.GetOperation()
	return op == admission.Create || (op == admission.Update && a.GetSubresource() == "")
}

func (c *claimEvaluator) Matches(q *corev1.ResourceQuota, item runtime.Object) (bool, error) {
	return generic.Matches(q, item, c.MatchingResources, generic.MatchesNoScopeFunc)
}

func (c *claimEvaluator) MatchingResources(input []corev1.ResourceName) []corev1.ResourceName {
	known := sets.New[corev1.ResourceName]("count/persistentvolumeclaims", corev1.ResourcePersistentVolumeClaims, corev1.ResourceRequestsStorage)
	var out []corev1.ResourceName
	for _, name := range input {
		s := string(name)
		if known.Has(name) || (strings.Contains(s, storageClassSuffix) &&
			(strings.HasSuffix(s, "/"+string(corev1.ResourcePersistentVolumeClaims)) || strings.HasSuffix(s, "/"+string(corev1.ResourceRequestsStorage)))) {
			out = append(out, name)
		}
	}
	return out
}

// Usage is pvcEvaluator.Usage: one claim and its requested storage, also
// under its StorageClass's names.
func (c *claimEvaluator) Usage(item runtime.Object) (corev1.ResourceList, error) {
	pvc, ok := item.(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil, fmt.Errorf("unexpected input object %v", item)
	}
	one := *resource.NewQuantity(1, resource.DecimalSI)
	result := corev1.ResourceList{"count/persistentvolumeclaims": one, corev1.ResourcePersistentVolumeClaims: one}
	class := ""
	if pvc.Spec.StorageClassName != nil {
		class = *pvc.Spec.StorageClassName
	}
	if class != "" {
		result[corev1.ResourceName(class+storageClassSuffix+string(corev1.ResourcePersistentVolumeClaims))] = one
	}
	if q, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		if alloc, ok := pvc.Status.AllocatedResources[corev1.ResourceStorage]; ok && alloc.Cmp(q) > 0 {
			q = alloc
		}
		result[corev1.ResourceRequestsStorage] = q
		if class != "" {
			result[corev1.ResourceName(class+storageClassSuffix+string(corev1.ResourceRequestsStorage))] = q
		}
	}
	return result, nil
}

func (c *claimEvaluator) UsageStats(options quota.UsageStatsOptions) (quota.UsageStats, error) {
	return generic.CalculateUsageStats(options, c.list, generic.MatchesNoScopeFunc, c.Usage)
}
