package apiserver

import (
	"mime"
	"net/http"
	"net/http/pprof"
	"runtime"
	"slices"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"

	"github.com/glassplane/glassplane/controlplane/kubeversion"
)

// aggregatedDiscoveryType is the media type of aggregated discovery v2.
const aggregatedDiscoveryType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// serveNonResource serves discovery, /version and OpenAPI.
func (q *request) serveNonResource() {
	path := strings.TrimSuffix(q.info.Path, "/")
	if q.r.Method != http.MethodGet && q.r.Method != http.MethodHead {
		q.fail("", errMethodNotAllowed())
		return
	}
	switch {
	case path == "/version":
		q.writeJSON(http.StatusOK, versionInfo())
	case path == oidcConfigPath || path == oidcJWKSPath:
		q.serveOIDC(path)
	case path == "/api":
		if wantsAggregated(q.r.Header.Get("Accept")) {
			q.writeAggregated(q.s.aggregated(true))
			return
		}
		q.writeJSON(http.StatusOK, &metav1.APIVersions{
			TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: q.r.Host}},
		})
	case path == "/apis":
		if wantsAggregated(q.r.Header.Get("Accept")) {
			q.writeAggregated(q.s.aggregated(false))
			return
		}
		q.writeJSON(http.StatusOK, q.s.groupList())
	case path == "/api/v1":
		q.writeJSON(http.StatusOK, q.s.resourceList(schema.GroupVersion{Version: "v1"}))
	case strings.HasPrefix(path, "/apis/"):
		parts := splitPath(path)
		switch len(parts) {
		case 2:
			for _, g := range q.s.groupList().Groups {
				if g.Name == parts[1] {
					g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
					q.writeJSON(http.StatusOK, &g)
					return
				}
			}
		case 3:
			gv := schema.GroupVersion{Group: parts[1], Version: parts[2]}
			if containsGV(q.s.servedGroups(), gv) {
				q.writeJSON(http.StatusOK, q.s.resourceList(gv))
				return
			}
		}
		q.fail("", errNoRoute())
	case q.s.cfg.Profiling && (path == "/debug/pprof" || strings.HasPrefix(path, "/debug/pprof/")):
		q.ev.ResponseStatus = successStatus(http.StatusOK)
		serveProfile(q.w, q.r, strings.TrimPrefix(strings.TrimPrefix(path, "/debug/pprof"), "/"))
	case strings.HasPrefix(path, "/openapi/"):
		q.ev.ResponseStatus = successStatus(http.StatusOK)
		q.s.openapi.ServeHTTP(q.w, q.r)
	default:
		q.fail("", errNoRoute())
	}
}

func errMethodNotAllowed() error {
	return apiStatusError(http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "the server does not allow this method on the requested resource")
}

// versionInfo is what /version answers.
func versionInfo() *version.Info {
	return &version.Info{
		Major: kubeversion.Major, Minor: kubeversion.Minor, GitVersion: GitVersion, GitTreeState: "clean",
		BuildDate: "2026-01-01T00:00:00Z", GoVersion: runtime.Version(), Compiler: runtime.Compiler,
		Platform: runtime.GOOS + "/" + runtime.GOARCH,
	}
}

// wantsAggregated reports whether the client asked for aggregated discovery v2.
func wantsAggregated(accept string) bool {
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || mt != "application/json" {
			continue
		}
		if params["g"] == "apidiscovery.k8s.io" && params["v"] == "v2" && params["as"] == "APIGroupDiscoveryList" {
			return true
		}
	}
	return false
}

func (q *request) writeAggregated(list *apidiscoveryv2.APIGroupDiscoveryList) {
	q.writeJSONAs(http.StatusOK, list, aggregatedDiscoveryType)
}

// groupList is /apis: every named group.
func (s *Server) groupList() *metav1.APIGroupList {
	list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	for _, gv := range s.servedGroups() {
		if gv.Group == "" {
			continue
		}
		v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
		found := false
		for i := range list.Groups {
			if list.Groups[i].Name == gv.Group {
				list.Groups[i].Versions = append(list.Groups[i].Versions, v)
				found = true
			}
		}
		if !found {
			list.Groups = append(list.Groups, metav1.APIGroup{Name: gv.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v})
		}
	}
	for _, group := range s.agg.remoteGroups() {
		g := metav1.APIGroup{Name: group[0].Spec.Group}
		for _, as := range group {
			g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: as.Spec.Group + "/" + as.Spec.Version, Version: as.Spec.Version})
		}
		g.PreferredVersion = g.Versions[0]
		if i := slices.IndexFunc(list.Groups, func(l metav1.APIGroup) bool { return l.Name == g.Name }); i >= 0 {
			list.Groups[i].Versions = append(list.Groups[i].Versions, g.Versions...)
			continue
		}
		list.Groups = append(list.Groups, g)
	}
	return list
}

// resourceList is /api/v1 or /apis/<group>/<version>.
func (s *Server) resourceList(gv schema.GroupVersion) *metav1.APIResourceList {
	list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
	for _, res := range s.servedResources() {
		if res.GroupVersion() != gv {
			continue
		}
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: res.Resource, SingularName: res.Singular, Namespaced: res.Namespaced, Kind: res.GVK.Kind,
			Verbs: res.Verbs, ShortNames: res.ShortNames, Categories: res.Categories,
			StorageVersionHash: storageVersionHash(res),
		})
		for _, sub := range res.Subresources {
			r := metav1.APIResource{Name: res.Resource + "/" + sub.Name, Namespaced: res.Namespaced, Kind: res.GVK.Kind, Verbs: sub.Verbs}
			if !sub.Kind.Empty() {
				r.Group, r.Version, r.Kind = sub.Kind.Group, sub.Kind.Version, sub.Kind.Kind
			}
			list.APIResources = append(list.APIResources, r)
		}
	}
	return list
}

// aggregated is aggregated discovery v2 for /api (core) or /apis.
func (s *Server) aggregated(core bool) *apidiscoveryv2.APIGroupDiscoveryList {
	list := &apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"}}
	resources := s.servedResources()
	for _, gv := range s.servedGroups() {
		if (gv.Group == "") != core {
			continue
		}
		vd := apidiscoveryv2.APIVersionDiscovery{Version: gv.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
		for _, res := range resources {
			if res.GroupVersion() != gv {
				continue
			}
			scope := apidiscoveryv2.ScopeCluster
			if res.Namespaced {
				scope = apidiscoveryv2.ScopeNamespace
			}
			rd := apidiscoveryv2.APIResourceDiscovery{
				Resource: res.Resource, SingularResource: res.Singular, Scope: scope, Verbs: res.Verbs,
				ShortNames: res.ShortNames, Categories: res.Categories,
				ResponseKind: &metav1.GroupVersionKind{Group: res.GVK.Group, Version: res.GVK.Version, Kind: res.GVK.Kind},
			}
			for _, sub := range res.Subresources {
				kind := res.GVK
				if !sub.Kind.Empty() {
					kind = sub.Kind
				}
				rd.Subresources = append(rd.Subresources, apidiscoveryv2.APISubresourceDiscovery{
					Subresource: sub.Name, Verbs: sub.Verbs,
					ResponseKind: &metav1.GroupVersionKind{Group: kind.Group, Version: kind.Version, Kind: kind.Kind},
				})
			}
			vd.Resources = append(vd.Resources, rd)
		}
		placed := false
		for i := range list.Items {
			if list.Items[i].Name == gv.Group {
				list.Items[i].Versions = append(list.Items[i].Versions, vd)
				placed = true
			}
		}
		if !placed {
			list.Items = append(list.Items, apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: gv.Group}, Versions: []apidiscoveryv2.APIVersionDiscovery{vd}})
		}
	}
	if core {
		return list
	}
	// The extension API servers' group versions, with the resources each
	// last described (stale until it has, as kube-aggregator marks them).
	for _, group := range s.agg.remoteGroups() {
		g := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: group[0].Spec.Group}}
		for _, as := range group {
			g.Versions = append(g.Versions, s.agg.versionDiscovery(as))
		}
		if i := slices.IndexFunc(list.Items, func(l apidiscoveryv2.APIGroupDiscovery) bool { return l.Name == g.Name }); i >= 0 {
			list.Items[i].Versions = append(list.Items[i].Versions, g.Versions...)
			continue
		}
		list.Items = append(list.Items, g)
	}
	return list
}

// storageVersionHash is a stable hash of a resource's storage identity, as
// discovery publishes it.
func storageVersionHash(res *resource) string {
	h := uint64(14695981039346656037)
	for _, b := range []byte(res.GVK.String() + "/" + res.Resource) {
		h ^= uint64(b)
		h *= 1099511628211
	}
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/"
	out := make([]byte, 11)
	for i := range out {
		out[i] = alphabet[h%64]
		h /= 64
	}
	return string(out)
}

// serveProfile serves one of Go's runtime profiles, as net/http/pprof's
// handlers do under /debug/pprof/.
func serveProfile(w http.ResponseWriter, r *http.Request, name string) {
	switch name {
	case "":
		pprof.Index(w, r)
	case "cmdline":
		pprof.Cmdline(w, r)
	case "profile":
		pprof.Profile(w, r)
	case "symbol":
		pprof.Symbol(w, r)
	case "trace":
		pprof.Trace(w, r)
	default:
		pprof.Handler(name).ServeHTTP(w, r)
	}
}
