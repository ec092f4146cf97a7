package apiserver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/glassplane/glassplane/controlplane/storage"
)

// policyResources are the registry entries of issue 26's policy kinds:
// core/v1 ResourceQuotas and LimitRanges, the networking.k8s.io/v1
// Ingress, IngressClass and NetworkPolicy (stored and validated; nothing
// in Glassplane routes or filters traffic by them), and events.k8s.io/v1
// Events, a second view of the stored core/v1 Events.
func policyResources() []*resource {
	core := corev1.SchemeGroupVersion.WithKind
	net := networkingv1.SchemeGroupVersion.WithKind
	return []*resource{
		{
			GVK: core("ResourceQuota"), Resource: "resourcequotas", Singular: "resourcequota", ShortNames: []string{"quota"}, Namespaced: true,
			Verbs: verbsAll, StorageResource: "resourcequotas", HasStatus: true,
			Subresources: []*subresource{statusSubresource()},
		},
		{
			GVK: core("LimitRange"), Resource: "limitranges", Singular: "limitrange", ShortNames: []string{"limits"}, Namespaced: true,
			Verbs: verbsAll, StorageResource: "limitranges",
		},
		{
			GVK: net("Ingress"), Resource: "ingresses", Singular: "ingress", ShortNames: []string{"ing"}, Namespaced: true,
			Verbs: verbsAll, StorageResource: "ingress", HasStatus: true, TracksGeneration: true,
			Subresources: []*subresource{statusSubresource()},
		},
		{
			GVK: net("IngressClass"), Resource: "ingressclasses", Singular: "ingressclass",
			Verbs: verbsAll, StorageResource: "ingressclasses",
		},
		{
			GVK: net("NetworkPolicy"), Resource: "networkpolicies", Singular: "networkpolicy", ShortNames: []string{"netpol"}, Namespaced: true,
			Verbs: verbsAll, StorageResource: "networkpolicies", TracksGeneration: true,
		},
		{
			GVK: eventsv1.SchemeGroupVersion.WithKind("Event"), Resource: "events", Singular: "event", ShortNames: []string{"ev"}, Namespaced: true,
			Verbs: verbsAll, StorageResource: "events", AllowCreateOnUpdate: true,
			Stored: &storedForm{
				GVK:        corev1.SchemeGroupVersion.WithKind("Event"),
				ToStored:   func(obj runtime.Object) (runtime.Object, error) { return eventToCore(obj.(*eventsv1.Event)), nil },
				FromStored: func(obj runtime.Object) (runtime.Object, error) { return eventFromCore(obj.(*corev1.Event)), nil },
			},
			FieldLabels: eventsV1Fields,
		},
	}
}

// eventsV1Fields are the field selectors events.k8s.io/v1 allows, as
// upstream's field label conversion maps them onto the core Event's.
func eventsV1Fields(obj runtime.Object) fields.Set {
	e := obj.(*eventsv1.Event)
	return fields.Set{
		"reason":                    e.Reason,
		"regarding.kind":            e.Regarding.Kind,
		"regarding.namespace":       e.Regarding.Namespace,
		"regarding.name":            e.Regarding.Name,
		"regarding.uid":             string(e.Regarding.UID),
		"regarding.apiVersion":      e.Regarding.APIVersion,
		"regarding.resourceVersion": e.Regarding.ResourceVersion,
		"regarding.fieldPath":       e.Regarding.FieldPath,
		"reportingController":       e.ReportingController,
		"type":                      e.Type,
	}
}

// eventToCore is kube-apiserver's conversion of an events.k8s.io/v1 Event
// to the core Event it stores.
func eventToCore(e *eventsv1.Event) *corev1.Event {
	out := &corev1.Event{
		TypeMeta:            metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta:          *e.ObjectMeta.DeepCopy(),
		InvolvedObject:      e.Regarding,
		Reason:              e.Reason,
		Message:             e.Note,
		Source:              e.DeprecatedSource,
		FirstTimestamp:      e.DeprecatedFirstTimestamp,
		LastTimestamp:       e.DeprecatedLastTimestamp,
		Count:               e.DeprecatedCount,
		Type:                e.Type,
		EventTime:           e.EventTime,
		Action:              e.Action,
		Related:             e.Related.DeepCopy(),
		ReportingController: e.ReportingController,
		ReportingInstance:   e.ReportingInstance,
	}
	if s := e.Series; s != nil {
		out.Series = &corev1.EventSeries{Count: s.Count, LastObservedTime: s.LastObservedTime}
	}
	return out
}

// eventFromCore is the reverse of eventToCore.
func eventFromCore(e *corev1.Event) *eventsv1.Event {
	out := &eventsv1.Event{
		ObjectMeta:               *e.ObjectMeta.DeepCopy(),
		EventTime:                e.EventTime,
		ReportingController:      e.ReportingController,
		ReportingInstance:        e.ReportingInstance,
		Action:                   e.Action,
		Reason:                   e.Reason,
		Regarding:                e.InvolvedObject,
		Related:                  e.Related.DeepCopy(),
		Note:                     e.Message,
		Type:                     e.Type,
		DeprecatedSource:         e.Source,
		DeprecatedFirstTimestamp: e.FirstTimestamp,
		DeprecatedLastTimestamp:  e.LastTimestamp,
		DeprecatedCount:          e.Count,
	}
	out.SetGroupVersionKind(eventsv1.SchemeGroupVersion.WithKind("Event"))
	if s := e.Series; s != nil {
		out.Series = &eventsv1.EventSeries{Count: s.Count, LastObservedTime: s.LastObservedTime}
	}
	return out
}

// policyLookups reads what the quota, limit-range and ingress-class
// admission plugins need from storage, and writes a quota's status with a
// compare-and-swap on its resourceVersion.
type policyLookups struct{ s *Server }

// listStored lists the stored objects of res in namespace
// ("" for all).
func (l policyLookups) listStored(ctx context.Context, res *resource, namespace string) ([]runtime.Object, error) {
	list, err := l.s.store.List(ctx, storage.Prefix(res.StorageResource, namespace), storage.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("failed to list %s: %w", res.Resource, err)
	}
	out := make([]runtime.Object, 0, len(list.Items))
	for _, kv := range list.Items {
		obj, err := decodeStored(res, kv.Value, kv.ModRevision)
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	return out, nil
}

var (
	resourceQuotasGVR = corev1.SchemeGroupVersion.WithResource("resourcequotas")
	limitRangesGVR    = corev1.SchemeGroupVersion.WithResource("limitranges")
	ingressClassesGVR = networkingv1.SchemeGroupVersion.WithResource("ingressclasses")
)

func (l policyLookups) res(gvr schema.GroupVersionResource) *resource { return l.s.byPath[gvr] }

// ListResourceQuotas implements admission.QuotaStore.
func (l policyLookups) ListResourceQuotas(ctx context.Context, namespace string) ([]corev1.ResourceQuota, error) {
	objs, err := l.listStored(ctx, l.res(resourceQuotasGVR), namespace)
	if err != nil {
		return nil, err
	}
	out := make([]corev1.ResourceQuota, 0, len(objs))
	for _, o := range objs {
		out = append(out, *o.(*corev1.ResourceQuota))
	}
	return out, nil
}

// UpdateResourceQuotaStatus implements admission.QuotaStore: it writes q
// only if the stored quota is still at q's resourceVersion.
func (l policyLookups) UpdateResourceQuotaStatus(ctx context.Context, q *corev1.ResourceQuota) error {
	res := l.res(resourceQuotasGVR)
	var rev int64
	if _, err := fmt.Sscan(q.ResourceVersion, &rev); err != nil {
		return fmt.Errorf("failed to read the resourceVersion of quota %q: %w", q.Name, err)
	}
	value, err := encodeForStorage(res, q.DeepCopy())
	if err != nil {
		return err
	}
	if _, err := l.s.store.Update(ctx, key(res, q.Namespace, q.Name), value, rev); err != nil {
		return storageError(res, q.Name, err)
	}
	return nil
}

// ListLimitRanges implements admission.LimitRangeLister.
func (l policyLookups) ListLimitRanges(ctx context.Context, namespace string) ([]corev1.LimitRange, error) {
	objs, err := l.listStored(ctx, l.res(limitRangesGVR), namespace)
	if err != nil {
		return nil, err
	}
	out := make([]corev1.LimitRange, 0, len(objs))
	for _, o := range objs {
		out = append(out, *o.(*corev1.LimitRange))
	}
	return out, nil
}

// ListIngressClasses implements admission.IngressClassLister.
func (l policyLookups) ListIngressClasses(ctx context.Context) ([]networkingv1.IngressClass, error) {
	objs, err := l.listStored(ctx, l.res(ingressClassesGVR), "")
	if err != nil {
		return nil, err
	}
	out := make([]networkingv1.IngressClass, 0, len(objs))
	for _, o := range objs {
		out = append(out, *o.(*networkingv1.IngressClass))
	}
	return out, nil
}
