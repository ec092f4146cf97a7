package openapi

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kube-openapi/pkg/builder"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Paths the Service answers.
const (
	V2Path = "/openapi/v2"
	V3Path = "/openapi/v3"
)

// Resource is one served resource, as in the API server's discovery.
type Resource struct {
	// Group is the API group, "" for the core group.
	Group string
	// Version is the group version, such as "v1".
	Version string
	// Kind is the object kind, such as "Pod". It, and Kind+"List" when the
	// list verb is served, must be registered in client-go's scheme and have
	// a generated definition.
	Kind string
	// Resource is the plural resource name in URLs, such as "pods".
	Resource string
	// Namespaced reports whether objects live in a namespace.
	Namespaced bool
	// Verbs are the discovery verbs served: get, list, watch, create, update,
	// patch, delete, deletecollection.
	Verbs []string
	// Subresources are served below an object's path, such as pods/status.
	Subresources []Subresource
}

// Subresource is one served subresource of a Resource.
type Subresource struct {
	// Name is the path segment after the object's name, such as "status".
	Name string
	// Group, Version and Kind name the subresource's body; an empty Kind
	// means the parent resource's kind (as for status).
	Group, Version, Kind string
	// Verbs are the verbs served: get, create, update, patch, and delete
	// for a connect subresource such as pods/proxy.
	Verbs []string
}

// Service serves the OpenAPI v2 and v3 documents of a fixed set of
// resources. The documents are built once by NewService; their JSON and
// protobuf encodings are made on first request and cached.
type Service struct {
	v2       *handler.OpenAPIService
	v3       *handler3.OpenAPIService
	v3Groups map[string]bool
	mux      *http.ServeMux
	// v2Static is the v2 document of the fixed resources, into which
	// SetV2 serves merged with the custom resources' (custom.go).
	v2Static *spec.Swagger
	// custom holds the v3 paths SetCustomV3 published (path → true).
	custom sync.Map
}

// NewService builds the documents describing resources.
func NewService(resources []Resource) (*Service, error) {
	namer := newDefinitionNamer(scheme.Scheme)
	byGV := map[schema.GroupVersion]*groupVersionRoutes{}
	seen := map[string]bool{}
	for _, res := range resources {
		gv := schema.GroupVersion{Group: res.Group, Version: res.Version}
		if res.Version == "" || res.Kind == "" || res.Resource == "" {
			return nil, fmt.Errorf("failed to describe resource %q: version, kind and resource are required", gv.WithResource(res.Resource).String())
		}
		key := gv.WithResource(res.Resource).String()
		if seen[key] {
			return nil, fmt.Errorf("failed to describe resource %q: listed twice", key)
		}
		seen[key] = true
		g, ok := byGV[gv]
		if !ok {
			g = newGroupVersionRoutes(scheme.Scheme, gv)
			g.addDiscovery()
			byGV[gv] = g
		}
		if err := g.addResource(res); err != nil {
			return nil, err
		}
	}

	v3Routes := map[string][]common.Route{}
	groups := map[string]bool{}
	for gv, g := range byGV {
		v3Routes[groupVersionPath(gv)] = g.routes
		if gv.Group != "" {
			groups[gv.Group] = true
		}
	}
	groupNames := make([]string, 0, len(groups))
	for group := range groups {
		groupNames = append(groupNames, group)
	}
	for path, routes := range nonResourceRoutes(groupNames) {
		v3Routes[path] = routes
	}

	v2, err := buildV2(v3Routes, namer)
	if err != nil {
		return nil, err
	}
	s := &Service{
		v2:       handler.NewOpenAPIService(v2),
		v2Static: v2,
		v3:       handler3.NewOpenAPIService(),
		v3Groups: map[string]bool{},
		mux:      http.NewServeMux(),
	}
	v3Defs := GetOpenAPIDefinitions(func(name string) spec.Ref {
		defName, _ := namer.definitionName(name)
		return spec.MustCreateRef("#/components/schemas/" + common.EscapeJsonPointer(defName))
	})
	for path, routes := range v3Routes {
		doc, err := builder3.BuildOpenAPISpecFromRoutes([]common.RouteContainer{&routeContainer{rootPath: "/" + path, routes: routes}}, &common.OpenAPIV3Config{
			Info:                           info(),
			CommonResponses:                map[int]*spec3.Response{http.StatusUnauthorized: {ResponseProps: spec3.ResponseProps{Description: "Unauthorized"}}},
			Definitions:                    v3Defs,
			GetOperationIDAndTagsFromRoute: operationIDAndTags,
			GetDefinitionName:              namer.definitionName,
		})
		if err != nil {
			return nil, fmt.Errorf("failed to build the OpenAPI v3 document of %q: %w", path, err)
		}
		s.v3.UpdateGroupVersion(path, doc)
		s.v3Groups[path] = true
	}

	s.v2.RegisterOpenAPIVersionedService(V2Path, s.mux)
	s.mux.HandleFunc(V3Path, s.v3.HandleDiscovery)
	s.mux.HandleFunc(V3Path+"/", s.serveGroupVersion)
	return s, nil
}

// buildV2 builds the one Swagger 2.0 document over every route.
func buildV2(routesByPath map[string][]common.Route, namer *definitionNamer) (*spec.Swagger, error) {
	paths := make([]string, 0, len(routesByPath))
	for path := range routesByPath {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	containers := make([]common.RouteContainer, 0, len(paths))
	for _, path := range paths {
		containers = append(containers, &routeContainer{rootPath: "/" + path, routes: routesByPath[path]})
	}
	doc, err := builder.BuildOpenAPISpecFromRoutes(containers, &common.Config{
		Info:                           info(),
		CommonResponses:                map[int]spec.Response{http.StatusUnauthorized: {ResponseProps: spec.ResponseProps{Description: "Unauthorized"}}},
		GetDefinitions:                 GetOpenAPIDefinitions,
		GetOperationIDAndTagsFromRoute: operationIDAndTags,
		GetDefinitionName:              namer.definitionName,
	})
	if err != nil {
		return nil, fmt.Errorf("failed to build the OpenAPI v2 document: %w", err)
	}
	return doc, nil
}

func info() *spec.Info {
	return &spec.Info{InfoProps: spec.InfoProps{Title: "Kubernetes", Version: "unversioned"}}
}

// Handler serves /openapi/v2, /openapi/v3 and /openapi/v3/<group version
// path>; mount it for those paths unchanged (for Echo, echo.WrapHandler).
func (s *Service) Handler() http.Handler { return s.mux }

// GroupVersionPaths lists the document paths below /openapi/v3, such as
// "api/v1" and "apis/apps/v1", sorted.
func (s *Service) GroupVersionPaths() []string {
	out := make([]string, 0, len(s.v3Groups))
	for path := range s.v3Groups {
		out = append(out, path)
	}
	sort.Strings(out)
	return out
}

// serveGroupVersion answers 404 for unknown group versions, where
// handler3 would answer an empty 200.
func (s *Service) serveGroupVersion(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, V3Path+"/")
	if _, custom := s.custom.Load(path); !s.v3Groups[path] && !custom {
		http.NotFound(w, r)
		return
	}
	s.v3.HandleGroupVersion(w, r)
}
