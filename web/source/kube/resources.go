package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/glassplane/glassplane/api/v1alpha1"
	"github.com/glassplane/glassplane/web/source"
)

// mapped is one resource the store reads: what the API calls it and the
// segment of the etcd key the API server stores its objects under.
type mapped struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
	// Storage is the key's resource segment: "pods", "minions",
	// "services/specs", "example.com/widgets".
	Storage string
}

// prefix is the key prefix of every object of the resource.
func (m *mapped) prefix() string { return source.Prefix(m.Storage, "") }

// key is the key of one object of the resource.
func (m *mapped) key(namespace, name string) string {
	if !m.Namespaced {
		namespace = ""
	}
	return source.Key(m.Storage, namespace, name)
}

// resourceMap is what one discovery found: the listable, watchable
// resources, one per storage segment, in key order. It is not changed
// after it is built.
type resourceMap struct {
	list      []*mapped
	byStorage map[string]*mapped
	byGVR     map[schema.GroupVersionResource]*mapped
}

// target is one resource to list or watch, narrowed to a namespace when
// namespace is set.
type target struct {
	res       *mapped
	namespace string
}

// newResourceMap keeps, of the resources in lists (discovery's preferred
// versions), those the store can read and maps each to its key segment:
// custom tells the group-resources that are custom resources, aggregated
// the group-versions served by other API servers (not stored in this
// etcd). Two resources stored under one segment (core and events.k8s.io
// Events) are one: the core group's.
func newResourceMap(lists []*metav1.APIResourceList, custom func(schema.GroupResource) bool, aggregated map[schema.GroupVersion]bool) *resourceMap {
	m := &resourceMap{byStorage: map[string]*mapped{}, byGVR: map[schema.GroupVersionResource]*mapped{}}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil || aggregated[gv] {
			continue
		}
		for _, r := range l.APIResources {
			if !readable(gv.Group, r) {
				continue
			}
			res := &mapped{
				GVR: gv.WithResource(r.Name), Kind: r.Kind, Namespaced: r.Namespaced,
				Storage: storageResource(schema.GroupResource{Group: gv.Group, Resource: r.Name}, custom),
			}
			if old, ok := m.byStorage[res.Storage]; ok && (old.GVR.Group == "" || res.GVR.Group != "") {
				continue
			}
			m.byStorage[res.Storage] = res
		}
	}
	for _, res := range m.byStorage {
		m.list = append(m.list, res)
		m.byGVR[res.GVR] = res
	}
	slices.SortFunc(m.list, func(a, b *mapped) int { return strings.Compare(a.prefix(), b.prefix()) })
	return m
}

// readable reports whether r is a resource of stored objects the store
// can list and watch: not a subresource, not a review, not Glassplane's
// own views of etcd and of the audit log.
func readable(group string, r metav1.APIResource) bool {
	if strings.Contains(r.Name, "/") || strings.HasSuffix(r.Name, "reviews") {
		return false
	}
	if group == v1alpha1.GroupName && (r.Name == "etcdkeys" || r.Name == "auditevents") {
		return false
	}
	return slices.Contains(r.Verbs, "list") && slices.Contains(r.Verbs, "watch")
}

// storageResources are the built-in resources kube-apiserver stores under
// another segment than their plural; Glassplane's API server keeps the
// same layout (controlplane/apiserver's resource table).
var storageResources = map[schema.GroupResource]string{
	{Resource: "nodes"}:                                                    "minions",
	{Resource: "services"}:                                                 "services/specs",
	{Resource: "endpoints"}:                                                "services/endpoints",
	{Resource: "replicationcontrollers"}:                                   "controllers",
	{Group: "networking.k8s.io", Resource: "ingresses"}:                    "ingress",
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}: "apiextensions.k8s.io/customresourcedefinitions",
	{Group: "apiregistration.k8s.io", Resource: "apiservices"}:             "apiregistration.k8s.io/apiservices",
}

// storageResource is gr's key segment: a custom resource's is
// "<group>/<plural>", as is that of a resource of Glassplane's own group
// (schedulingdecisions: /registry/glassplane.io/schedulingdecisions/);
// a built-in's is its plural but for storageResources.
func storageResource(gr schema.GroupResource, custom func(schema.GroupResource) bool) string {
	if s, ok := storageResources[gr]; ok {
		return s
	}
	if custom(gr) || gr.Group == v1alpha1.GroupName {
		return gr.Group + "/" + gr.Resource
	}
	return gr.Resource
}

// guessCustom tells custom resources apart when the CRDs cannot be read:
// every group with a dot outside *.k8s.io is taken for a CRD's (a CRD in
// a *.k8s.io group, as the Gateway API's, is then taken for a built-in).
func guessCustom(gr schema.GroupResource) bool {
	return strings.Contains(gr.Group, ".") && !strings.HasSuffix(gr.Group, ".k8s.io")
}

// parseKey returns the resource, namespace and name an object key stands
// for; ok is false when the key is not one of an object of a mapped
// resource.
func (m *resourceMap) parseKey(key string) (res *mapped, namespace, name string, ok bool) {
	rest, found := strings.CutPrefix(key, source.Root)
	if !found {
		return nil, "", "", false
	}
	parts := strings.Split(rest, "/")
	// A segment is one or two parts: try the longer first.
	for n := min(2, len(parts)-1); n >= 1; n-- {
		res, found := m.byStorage[strings.Join(parts[:n], "/")]
		if !found {
			continue
		}
		tail := parts[n:]
		switch {
		case res.Namespaced && len(tail) == 2 && tail[0] != "" && tail[1] != "":
			return res, tail[0], tail[1], true
		case !res.Namespaced && len(tail) == 1 && tail[0] != "":
			return res, "", tail[0], true
		}
	}
	return nil, "", "", false
}

// under returns the resources with objects whose keys may start with
// prefix, each narrowed to a namespace when prefix names one.
func (m *resourceMap) under(prefix string) []target {
	var out []target
	for _, res := range m.list {
		p := res.prefix()
		switch {
		case strings.HasPrefix(p, prefix):
			out = append(out, target{res: res})
		case strings.HasPrefix(prefix, p):
			t := target{res: res}
			if ns, _, found := strings.Cut(prefix[len(p):], "/"); found && res.Namespaced {
				t.namespace = ns
			}
			out = append(out, t)
		}
	}
	return out
}

// discover reads the served resources and builds their map. failed
// names the group-versions whose discovery failed while others answered
// (they are left out).
func discover(ctx context.Context, disco discovery.DiscoveryInterface, meta metadata.Interface, dyn dynamic.Interface) (m *resourceMap, failed []string, err error) {
	lists, err := disco.ServerPreferredResources()
	if err != nil {
		var groups *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &groups) || len(lists) == 0 {
			return nil, nil, fmt.Errorf("failed to discover the served resources: %w", err)
		}
		for gv := range groups.Groups {
			failed = append(failed, gv.String())
		}
	}
	isCustom := guessCustom
	if custom, err := customResources(ctx, meta); err == nil {
		isCustom = func(gr schema.GroupResource) bool { return custom[gr] }
	}
	return newResourceMap(lists, isCustom, aggregatedVersions(ctx, dyn, lists)), failed, nil
}

var (
	crdResource        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	apiServiceResource = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
)

// customResources reads the group-resources the CRDs serve, from their
// names alone (a CRD is named <plural>.<group>).
func customResources(ctx context.Context, meta metadata.Interface) (map[schema.GroupResource]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	list, err := meta.Resource(crdResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("failed to list CustomResourceDefinitions: %w", err)
	}
	out := map[schema.GroupResource]bool{}
	for _, crd := range list.Items {
		if plural, group, ok := strings.Cut(crd.Name, "."); ok {
			out[schema.GroupResource{Group: group, Resource: plural}] = true
		}
	}
	return out, nil
}

// aggregatedVersions are the group-versions other API servers serve
// through this one (APIServices with a service): their objects are not in
// this API server's etcd. Without apiregistration.k8s.io (Glassplane has
// none) or the right to read it, there are none.
func aggregatedVersions(ctx context.Context, dyn dynamic.Interface, lists []*metav1.APIResourceList) map[schema.GroupVersion]bool {
	served := slices.ContainsFunc(lists, func(l *metav1.APIResourceList) bool {
		return strings.HasPrefix(l.GroupVersion, apiServiceResource.Group+"/")
	})
	if !served {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	list, err := dyn.Resource(apiServiceResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	out := map[schema.GroupVersion]bool{}
	for _, svc := range list.Items {
		if _, remote, _ := unstructured.NestedMap(svc.Object, "spec", "service"); !remote {
			continue
		}
		group, _, _ := unstructured.NestedString(svc.Object, "spec", "group")
		version, _, _ := unstructured.NestedString(svc.Object, "spec", "version")
		out[schema.GroupVersion{Group: group, Version: version}] = true
	}
	return out
}

// forbiddenOrGone reports whether err says the resource cannot be read by
// this identity or is no longer served: reading it again will not help
// until discovery changes.
func forbiddenOrGone(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err)
}
