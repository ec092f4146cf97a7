package apiserver

import (
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/fields"
)

// RequestInfo is what a request's path and method say, as k8s.io/apiserver's
// RequestInfoFactory parses them.
type RequestInfo struct {
	// IsResourceRequest is false for /api, /apis, /api/v1 (discovery) and
	// other non-resource paths.
	IsResourceRequest bool
	Path              string
	// Verb is a Kubernetes verb: get, list, watch, create, update, patch,
	// delete, deletecollection (or the lower-case HTTP method for
	// non-resource requests).
	Verb        string
	APIPrefix   string
	APIGroup    string
	APIVersion  string
	Namespace   string
	Resource    string
	Subresource string
	Name        string
	// SelectorName is the name a list or watch asks for with the field
	// selector metadata.name=<name>; authorization decides it as a request
	// for that object, as kube-apiserver's RequestInfoFactory does, so that
	// RBAC rules limited to resourceNames allow watching one object.
	SelectorName string
	// Parts are the path segments from the resource on.
	Parts []string
}

// namespaceSubresources are the subresources of a namespace that are not
// resources inside it (/api/v1/namespaces/foo/status).
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// parseRequestInfo parses r as RequestInfoFactory.NewRequestInfo does.
func parseRequestInfo(r *http.Request) *RequestInfo {
	info := &RequestInfo{Path: r.URL.Path, Verb: strings.ToLower(r.Method)}
	parts := splitPath(r.URL.Path)
	if len(parts) < 3 || (parts[0] != "api" && parts[0] != "apis") {
		return info
	}
	info.APIPrefix = parts[0]
	parts = parts[1:]
	if info.APIPrefix == "apis" {
		if len(parts) < 3 {
			return info
		}
		info.APIGroup = parts[0]
		parts = parts[1:]
	}
	info.IsResourceRequest = true
	info.APIVersion = parts[0]
	parts = parts[1:]

	watchPath := false
	if parts[0] == "watch" {
		watchPath = true
		parts = parts[1:]
		if len(parts) == 0 {
			info.IsResourceRequest = false
			return info
		}
	}
	switch r.Method {
	case http.MethodPost:
		info.Verb = "create"
	case http.MethodGet, http.MethodHead:
		info.Verb = "get"
	case http.MethodPut:
		info.Verb = "update"
	case http.MethodPatch:
		info.Verb = "patch"
	case http.MethodDelete:
		info.Verb = "delete"
	default:
		info.Verb = ""
	}
	if watchPath {
		info.Verb = "watch"
	}

	if parts[0] == "namespaces" {
		if len(parts) > 1 {
			info.Namespace = parts[1]
			if len(parts) > 2 && !namespaceSubresources[parts[2]] {
				parts = parts[2:]
			}
		}
	}
	info.Parts = parts
	switch {
	case len(parts) >= 3:
		info.Subresource = parts[2]
		info.Name = parts[1]
	case len(parts) == 2:
		info.Name = parts[1]
	}
	info.Resource = parts[0]

	if info.Name == "" && info.Verb == "get" {
		info.Verb = "list"
		// kube-apiserver decodes ListOptions here and, when that fails,
		// still reads watch the way the parameter codec would.
		if queryBool(r.URL.Query(), "watch") {
			info.Verb = "watch"
		}
		if sel, err := fields.ParseSelector(r.URL.Query().Get("fieldSelector")); err == nil {
			if name, ok := sel.RequiresExactMatch("metadata.name"); ok && len(path.IsValidPathSegmentName(name)) == 0 {
				info.SelectorName = name
			}
		}
	}
	if info.Name != "" && info.Verb == "get" && queryBool(r.URL.Query(), "watch") {
		info.Verb = "watch"
	}
	if info.Name == "" && info.Verb == "delete" {
		info.Verb = "deletecollection"
	}
	return info
}

func splitPath(path string) []string {
	path = strings.Trim(path, "/")
	if path == "" {
		return nil
	}
	return strings.Split(path, "/")
}
