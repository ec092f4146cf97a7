package openapi

import (
	"fmt"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/kube-openapi/pkg/common"
)

// groupVersionRoutes collects the routes of one group version.
type groupVersionRoutes struct {
	scheme *runtime.Scheme
	gv     schema.GroupVersion
	// prefix is the URL prefix, "/api/v1" or "/apis/apps/v1".
	prefix string
	// opGV is the group version inside operation IDs, "CoreV1" or "AppsV1".
	opGV   string
	tags   []string
	routes []common.Route
}

func newGroupVersionRoutes(scheme *runtime.Scheme, gv schema.GroupVersion) *groupVersionRoutes {
	group := operationGroup(gv.Group)
	return &groupVersionRoutes{
		scheme: scheme,
		gv:     gv,
		prefix: "/" + groupVersionPath(gv),
		opGV:   group + upperFirst(gv.Version),
		tags:   []string{lowerFirst(group) + "_" + gv.Version},
	}
}

// groupVersionPath is the path of a group version below the server root and
// below /openapi/v3: "api/v1" for the core group, "apis/<group>/<version>"
// otherwise.
func groupVersionPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

// operationGroup is the group as operation IDs spell it: "Core" for the core
// group, "RbacAuthorization" for rbac.authorization.k8s.io.
func operationGroup(group string) string {
	if group == "" {
		return "Core"
	}
	var b strings.Builder
	for _, part := range strings.Split(strings.TrimSuffix(group, ".k8s.io"), ".") {
		b.WriteString(upperFirst(strings.ReplaceAll(part, "-", "")))
	}
	return b.String()
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// newObject returns a sample object of a registered kind.
func (g *groupVersionRoutes) newObject(gvk schema.GroupVersionKind) (runtime.Object, error) {
	obj, err := g.scheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("failed to find the Go type of %q: %w", gvk.String(), err)
	}
	return obj, nil
}

func (g *groupVersionRoutes) add(r *route) {
	r.tags = g.tags
	r.params = append([]common.Parameter{paramPretty}, r.params...)
	if r.produces == nil {
		r.produces = []string{mimeJSON}
	}
	g.routes = append(g.routes, r)
}

// addDiscovery adds GET <prefix>/, the group version's APIResourceList.
func (g *groupVersionRoutes) addDiscovery() {
	g.routes = append(g.routes, &route{
		method:      http.MethodGet,
		path:        g.prefix + "/",
		operationID: "get" + g.opGV + "APIResources",
		tags:        g.tags,
		description: "get available resources",
		produces:    []string{mimeJSON},
		responses:   responses(&metav1.APIResourceList{}, http.StatusOK),
	})
}

// addResource adds the operations of one resource's verbs and subresources.
func (g *groupVersionRoutes) addResource(res Resource) error {
	gvk := g.gv.WithKind(res.Kind)
	obj, err := g.newObject(gvk)
	if err != nil {
		return err
	}
	var nsParams []common.Parameter
	nsPath, scope := "", ""
	if res.Namespaced {
		nsParams = []common.Parameter{paramNS}
		nsPath, scope = "/namespaces/{namespace}", "Namespaced"
	}
	collection := g.prefix + nsPath + "/" + res.Resource
	item := collection + "/{name}"
	itemParams := params(nsParams, []common.Parameter{paramName})
	kindID := g.opGV + scope + res.Kind
	meta := func(action string) map[string]interface{} {
		return map[string]interface{}{extensionAction: action, extensionGVK: gvkExtension(gvk)}
	}

	for _, verb := range res.Verbs {
		switch verb {
		case "list":
			list, err := g.newObject(g.gv.WithKind(res.Kind + "List"))
			if err != nil {
				return err
			}
			listRoute := func(path, id string, ps []common.Parameter) *route {
				return &route{
					method: http.MethodGet, path: path, operationID: id,
					description: "list or watch objects of kind " + res.Kind,
					params:      params(ps, listParams),
					produces:    []string{mimeJSON, mimeJSONWatchStream},
					metadata:    meta("list"),
					responses:   responses(list, http.StatusOK),
				}
			}
			g.add(listRoute(collection, "list"+kindID, nsParams))
			if res.Namespaced {
				g.add(listRoute(g.prefix+"/"+res.Resource, "list"+g.opGV+res.Kind+"ForAllNamespaces", nil))
			}
		case "watch":
			watchRoute := func(path, id, action, what string, ps []common.Parameter) *route {
				return &route{
					method: http.MethodGet, path: path, operationID: id,
					description: what + ". deprecated: use the 'watch' parameter with a list operation instead",
					params:      params(ps, listParams),
					produces:    []string{mimeJSON, mimeJSONWatchStream},
					metadata:    meta(action),
					responses:   responses(&metav1.WatchEvent{}, http.StatusOK),
				}
			}
			watchCollection := g.prefix + "/watch" + nsPath + "/" + res.Resource
			g.add(watchRoute(watchCollection, "watch"+kindID+"List", "watchlist",
				"watch individual changes to a list of "+res.Kind, nsParams))
			g.add(watchRoute(watchCollection+"/{name}", "watch"+kindID, "watch",
				"watch changes to an object of kind "+res.Kind, itemParams))
			if res.Namespaced {
				g.add(watchRoute(g.prefix+"/watch/"+res.Resource, "watch"+g.opGV+res.Kind+"ListForAllNamespaces", "watchlist",
					"watch individual changes to a list of "+res.Kind, nil))
			}
		case "create":
			g.add(&route{
				method: http.MethodPost, path: collection, operationID: "create" + kindID,
				description: "create " + res.Kind,
				params:      params(nsParams, []common.Parameter{paramBody}, writeParams),
				consumes:    []string{mimeJSON},
				body:        obj,
				metadata:    meta("post"),
				responses:   responses(obj, http.StatusOK, http.StatusCreated, http.StatusAccepted),
			})
		case "deletecollection":
			g.add(&route{
				method: http.MethodDelete, path: collection, operationID: "delete" + g.opGV + "Collection" + scope + res.Kind,
				description: "delete collection of " + res.Kind,
				params:      params(nsParams, []common.Parameter{optionalBody()}, deleteCollectionParams),
				consumes:    []string{mimeJSON},
				body:        &metav1.DeleteOptions{},
				metadata:    meta("deletecollection"),
				responses:   responses(&metav1.Status{}, http.StatusOK),
			})
		case "get":
			g.add(&route{
				method: http.MethodGet, path: item, operationID: "read" + kindID,
				description: "read the specified " + res.Kind,
				params:      itemParams,
				metadata:    meta("get"),
				responses:   responses(obj, http.StatusOK),
			})
		case "update":
			g.add(g.replaceRoute(item, "replace"+kindID, "replace the specified "+res.Kind, itemParams, obj, meta("put")))
		case "patch":
			g.add(g.patchRoute(item, "patch"+kindID, "partially update the specified "+res.Kind, itemParams, obj, meta("patch")))
		case "delete":
			g.add(&route{
				method: http.MethodDelete, path: item, operationID: "delete" + kindID,
				description: "delete " + res.Kind,
				params:      params(itemParams, []common.Parameter{optionalBody()}, deleteParams),
				consumes:    []string{mimeJSON},
				body:        &metav1.DeleteOptions{},
				metadata:    meta("delete"),
				responses:   responses(&metav1.Status{}, http.StatusOK, http.StatusAccepted),
			})
		default:
			return fmt.Errorf("failed to describe %q: unknown verb %q", res.Resource, verb)
		}
	}
	for _, sub := range res.Subresources {
		if err := g.addSubresource(res, sub, item, itemParams, kindID); err != nil {
			return err
		}
	}
	return nil
}

// addSubresource adds the operations of one subresource, such as pods/status.
func (g *groupVersionRoutes) addSubresource(res Resource, sub Subresource, item string, itemParams []common.Parameter, kindID string) error {
	gvk := g.gv.WithKind(res.Kind)
	if sub.Kind != "" {
		gvk = schema.GroupVersionKind{Group: sub.Group, Version: sub.Version, Kind: sub.Kind}
	}
	obj, err := g.newObject(gvk)
	if err != nil {
		return err
	}
	path := item + "/" + sub.Name
	id := kindID + operationGroup(sub.Name)
	what := sub.Name + " of the specified " + res.Kind
	meta := func(action string) map[string]interface{} {
		return map[string]interface{}{extensionAction: action, extensionGVK: gvkExtension(gvk)}
	}
	for _, verb := range sub.Verbs {
		switch verb {
		case "get":
			g.add(&route{
				method: http.MethodGet, path: path, operationID: "read" + id,
				description: "read " + what,
				params:      itemParams,
				metadata:    meta("get"),
				responses:   responses(obj, http.StatusOK),
			})
		case "create":
			g.add(&route{
				method: http.MethodPost, path: path, operationID: "create" + id,
				description: "create " + what,
				params:      params(itemParams, []common.Parameter{paramBody}, writeParams),
				consumes:    []string{mimeJSON},
				body:        obj,
				metadata:    meta("post"),
				responses:   responses(obj, http.StatusOK, http.StatusCreated, http.StatusAccepted),
			})
		case "update":
			g.add(g.replaceRoute(path, "replace"+id, "replace "+what, itemParams, obj, meta("put")))
		case "patch":
			g.add(g.patchRoute(path, "patch"+id, "partially update "+what, itemParams, obj, meta("patch")))
		case "delete":
			// A connect subresource (pods/proxy) forwards DELETE.
			g.add(&route{
				method: http.MethodDelete, path: path, operationID: "connectDelete" + id,
				description: "connect DELETE requests to " + what,
				params:      itemParams,
				metadata:    meta("connect"),
				responses:   responses(obj, http.StatusOK),
			})
		default:
			return fmt.Errorf("failed to describe %q: unknown verb %q", res.Resource+"/"+sub.Name, verb)
		}
	}
	return nil
}

func (g *groupVersionRoutes) replaceRoute(path, id, description string, ps []common.Parameter, obj runtime.Object, meta map[string]interface{}) *route {
	return &route{
		method: http.MethodPut, path: path, operationID: id, description: description,
		params:    params(ps, []common.Parameter{paramBody}, writeParams),
		consumes:  []string{mimeJSON},
		body:      obj,
		metadata:  meta,
		responses: responses(obj, http.StatusOK, http.StatusCreated),
	}
}

// patchRoute describes PATCH with the patch types kubectl sends; the
// fieldValidation parameter on it is what tells kubectl the server validates
// fields itself.
func (g *groupVersionRoutes) patchRoute(path, id, description string, ps []common.Parameter, obj runtime.Object, meta map[string]interface{}) *route {
	return &route{
		method: http.MethodPatch, path: path, operationID: id, description: description,
		params:    params(ps, []common.Parameter{paramBody}, writeParams, []common.Parameter{paramForce}),
		consumes:  []string{mimeJSONPatch, mimeMergePatch, mimeStrategicPatch, mimeApplyPatch},
		body:      &metav1.Patch{},
		metadata:  meta,
		responses: responses(obj, http.StatusOK, http.StatusCreated),
	}
}

func optionalBody() parameter {
	p := paramBody
	p.required = false
	return p
}

// nonResourceRoutes are the discovery and version endpoints, keyed by their
// /openapi/v3 group path ("api", "apis", "apis/apps", "version").
func nonResourceRoutes(groups []string) map[string][]common.Route {
	get := func(path, id, tag, description string, model interface{}) common.Route {
		return &route{
			method: http.MethodGet, path: path, operationID: id, tags: []string{tag},
			description: description,
			produces:    []string{mimeJSON},
			responses:   responses(model, http.StatusOK),
		}
	}
	out := map[string][]common.Route{
		"api":     {get("/api/", "getCoreAPIVersions", "core", "get available API versions", &metav1.APIVersions{})},
		"apis":    {get("/apis/", "getAPIVersions", "apis", "get available API versions", &metav1.APIGroupList{})},
		"version": {get("/version/", "getCodeVersion", "version", "get the version information for this server", &version.Info{})},
	}
	for _, group := range groups {
		name := operationGroup(group)
		out["apis/"+group] = []common.Route{get("/apis/"+group+"/", "get"+name+"APIGroup", lowerFirst(name), "get information of a group", &metav1.APIGroup{})}
	}
	return out
}
