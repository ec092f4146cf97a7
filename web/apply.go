package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v5"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/glassplane/glassplane/components"
)

const (
	// fieldManager names the dashboard in the objects it writes.
	fieldManager = "glassplane-dashboard"
	// maxManifestBytes bounds a submitted manifest.
	maxManifestBytes = 1 << 20
	// applyQPS is the dashboard's request rate to the API server when its
	// configuration sets none; the API server's own limits are the ones
	// that matter.
	applyQPS = 200
)

// examples are the manifests the apply form offers.
var examples = []components.Example{
	{Name: "pod", Label: "Pod mypod", YAML: `apiVersion: v1
kind: Pod
metadata:
  name: mypod
  namespace: default
spec:
  containers:
  - name: mycontainer
    image: glassplane.local/hello:latest
`},
	{Name: "deployment", Label: "Deployment with 3 replicas", YAML: `apiVersion: apps/v1
kind: Deployment
metadata:
  name: hello
  namespace: default
spec:
  replicas: 3
  selector:
    matchLabels:
      app: hello
  template:
    metadata:
      labels:
        app: hello
    spec:
      containers:
      - name: hello
        image: glassplane.local/hello:latest
`},
	{Name: "invalid", Label: "An invalid name", YAML: `apiVersion: v1
kind: Pod
metadata:
  name: My_Pod
  namespace: default
spec:
  containers:
  - name: mycontainer
    image: glassplane.local/hello:latest
`},
}

// applier creates or updates objects through the API server.
type applier struct {
	// dyn acts as the dashboard itself.
	dyn    dynamic.Interface
	mapper meta.ResettableRESTMapper
	// as returns a client acting as a logged-in user (impersonating them);
	// nil when every write is the dashboard's own.
	as func(identity) (dynamic.Interface, error)
}

// client is the dynamic client acting as u (nil: the dashboard).
func (a *applier) client(u *identity) (dynamic.Interface, error) {
	if u == nil || a.as == nil {
		return a.dyn, nil
	}
	return a.as(*u)
}

// newAPIApplier talks to the API server as the identity in cfg, finding
// resources by discovery.
func newAPIApplier(cfg *rest.Config) (*applier, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = fieldManager
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to create the dashboard's API client: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to create the dashboard's discovery client: %w", err)
	}
	return &applier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}, nil
}

// apply creates or updates every document of manifest in order, as u, and
// reports each outcome; with dryRun the API server runs everything up to
// the etcd write (dryRun=All) and each result lists what it would add. The
// error is for a manifest that cannot be read at all.
func (a *applier) apply(ctx context.Context, u *identity, manifest string, dryRun bool) ([]components.ApplyResult, error) {
	return a.applyManifest(ctx, u, manifest, applyMode{dryRun: dryRun})
}

// applyManifest is apply in the given mode: with mode.serverSide each
// document is sent as a server-side apply patch (applyserverside.go).
func (a *applier) applyManifest(ctx context.Context, u *identity, manifest string, mode applyMode) ([]components.ApplyResult, error) {
	dyn, err := a.client(u)
	if err != nil {
		return nil, err
	}
	docs, err := splitManifest(manifest)
	if err != nil {
		return nil, err
	}
	docs = expandLists(docs)
	if len(docs) == 0 {
		return nil, errors.New("the manifest has no documents")
	}
	results := make([]components.ApplyResult, 0, len(docs))
	for i, doc := range docs {
		results = append(results, a.applyOne(ctx, dyn, i+1, doc, mode))
	}
	return results, nil
}

func (a *applier) applyOne(ctx context.Context, dyn dynamic.Interface, index int, doc document, mode applyMode) (res components.ApplyResult) {
	dryRun := mode.dryRun
	if err := checkTypeMeta(doc.JSON); err != nil {
		return components.ApplyResult{Ref: fmt.Sprintf("document %d", index), Error: err.Error()}
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(doc.JSON); err != nil {
		return components.ApplyResult{Ref: fmt.Sprintf("document %d", index), Error: err.Error()}
	}
	submitted := obj.DeepCopy().Object
	gvk := obj.GroupVersionKind()
	res = components.ApplyResult{Ref: kindRef(gvk, obj.GetName())}
	fail := func(err error) components.ApplyResult {
		res.Error = apiMessage(err)
		res.Fields = fieldErrors(err, doc)
		return res
	}
	var dry []string
	if dryRun {
		dry = []string{metav1.DryRunAll}
		defer func() {
			if res.Action != "" {
				res.Action += " (server dry run)"
			}
		}()
	}
	mapping, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		a.mapper.Reset()
		mapping, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		res.Error = fmt.Sprintf("resource mapping not found: no matches for kind %q in version %q", gvk.Kind, gvk.GroupVersion().String())
		return res
	}
	ri := dynamic.ResourceInterface(dyn.Resource(mapping.Resource))
	namespace := ""
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		namespace = obj.GetNamespace()
		if namespace == "" {
			namespace = metav1.NamespaceDefault
			obj.SetNamespace(namespace)
		}
		ri = dyn.Resource(mapping.Resource).Namespace(namespace)
	}
	if mode.serverSide {
		return serverSideApply(ctx, ri, obj, submitted, mode, res, fail, objectHref(mapping.Resource.Resource, namespace, obj.GetName()))
	}

	var existing *unstructured.Unstructured
	if obj.GetName() != "" {
		existing, err = ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fail(err)
		}
		if err != nil {
			existing = nil
		}
	}
	if existing == nil {
		created, err := ri.Create(ctx, obj, metav1.CreateOptions{FieldManager: fieldManager, DryRun: dry})
		if err != nil {
			return fail(err)
		}
		res.Ref = kindRef(gvk, created.GetName())
		res.Action = "created"
		if dryRun {
			res.Added = addedFields(submitted, created.Object)
		} else {
			res.Href = objectHref(mapping.Resource.Resource, namespace, created.GetName())
		}
		return res
	}
	res.Href = objectHref(mapping.Resource.Resource, namespace, obj.GetName())
	merged := existing.DeepCopy()
	mergeInto(merged.Object, obj.Object)
	merged.SetResourceVersion(existing.GetResourceVersion())
	if equality.Semantic.DeepEqual(merged.Object, existing.Object) {
		res.Action = "unchanged"
		return res
	}
	updated, err := ri.Update(ctx, merged, metav1.UpdateOptions{FieldManager: fieldManager, DryRun: dry})
	if err != nil {
		return fail(err)
	}
	res.Action = "configured"
	if dryRun {
		res.Added = addedFields(submitted, updated.Object)
	}
	if rv := updated.GetResourceVersion(); rv != "" && rv == existing.GetResourceVersion() {
		res.Action = "unchanged"
	}
	return res
}

// typeMeta is what a document must say about itself.
type typeMeta struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Items      json.RawMessage `json:"items"`
}

// checkTypeMeta refuses a document without apiVersion or kind with
// kubectl's validation message, instead of guessing the version.
func checkTypeMeta(js []byte) error {
	var tm typeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return fmt.Errorf("error validating data: %w", err)
	}
	switch {
	case tm.APIVersion == "":
		return errors.New("error validating data: apiVersion not set")
	case tm.Kind == "":
		return errors.New("error validating data: kind not set")
	}
	return nil
}

// expandLists replaces each List document (kind List, or any kind ending in
// List, with items) by its items, as kubectl applies a List item by item.
func expandLists(docs []document) []document {
	out := make([]document, 0, len(docs))
	for _, doc := range docs {
		var tm typeMeta
		var items []json.RawMessage
		if json.Unmarshal(doc.JSON, &tm) != nil || !strings.HasSuffix(tm.Kind, "List") || len(tm.Items) == 0 ||
			json.Unmarshal(tm.Items, &items) != nil {
			out = append(out, doc)
			continue
		}
		for i, item := range items {
			out = append(out, document{JSON: item, YAML: doc.YAML, Line: doc.Line, Path: fmt.Sprintf("items[%d]", i)})
		}
	}
	return out
}

// mergeInto lays the fields of src over dst: maps merge key by key, lists of
// the same length merge element by element (so the defaults the API server
// filled into each container are kept), anything else is replaced.
func mergeInto(dst, src map[string]any) {
	for k, sv := range src {
		dst[k] = mergeValue(dst[k], sv)
	}
}

func mergeValue(dv, sv any) any {
	switch s := sv.(type) {
	case map[string]any:
		if d, ok := dv.(map[string]any); ok {
			mergeInto(d, s)
			return d
		}
	case []any:
		if d, ok := dv.([]any); ok && len(d) == len(s) {
			for i := range s {
				d[i] = mergeValue(d[i], s[i])
			}
			return d
		}
	}
	return sv
}

// kindRef reads like kubectl's output: "pod/mypod", "deployment.apps/hello".
func kindRef(gvk schema.GroupVersionKind, name string) string {
	kind := strings.ToLower(gvk.Kind)
	if gvk.Group != "" {
		kind += "." + gvk.Group
	}
	if name == "" {
		return kind
	}
	return kind + "/" + name
}

// apiMessage is the message of the API's Status, or the error's text.
func apiMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message
	}
	return err.Error()
}

// applyForm serves the empty form, or one filled with ?example=<name>.
func (d *Dashboard) applyForm(c *echo.Context) error {
	vm := components.Apply{CSRFToken: csrfToken(c), Examples: examples, ActingAs: d.actingAs(c.Request()), FieldManager: fieldManager}
	if name := c.QueryParam("example"); name != "" {
		for _, e := range examples {
			if e.Name == name {
				vm.Manifest = e.YAML
			}
		}
	}
	return d.renderApply(c, http.StatusOK, vm)
}

// applySubmit applies the posted manifest and shows the outcome per document.
func (d *Dashboard) applySubmit(c *echo.Context) error {
	manifest := c.FormValue("manifest")
	vm := components.Apply{CSRFToken: csrfToken(c), Examples: examples, Manifest: manifest, Submitted: true, ActingAs: d.actingAs(c.Request())}
	status := http.StatusOK
	switch {
	case d.applier == nil:
		vm.Error = "Applying needs a connection to the API server, and this dashboard has none."
		status = http.StatusServiceUnavailable
	case len(manifest) > maxManifestBytes:
		vm.Error = fmt.Sprintf("The manifest is larger than %d bytes.", maxManifestBytes)
		status = http.StatusRequestEntityTooLarge
	default:
		vm.DryRun = c.FormValue("action") != "apply"
		mode := applyModeOf(c, vm.DryRun)
		vm.ServerSide, vm.FieldManager, vm.Force = mode.serverSide, mode.fieldManager, mode.force
		results, err := d.applier.applyManifest(c.Request().Context(), d.userOf(c.Request()), manifest, mode)
		if err != nil {
			vm.Error = err.Error()
			status = http.StatusUnprocessableEntity
		}
		vm.Results = results
		vm.Lines = manifestLines(manifest, results)
		for _, r := range results {
			d.log.Debug("dashboard applied", "object", r.Ref, "action", r.Action, "error", r.Error)
		}
	}
	return d.renderApply(c, status, vm)
}

func (d *Dashboard) renderApply(c *echo.Context, status int, vm components.Apply) error {
	seq := d.auditSeq()
	return render(c, status, components.ApplyPage(d.layout("Apply", components.PageApply, d.cfg.Store.Revision(), seq), vm))
}

// manifestLines numbers the manifest's lines and marks those the results'
// field errors point at; nil when no error names a line.
func manifestLines(manifest string, results []components.ApplyResult) []components.ManifestLine {
	marked := map[int]bool{}
	for _, r := range results {
		for _, f := range r.Fields {
			if f.Line > 0 {
				marked[f.Line] = true
			}
		}
	}
	if len(marked) == 0 {
		return nil
	}
	var out []components.ManifestLine
	for i, l := range strings.Split(strings.TrimSuffix(manifest, "\n"), "\n") {
		out = append(out, components.ManifestLine{N: i + 1, Text: strings.TrimRight(l, "\r"), Error: marked[i+1]})
	}
	return out
}

// csrfToken is the token the CSRF middleware expects back in the form.
func csrfToken(c *echo.Context) string {
	token, _ := c.Get(csrfField).(string)
	return token
}
