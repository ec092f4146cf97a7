package apiserver

import (
	"context"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/glassplane/glassplane/controlplane/apiserver/openapi"
)

// Verbs a resource serves, as discovery lists them.
var (
	verbsAll     = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	verbsStatus  = []string{"get", "patch", "update"}
	verbsBinding = []string{"create"}
	verbsRead    = []string{"get", "list", "watch"}
)

// resource is one entry of the registry table: everything the generic
// handlers need to serve a Kubernetes resource.
type resource struct {
	GVK        schema.GroupVersionKind
	Resource   string
	Singular   string
	ShortNames []string
	Namespaced bool
	Categories []string
	Verbs      []string
	// StorageResource is the key segment under /registry/ (Kubernetes'
	// layout: "minions" for nodes, "services/specs" for services).
	StorageResource string
	// Subresources served below an object's path.
	Subresources []*subresource
	// TracksGeneration bumps metadata.generation on spec changes (on
	// changes of what Generational returns, when set).
	TracksGeneration bool
	// Generational returns the part of an object whose changes bump its
	// generation, for kinds without a spec (an EndpointSlice's content).
	Generational func(obj runtime.Object) any
	// HasStatus means the main resource ignores status changes and the
	// status subresource ignores everything else.
	HasStatus bool
	// AllowCreateOnUpdate lets PUT create a missing object.
	AllowCreateOnUpdate bool
	// ReturnDeletedObject answers a final delete with the object rather than
	// a Success Status.
	ReturnDeletedObject bool
	// FieldLabels adds resource-specific field selector labels to
	// metadata.name and metadata.namespace.
	FieldLabels func(obj runtime.Object) fields.Set
	// BeginWrite, when set, runs on a create or an update of the main
	// resource after admission and before the write to storage (old is nil
	// on create), as the generic registry's BeginCreate and BeginUpdate
	// hooks do: it may claim what the object needs (a Service's cluster IP
	// and node ports) and set it on next. The returned function is called
	// once with whether the write was stored.
	BeginWrite func(s *Server, ctx context.Context, next, old runtime.Object) (func(ok bool), error)
	// AfterDelete, when set, runs once an object is gone from storage.
	AfterDelete func(s *Server, obj runtime.Object)
	// Serve, when set, answers every request for a resource that is not
	// kept in storage (metrics.k8s.io, read from the node agents).
	Serve func(q *request) error
	// TypeConverter, when set, is the schema server-side apply and
	// managedFields see the objects through (a CRD's, from its structural
	// schema); nil means the OpenAPI definition of a built-in kind, or
	// managedfields' deduced type converter (fieldmanager.go).
	TypeConverter typeConverter
	// Stored, when set, is another kind the objects are kept in storage as
	// (events.k8s.io/v1 Events are stored as core/v1 Events): one storage,
	// two views, as kube-apiserver's storage versions.
	Stored *storedForm
	// PrepareCreate and PrepareUpdate, when set, finish what
	// prepareForCreate and prepareForUpdate do to the main resource, as a
	// registry strategy's PrepareForCreate and PrepareForUpdate.
	PrepareCreate func(ctx context.Context, obj runtime.Object)
	PrepareUpdate func(ctx context.Context, old, next runtime.Object)
	// Validate, when set, replaces the admission Validation plugin's rules
	// for the resource (old is nil on create; subresource is the one
	// written, "" for the main resource), as a strategy's Validate.
	Validate func(ctx context.Context, subresource string, obj, old runtime.Object) field.ErrorList
	// StorageGVK is the kind objects are stored as, when only their
	// apiVersion differs from GVK (a CRD version that is not its storage
	// version, conversion None).
	StorageGVK schema.GroupVersionKind
	// Custom is set on entries built from a CustomResourceDefinition: their
	// objects are *unstructured.Unstructured (crd_custom.go).
	Custom *customResource
}

// storageGVK returns the kind objects are stored as.
func (r *resource) storageGVK() schema.GroupVersionKind {
	if r.StorageGVK.Empty() {
		return r.GVK
	}
	return r.StorageGVK
}

// storedForm is the kind a resource's objects are stored as and the
// conversions to and from it.
type storedForm struct {
	GVK schema.GroupVersionKind
	// ToStored and FromStored convert; they fail only where a conversion
	// calls out (a CRD's conversion webhook).
	ToStored   func(runtime.Object) (runtime.Object, error)
	FromStored func(runtime.Object) (runtime.Object, error)
}

// GroupVersion returns the resource's group version.
func (r *resource) GroupVersion() schema.GroupVersion { return r.GVK.GroupVersion() }

// GroupResource returns the resource's group resource, as errors name it.
func (r *resource) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.GVK.Group, Resource: r.Resource}
}

// GroupVersionResource returns the resource's group version resource.
func (r *resource) GroupVersionResource() schema.GroupVersionResource {
	return r.GVK.GroupVersion().WithResource(r.Resource)
}

// New returns an empty object of the resource's kind.
func (r *resource) New() runtime.Object {
	if r.Custom != nil {
		return r.Custom.newObject(r.GVK)
	}
	obj, err := scheme.Scheme.New(r.GVK)
	if err != nil {
		panic(fmt.Sprintf("kind %s is not in client-go's scheme: %v", r.GVK, err))
	}
	return obj
}

// NewList returns an empty list of the resource's kind.
func (r *resource) NewList() runtime.Object {
	if r.Custom != nil {
		return r.Custom.newList()
	}
	obj, err := scheme.Scheme.New(r.GVK.GroupVersion().WithKind(r.GVK.Kind + "List"))
	if err != nil {
		panic(fmt.Sprintf("kind %sList is not in client-go's scheme: %v", r.GVK.Kind, err))
	}
	return obj
}

// subresource returns the named subresource, or nil.
func (r *resource) subresource(name string) *subresource {
	for _, sub := range r.Subresources {
		if sub.Name == name {
			return sub
		}
	}
	return nil
}

// fieldSet returns the fields a field selector may match on obj.
func (r *resource) fieldSet(obj runtime.Object) fields.Set {
	set := fields.Set{}
	if r.FieldLabels != nil {
		set = r.FieldLabels(obj)
	}
	if m, err := meta.Accessor(obj); err == nil {
		set["metadata.name"] = m.GetName()
		if r.Namespaced {
			set["metadata.namespace"] = m.GetNamespace()
		}
	}
	return set
}

// supportsField reports whether a field selector may name label.
func (r *resource) supportsField(label string) bool {
	if label == "metadata.name" || (label == "metadata.namespace" && r.Namespaced) {
		return true
	}
	if r.FieldLabels == nil {
		return false
	}
	_, ok := r.FieldLabels(r.New())[label]
	return ok
}

// openAPI describes the resource for the OpenAPI service.
func (r *resource) openAPI() openapi.Resource {
	out := openapi.Resource{Group: r.GVK.Group, Version: r.GVK.Version, Kind: r.GVK.Kind, Resource: r.Resource, Namespaced: r.Namespaced, Verbs: r.Verbs}
	for _, sub := range r.Subresources {
		s := openapi.Subresource{Name: sub.Name, Verbs: sub.Verbs}
		if sub.Kind != (schema.GroupVersionKind{}) {
			s.Group, s.Version, s.Kind = sub.Kind.Group, sub.Kind.Version, sub.Kind.Kind
		}
		out.Subresources = append(out.Subresources, s)
	}
	return out
}

// newResources returns the registry table.
func newResources() []*resource {
	core := func(kind string) schema.GroupVersionKind { return corev1.SchemeGroupVersion.WithKind(kind) }
	apps := func(kind string) schema.GroupVersionKind { return appsv1.SchemeGroupVersion.WithKind(kind) }
	return []*resource{
		{
			GVK: core("Namespace"), Resource: "namespaces", Singular: "namespace", ShortNames: []string{"ns"},
			Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"}, StorageResource: "namespaces",
			HasStatus: true, ReturnDeletedObject: true,
			Subresources: []*subresource{statusSubresource(), finalizeSubresource()},
			FieldLabels: func(obj runtime.Object) fields.Set {
				ns := obj.(*corev1.Namespace)
				return fields.Set{"status.phase": string(ns.Status.Phase)}
			},
		},
		{
			GVK: core("Node"), Resource: "nodes", Singular: "node", ShortNames: []string{"no"},
			Verbs: verbsAll, StorageResource: "minions", HasStatus: true,
			Subresources: []*subresource{statusSubresource(), nodeProxySubresource()},
			FieldLabels: func(obj runtime.Object) fields.Set {
				n := obj.(*corev1.Node)
				return fields.Set{"spec.unschedulable": strconv.FormatBool(n.Spec.Unschedulable)}
			},
		},
		{
			GVK: core("Pod"), Resource: "pods", Singular: "pod", ShortNames: []string{"po"}, Namespaced: true,
			Categories: []string{"all"}, Verbs: verbsAll, StorageResource: "pods", HasStatus: true, ReturnDeletedObject: true,
			// Pods track generation as upstream's since 1.34: 1 at create,
			// one more per spec change and at a graceful delete.
			TracksGeneration: true,
			Subresources:     []*subresource{statusSubresource(), bindingSubresource(), evictionSubresource(), logSubresource(), execSubresource(), attachSubresource(), portForwardSubresource(), podProxySubresource(), ephemeralContainersSubresource(), resizeSubresource()},
			FieldLabels:      podFields,
		},
		{
			GVK: core("Service"), Resource: "services", Singular: "service", ShortNames: []string{"svc"}, Namespaced: true,
			Categories: []string{"all"}, Verbs: []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"},
			StorageResource: "services/specs", HasStatus: true,
			Subresources: []*subresource{statusSubresource(), serviceProxySubresource()},
			BeginWrite:   (*Server).beginServiceWrite, AfterDelete: (*Server).afterServiceDelete,
			PrepareUpdate: prepareServiceForUpdate,
		},
		{
			GVK: networkingv1.SchemeGroupVersion.WithKind("ServiceCIDR"), Resource: "servicecidrs", Singular: "servicecidr",
			Verbs: verbsRead, StorageResource: "servicecidrs", HasStatus: true,
			// Read-only like the resource: Glassplane's allocator owns the
			// one range and its Ready condition.
			Subresources: []*subresource{{Name: "status", Verbs: []string{"get"}, view: statusSubresource().view}},
		},
		{
			GVK: networkingv1.SchemeGroupVersion.WithKind("IPAddress"), Resource: "ipaddresses", Singular: "ipaddress", ShortNames: []string{"ip"},
			Verbs: verbsAll, StorageResource: "ipaddresses", Validate: validateIPAddress,
		},
		{
			GVK: core("Endpoints"), Resource: "endpoints", Singular: "endpoints", ShortNames: []string{"ep"}, Namespaced: true,
			Verbs: verbsAll, StorageResource: "services/endpoints", AllowCreateOnUpdate: true,
		},
		{
			GVK: discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), Resource: "endpointslices", Singular: "endpointslice", Namespaced: true,
			Verbs: verbsAll, StorageResource: "endpointslices",
			TracksGeneration: true, Generational: endpointSliceContent,
		},
		{
			GVK: core("ConfigMap"), Resource: "configmaps", Singular: "configmap", ShortNames: []string{"cm"}, Namespaced: true,
			Verbs: verbsAll, StorageResource: "configmaps",
		},
		{
			GVK: core("Secret"), Resource: "secrets", Singular: "secret", Namespaced: true,
			Verbs: verbsAll, StorageResource: "secrets",
			FieldLabels: func(obj runtime.Object) fields.Set {
				return fields.Set{"type": string(obj.(*corev1.Secret).Type)}
			},
		},
		{
			GVK: core("ServiceAccount"), Resource: "serviceaccounts", Singular: "serviceaccount", ShortNames: []string{"sa"}, Namespaced: true,
			Verbs: verbsAll, StorageResource: "serviceaccounts",
			Subresources: []*subresource{tokenSubresource()},
		},
		{
			GVK: core("Event"), Resource: "events", Singular: "event", ShortNames: []string{"ev"}, Namespaced: true,
			Verbs: verbsAll, StorageResource: "events", AllowCreateOnUpdate: true,
			FieldLabels: eventFields,
		},
		{
			GVK: coordinationv1.SchemeGroupVersion.WithKind("Lease"), Resource: "leases", Singular: "lease", Namespaced: true,
			Verbs: verbsAll, StorageResource: "leases",
		},
		{
			GVK: schedulingv1.SchemeGroupVersion.WithKind("PriorityClass"), Resource: "priorityclasses", Singular: "priorityclass", ShortNames: []string{"pc"},
			Verbs: verbsAll, StorageResource: "priorityclasses", Validate: validatePriorityClass,
		},
		{
			GVK: core("ReplicationController"), Resource: "replicationcontrollers", Singular: "replicationcontroller", ShortNames: []string{"rc"}, Namespaced: true,
			Categories: []string{"all"}, Verbs: verbsAll, StorageResource: "controllers", HasStatus: true, TracksGeneration: true,
			Subresources: []*subresource{statusSubresource(), scaleSubresource()},
			FieldLabels: func(obj runtime.Object) fields.Set {
				return fields.Set{"status.replicas": strconv.Itoa(int(obj.(*corev1.ReplicationController).Status.Replicas))}
			},
		},
		{
			GVK: core("PodTemplate"), Resource: "podtemplates", Singular: "podtemplate", Namespaced: true,
			Verbs: verbsAll, StorageResource: "podtemplates",
		},
		{
			GVK: apps("Deployment"), Resource: "deployments", Singular: "deployment", ShortNames: []string{"deploy"}, Namespaced: true,
			Categories: []string{"all"}, Verbs: verbsAll, StorageResource: "deployments", HasStatus: true, TracksGeneration: true,
			Subresources: []*subresource{statusSubresource(), scaleSubresource()},
		},
		{
			GVK: apps("ReplicaSet"), Resource: "replicasets", Singular: "replicaset", ShortNames: []string{"rs"}, Namespaced: true,
			Categories: []string{"all"}, Verbs: verbsAll, StorageResource: "replicasets", HasStatus: true, TracksGeneration: true,
			Subresources: []*subresource{statusSubresource(), scaleSubresource()},
			FieldLabels: func(obj runtime.Object) fields.Set {
				return fields.Set{"status.replicas": strconv.Itoa(int(obj.(*appsv1.ReplicaSet).Status.Replicas))}
			},
		},
		{
			GVK: apps("DaemonSet"), Resource: "daemonsets", Singular: "daemonset", ShortNames: []string{"ds"}, Namespaced: true,
			Categories: []string{"all"}, Verbs: verbsAll, StorageResource: "daemonsets", HasStatus: true, TracksGeneration: true,
			Subresources: []*subresource{statusSubresource()},
		},
		{
			GVK: apps("StatefulSet"), Resource: "statefulsets", Singular: "statefulset", ShortNames: []string{"sts"}, Namespaced: true,
			Categories: []string{"all"}, Verbs: verbsAll, StorageResource: "statefulsets", HasStatus: true, TracksGeneration: true,
			Subresources: []*subresource{statusSubresource(), scaleSubresource()},
		},
		{
			GVK: apps("ControllerRevision"), Resource: "controllerrevisions", Singular: "controllerrevision", Namespaced: true,
			Verbs: verbsAll, StorageResource: "controllerrevisions",
		},
		{
			GVK: batchv1.SchemeGroupVersion.WithKind("Job"), Resource: "jobs", Singular: "job", Namespaced: true,
			Categories: []string{"all"}, Verbs: verbsAll, StorageResource: "jobs", HasStatus: true, TracksGeneration: true,
			Subresources: []*subresource{statusSubresource()},
			FieldLabels: func(obj runtime.Object) fields.Set {
				return fields.Set{"status.successful": strconv.Itoa(int(obj.(*batchv1.Job).Status.Succeeded))}
			},
		},
		{
			GVK: batchv1.SchemeGroupVersion.WithKind("CronJob"), Resource: "cronjobs", Singular: "cronjob", ShortNames: []string{"cj"}, Namespaced: true,
			Categories: []string{"all"}, Verbs: verbsAll, StorageResource: "cronjobs", HasStatus: true, TracksGeneration: true,
			Subresources: []*subresource{statusSubresource()},
		},
		{
			GVK: policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"), Resource: "poddisruptionbudgets", Singular: "poddisruptionbudget",
			ShortNames: []string{"pdb"}, Namespaced: true, Verbs: verbsAll, StorageResource: "poddisruptionbudgets",
			HasStatus: true, TracksGeneration: true,
			Subresources: []*subresource{statusSubresource()},
		},
	}
}

func podFields(obj runtime.Object) fields.Set {
	p := obj.(*corev1.Pod)
	set := fields.Set{
		"spec.nodeName":            p.Spec.NodeName,
		"spec.restartPolicy":       string(p.Spec.RestartPolicy),
		"spec.schedulerName":       p.Spec.SchedulerName,
		"spec.serviceAccountName":  p.Spec.ServiceAccountName,
		"spec.hostNetwork":         strconv.FormatBool(p.Spec.HostNetwork),
		"status.phase":             string(p.Status.Phase),
		"status.podIP":             p.Status.PodIP,
		"status.nominatedNodeName": p.Status.NominatedNodeName,
	}
	return set
}

func eventFields(obj runtime.Object) fields.Set {
	e := obj.(*corev1.Event)
	source := e.Source.Component
	if source == "" {
		source = e.ReportingController
	}
	return fields.Set{
		"involvedObject.kind":            e.InvolvedObject.Kind,
		"involvedObject.namespace":       e.InvolvedObject.Namespace,
		"involvedObject.name":            e.InvolvedObject.Name,
		"involvedObject.uid":             string(e.InvolvedObject.UID),
		"involvedObject.apiVersion":      e.InvolvedObject.APIVersion,
		"involvedObject.resourceVersion": e.InvolvedObject.ResourceVersion,
		"involvedObject.fieldPath":       e.InvolvedObject.FieldPath,
		"reason":                         e.Reason,
		"reportingComponent":             e.ReportingController,
		"source":                         source,
		"type":                           e.Type,
	}
}
