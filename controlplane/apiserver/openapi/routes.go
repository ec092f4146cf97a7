package openapi

import (
	"net/http"

	"k8s.io/kube-openapi/pkg/common"
)

// Extension keys kube-apiserver puts on operations.
const (
	extensionAction = "x-kubernetes-action"
	extensionGVK    = "x-kubernetes-group-version-kind"
)

// Media types the documents declare.
const (
	mimeJSON            = "application/json"
	mimeJSONWatchStream = "application/json;stream=watch"
	mimeJSONPatch       = "application/json-patch+json"
	mimeMergePatch      = "application/merge-patch+json"
	mimeStrategicPatch  = "application/strategic-merge-patch+json"
	mimeApplyPatch      = "application/apply-patch+yaml"
)

// routeContainer implements common.RouteContainer for one group version.
type routeContainer struct {
	rootPath string
	routes   []common.Route
}

func (c *routeContainer) RootPath() string                   { return c.rootPath }
func (c *routeContainer) PathParameters() []common.Parameter { return nil }
func (c *routeContainer) Routes() []common.Route             { return c.routes }

// route implements common.Route: one operation on one path.
type route struct {
	method      string
	path        string
	operationID string
	tags        []string
	description string
	params      []common.Parameter
	consumes    []string
	produces    []string
	metadata    map[string]interface{}
	// body is a sample of the request body type, nil when there is none.
	body      interface{}
	responses []common.StatusCodeResponse
}

func (r *route) Method() string                                   { return r.method }
func (r *route) Path() string                                     { return r.path }
func (r *route) OperationName() string                            { return r.operationID }
func (r *route) Parameters() []common.Parameter                   { return r.params }
func (r *route) Description() string                              { return r.description }
func (r *route) Consumes() []string                               { return r.consumes }
func (r *route) Produces() []string                               { return r.produces }
func (r *route) Metadata() map[string]interface{}                 { return r.metadata }
func (r *route) RequestPayloadSample() interface{}                { return r.body }
func (r *route) ResponsePayloadSample() interface{}               { return nil }
func (r *route) StatusCodeResponses() []common.StatusCodeResponse { return r.responses }

// operationIDAndTags is the common.Config hook that names operations.
func operationIDAndTags(r common.Route) (string, []string, error) {
	if rt, ok := r.(*route); ok {
		return rt.operationID, rt.tags, nil
	}
	return r.OperationName(), nil, nil
}

// statusResponse implements common.StatusCodeResponse.
type statusResponse struct {
	code  int
	model interface{}
}

func (s statusResponse) Code() int          { return s.code }
func (s statusResponse) Message() string    { return http.StatusText(s.code) }
func (s statusResponse) Model() interface{} { return s.model }

// responses answers model under each of the given status codes.
func responses(model interface{}, codes ...int) []common.StatusCodeResponse {
	out := make([]common.StatusCodeResponse, 0, len(codes))
	for _, code := range codes {
		out = append(out, statusResponse{code: code, model: model})
	}
	return out
}

// parameter implements common.Parameter.
type parameter struct {
	name        string
	description string
	kind        common.ParameterKind
	dataType    string
	required    bool
}

func (p parameter) Name() string               { return p.name }
func (p parameter) Description() string        { return p.description }
func (p parameter) Required() bool             { return p.required }
func (p parameter) Kind() common.ParameterKind { return p.kind }
func (p parameter) DataType() string           { return p.dataType }
func (p parameter) AllowMultiple() bool        { return false }

func queryParam(name, dataType, description string) parameter {
	return parameter{name: name, description: description, kind: common.QueryParameterKind, dataType: dataType}
}

// The parameters kube-apiserver documents, with its descriptions shortened.
var (
	paramName = parameter{name: "name", description: "name of the object", kind: common.PathParameterKind, dataType: "string", required: true}
	paramNS   = parameter{name: "namespace", description: "object name and auth scope, such as for teams and projects", kind: common.PathParameterKind, dataType: "string", required: true}
	paramBody = parameter{name: "body", kind: common.BodyParameterKind, dataType: "object", required: true}

	paramPretty               = queryParam("pretty", "string", "If 'true', then the output is pretty printed.")
	paramDryRun               = queryParam("dryRun", "string", "When present, indicates that modifications should not be persisted. The only valid value is All.")
	paramFieldManager         = queryParam("fieldManager", "string", "fieldManager is a name associated with the actor or entity that is making these changes.")
	paramFieldValidation      = queryParam("fieldValidation", "string", "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields. Valid values are Ignore, Warn and Strict.")
	paramForce                = queryParam("force", "boolean", "Force is going to \"force\" Apply requests. It must be unset for non-apply patch requests.")
	paramAllowWatchBookmarks  = queryParam("allowWatchBookmarks", "boolean", "allowWatchBookmarks requests watch events with type \"BOOKMARK\".")
	paramContinue             = queryParam("continue", "string", "The continue option should be set when retrieving more results from the server.")
	paramFieldSelector        = queryParam("fieldSelector", "string", "A selector to restrict the list of returned objects by their fields. Defaults to everything.")
	paramLabelSelector        = queryParam("labelSelector", "string", "A selector to restrict the list of returned objects by their labels. Defaults to everything.")
	paramLimit                = queryParam("limit", "integer", "limit is a maximum number of responses to return for a list call.")
	paramResourceVersion      = queryParam("resourceVersion", "string", "resourceVersion sets a constraint on what resource versions a request may be served from.")
	paramResourceVersionMatch = queryParam("resourceVersionMatch", "string", "resourceVersionMatch determines how resourceVersion is applied to list calls.")
	paramSendInitialEvents    = queryParam("sendInitialEvents", "boolean", "sendInitialEvents=true may be set together with watch=true to begin the watch stream with synthetic events for all existing objects.")
	paramTimeoutSeconds       = queryParam("timeoutSeconds", "integer", "Timeout for the list/watch call.")
	paramWatch                = queryParam("watch", "boolean", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications.")
	paramGracePeriodSeconds   = queryParam("gracePeriodSeconds", "integer", "The duration in seconds before the object should be deleted.")
	paramOrphanDependents     = queryParam("orphanDependents", "boolean", "Deprecated: please use the PropagationPolicy.")
	paramPropagationPolicy    = queryParam("propagationPolicy", "string", "Whether and how garbage collection will be performed. Acceptable values are: 'Orphan', 'Background', 'Foreground'.")
)

// listParams are the query parameters of list and watch calls.
var listParams = []common.Parameter{
	paramAllowWatchBookmarks, paramContinue, paramFieldSelector, paramLabelSelector, paramLimit,
	paramResourceVersion, paramResourceVersionMatch, paramSendInitialEvents, paramTimeoutSeconds, paramWatch,
}

// writeParams are the query parameters of create and update calls.
var writeParams = []common.Parameter{paramDryRun, paramFieldManager, paramFieldValidation}

// deleteParams are the query parameters of delete calls.
var deleteParams = []common.Parameter{paramDryRun, paramGracePeriodSeconds, paramOrphanDependents, paramPropagationPolicy}

// deleteCollectionParams are the query parameters of deletecollection calls.
var deleteCollectionParams = []common.Parameter{
	paramContinue, paramDryRun, paramFieldSelector, paramGracePeriodSeconds, paramLabelSelector, paramLimit,
	paramOrphanDependents, paramPropagationPolicy, paramResourceVersion, paramResourceVersionMatch,
	paramSendInitialEvents, paramTimeoutSeconds,
}

// params joins parameter lists into a fresh slice.
func params(lists ...[]common.Parameter) []common.Parameter {
	var out []common.Parameter
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}
