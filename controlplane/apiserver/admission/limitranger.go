package admission

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	resourcehelper "k8s.io/component-helpers/resource"
)

// LimitRangerPluginName is the name LimitRanger reports in Steps.
const LimitRangerPluginName = "LimitRanger"

// limitRangerAnnotation records which defaults LimitRanger set on a pod.
const limitRangerAnnotation = "kubernetes.io/limit-ranger"

// LimitRangeLister reads a namespace's LimitRanges from storage.
type LimitRangeLister interface {
	ListLimitRanges(ctx context.Context, namespace string) ([]corev1.LimitRange, error)
}

// LimitRanger is kube-apiserver's LimitRanger plugin: at pod create it
// fills in each container's missing requests and limits from the
// namespace's LimitRanges (default, defaultRequest), then refuses pods and
// PersistentVolumeClaims outside their min, max and maxLimitRequestRatio
// with a 403 in Kubernetes' words.
type LimitRanger struct{ ranges LimitRangeLister }

var (
	_ MutationInterface   = &LimitRanger{}
	_ ValidationInterface = &LimitRanger{}
	_ Handler             = &LimitRanger{}
)

// NewLimitRanger returns the plugin reading LimitRanges from ranges.
func NewLimitRanger(ranges LimitRangeLister) *LimitRanger { return &LimitRanger{ranges: ranges} }

// Name implements Plugin.
func (*LimitRanger) Name() string { return LimitRangerPluginName }

// Handles is supportsAttributes: pod creates (their containers cannot
// change afterwards) and claim creates and updates, never subresources.
func (*LimitRanger) Handles(a *Attributes) bool {
	if a.Subresource != "" || a.Object == nil {
		return false
	}
	switch a.Object.(type) {
	case *corev1.Pod:
		return a.Operation == Create
	case *corev1.PersistentVolumeClaim:
		return a.Operation == Create || a.Operation == Update
	}
	return false
}

// Admit implements MutationInterface: the defaults.
func (l *LimitRanger) Admit(ctx context.Context, a *Attributes) error {
	pod, ok := a.Object.(*corev1.Pod)
	if !ok || !l.Handles(a) {
		return nil
	}
	ranges, err := l.ranges.ListLimitRanges(ctx, a.Namespace)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	for i := range ranges {
		defaultPodResources(pod, &ranges[i])
	}
	return nil
}

// Validate implements ValidationInterface: min, max and ratios.
func (l *LimitRanger) Validate(ctx context.Context, a *Attributes) error {
	if !l.Handles(a) {
		return nil
	}
	ranges, err := l.ranges.ListLimitRanges(ctx, a.Namespace)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	var errs []error
	for i := range ranges {
		switch o := a.Object.(type) {
		case *corev1.Pod:
			errs = append(errs, validatePodLimits(&ranges[i], o)...)
		case *corev1.PersistentVolumeClaim:
			errs = append(errs, validateClaimLimits(&ranges[i], o)...)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewForbidden(a.Resource.GroupResource(), objectNameForError(a), utilerrors.NewAggregate(errs))
}

// defaultPodResources is PodMutateLimitFunc: the Container items' default
// and defaultRequest fill what each container leaves out, and the pod's
// annotation says what was set.
func defaultPodResources(pod *corev1.Pod, lr *corev1.LimitRange) {
	defaults := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	for _, item := range lr.Spec.Limits {
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		for k, v := range item.DefaultRequest {
			defaults.Requests[k] = v.DeepCopy()
		}
		for k, v := range item.Default {
			defaults.Limits[k] = v.DeepCopy()
		}
	}
	var notes []string
	for i := range pod.Spec.Containers {
		notes = mergeContainerResources(&pod.Spec.Containers[i], &defaults, "container", notes)
	}
	for i := range pod.Spec.InitContainers {
		notes = mergeContainerResources(&pod.Spec.InitContainers[i], &defaults, "init container", notes)
	}
	if len(notes) == 0 {
		return
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[limitRangerAnnotation] = "LimitRanger plugin set: " + strings.Join(notes, "; ")
}

// mergeContainerResources is upstream's, with its annotation wording.
func mergeContainerResources(c *corev1.Container, defaults *corev1.ResourceRequirements, prefix string, notes []string) []string {
	var setRequests, setLimits []string
	if c.Resources.Limits == nil && len(defaults.Limits) > 0 {
		c.Resources.Limits = corev1.ResourceList{}
	}
	if c.Resources.Requests == nil && len(defaults.Requests) > 0 {
		c.Resources.Requests = corev1.ResourceList{}
	}
	for k, v := range defaults.Limits {
		if _, found := c.Resources.Limits[k]; !found {
			c.Resources.Limits[k] = v.DeepCopy()
			setLimits = append(setLimits, string(k))
		}
	}
	for k, v := range defaults.Requests {
		if _, found := c.Resources.Requests[k]; !found {
			c.Resources.Requests[k] = v.DeepCopy()
			setRequests = append(setRequests, string(k))
		}
	}
	if len(setRequests) > 0 {
		sort.Strings(setRequests)
		notes = append(notes, strings.Join(setRequests, ", ")+fmt.Sprintf(" request for %s %s", prefix, c.Name))
	}
	if len(setLimits) > 0 {
		sort.Strings(setLimits)
		notes = append(notes, strings.Join(setLimits, ", ")+fmt.Sprintf(" limit for %s %s", prefix, c.Name))
	}
	return notes
}

// validatePodLimits is PodValidateLimitFunc.
func validatePodLimits(lr *corev1.LimitRange, pod *corev1.Pod) []error {
	var errs []error
	check := func(item *corev1.LimitRangeItem, requests, limits corev1.ResourceList) {
		t := string(item.Type)
		for _, k := range sortedNames(item.Min) {
			if err := minConstraint(t, k, item.Min[corev1.ResourceName(k)], requests, limits); err != nil {
				errs = append(errs, err)
			}
		}
		for _, k := range sortedNames(item.Max) {
			if err := maxConstraint(t, k, item.Max[corev1.ResourceName(k)], requests, limits); err != nil {
				errs = append(errs, err)
			}
		}
		for _, k := range sortedNames(item.MaxLimitRequestRatio) {
			if err := limitRequestRatioConstraint(t, k, item.MaxLimitRequestRatio[corev1.ResourceName(k)], requests, limits); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for i := range lr.Spec.Limits {
		item := &lr.Spec.Limits[i]
		switch item.Type {
		case corev1.LimitTypeContainer:
			for _, c := range pod.Spec.Containers {
				check(item, c.Resources.Requests, c.Resources.Limits)
			}
			for _, c := range pod.Spec.InitContainers {
				check(item, c.Resources.Requests, c.Resources.Limits)
			}
		case corev1.LimitTypePod:
			opts := resourcehelper.PodResourcesOptions{}
			check(item, resourcehelper.PodRequests(pod, opts), resourcehelper.PodLimits(pod, opts))
		}
	}
	return errs
}

// validateClaimLimits is PersistentVolumeClaimValidateLimitFunc.
func validateClaimLimits(lr *corev1.LimitRange, pvc *corev1.PersistentVolumeClaim) []error {
	var errs []error
	for _, item := range lr.Spec.Limits {
		if item.Type != corev1.LimitTypePersistentVolumeClaim {
			continue
		}
		t := string(item.Type)
		for _, k := range sortedNames(item.Min) {
			if err := minConstraint(t, k, item.Min[corev1.ResourceName(k)], pvc.Spec.Resources.Requests, corev1.ResourceList{}); err != nil {
				errs = append(errs, err)
			}
		}
		for _, k := range sortedNames(item.Max) {
			if err := maxRequestConstraint(t, k, item.Max[corev1.ResourceName(k)], pvc.Spec.Resources.Requests); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

func sortedNames(list corev1.ResourceList) []string {
	out := make([]string, 0, len(list))
	for k := range list {
		out = append(out, string(k))
	}
	sort.Strings(out)
	return out
}

// requestLimitEnforcedValues compares in milli-units where they fit.
func requestLimitEnforcedValues(req, lim, enforced resource.Quantity) (int64, int64, int64) {
	r, l, e := req.Value(), lim.Value(), enforced.Value()
	if r <= resource.MaxMilliValue && l <= resource.MaxMilliValue && e <= resource.MaxMilliValue {
		return req.MilliValue(), lim.MilliValue(), enforced.MilliValue()
	}
	return r, l, e
}

func minConstraint(limitType, name string, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, reqExists := requests[corev1.ResourceName(name)]
	lim, limExists := limits[corev1.ResourceName(name)]
	r, l, e := requestLimitEnforcedValues(req, lim, enforced)
	if !reqExists {
		return fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", name, limitType, enforced.String())
	}
	if r < e {
		return fmt.Errorf("minimum %s usage per %s is %s, but request is %s", name, limitType, enforced.String(), req.String())
	}
	if limExists && l < e {
		return fmt.Errorf("minimum %s usage per %s is %s, but limit is %s", name, limitType, enforced.String(), lim.String())
	}
	return nil
}

func maxRequestConstraint(limitType, name string, enforced resource.Quantity, requests corev1.ResourceList) error {
	req, reqExists := requests[corev1.ResourceName(name)]
	r, _, e := requestLimitEnforcedValues(req, resource.Quantity{}, enforced)
	if !reqExists {
		return fmt.Errorf("maximum %s usage per %s is %s.  No request is specified", name, limitType, enforced.String())
	}
	if r > e {
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, limitType, enforced.String(), req.String())
	}
	return nil
}

func maxConstraint(limitType, name string, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, reqExists := requests[corev1.ResourceName(name)]
	lim, limExists := limits[corev1.ResourceName(name)]
	r, l, e := requestLimitEnforcedValues(req, lim, enforced)
	if !limExists {
		return fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", name, limitType, enforced.String())
	}
	if l > e {
		return fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", name, limitType, enforced.String(), lim.String())
	}
	if reqExists && r > e {
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, limitType, enforced.String(), req.String())
	}
	return nil
}

func limitRequestRatioConstraint(limitType, name string, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, reqExists := requests[corev1.ResourceName(name)]
	lim, limExists := limits[corev1.ResourceName(name)]
	r, l, _ := requestLimitEnforcedValues(req, lim, enforced)
	if !reqExists || r == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", name, limitType, enforced.String())
	}
	if !limExists || l == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", name, limitType, enforced.String())
	}
	observed := float64(l) / float64(r)
	display := observed
	maxRatio := float64(enforced.Value())
	if enforced.Value() <= resource.MaxMilliValue {
		observed *= 1000
		maxRatio = float64(enforced.MilliValue())
	}
	if observed > maxRatio {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, limitType, enforced.String(), display)
	}
	return nil
}
