package web

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/labstack/echo/v5"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/glassplane/glassplane/components"
)

const (
	// fieldManager names the dashboard in the objects it writes.
	fieldManager = "glassplane-dashboard"
	// maxManifestBytes bounds a submitted manifest.
	maxManifestBytes = 1 << 20
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

// apply creates or updates every document of manifest in order and reports
// each outcome. The error is for a manifest that cannot be read at all.
func (a *applier) apply(ctx context.Context, u *identity, manifest string) ([]components.ApplyResult, error) {
	dyn, err := a.client(u)
	if err != nil {
		return nil, err
	}
	docs, err := splitDocuments(manifest)
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, errors.New("the manifest has no documents")
	}
	results := make([]components.ApplyResult, 0, len(docs))
	for i, doc := range docs {
		results = append(results, a.applyOne(ctx, dyn, i+1, doc))
	}
	return results, nil
}

// splitDocuments reads a multi-document YAML (or JSON) stream into JSON
// documents, skipping empty ones.
func splitDocuments(manifest string) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	var docs [][]byte
	for {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("failed to read the manifest: %w", err)
		}
		if strings.TrimSpace(string(raw)) == "" {
			continue
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("failed to parse document %d: %w", len(docs)+1, err)
		}
		if string(js) == "null" {
			continue
		}
		docs = append(docs, js)
	}
}

func (a *applier) applyOne(ctx context.Context, dyn dynamic.Interface, index int, doc []byte) components.ApplyResult {
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(doc); err != nil {
		return components.ApplyResult{Ref: fmt.Sprintf("document %d", index), Error: err.Error()}
	}
	gvk := obj.GroupVersionKind()
	res := components.ApplyResult{Ref: kindRef(gvk, obj.GetName())}
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

	var existing *unstructured.Unstructured
	if obj.GetName() != "" {
		existing, err = ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			res.Error = apiMessage(err)
			return res
		}
		if err != nil {
			existing = nil
		}
	}
	if existing == nil {
		created, err := ri.Create(ctx, obj, metav1.CreateOptions{FieldManager: fieldManager})
		if err != nil {
			res.Error = apiMessage(err)
			return res
		}
		res.Ref = kindRef(gvk, created.GetName())
		res.Action = "created"
		res.Href = objectHref(mapping.Resource.Resource, namespace, created.GetName())
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
	updated, err := ri.Update(ctx, merged, metav1.UpdateOptions{FieldManager: fieldManager})
	if err != nil {
		res.Error = apiMessage(err)
		return res
	}
	res.Action = "configured"
	if rv := updated.GetResourceVersion(); rv != "" && rv == existing.GetResourceVersion() {
		res.Action = "unchanged"
	}
	return res
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
	vm := components.Apply{CSRFToken: csrfToken(c), Examples: examples}
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
	vm := components.Apply{CSRFToken: csrfToken(c), Examples: examples, Manifest: manifest, Submitted: true}
	status := http.StatusOK
	switch {
	case d.applier == nil:
		vm.Error = "Applying needs a connection to the API server, and this dashboard has none."
		status = http.StatusServiceUnavailable
	case len(manifest) > maxManifestBytes:
		vm.Error = fmt.Sprintf("The manifest is larger than %d bytes.", maxManifestBytes)
		status = http.StatusRequestEntityTooLarge
	default:
		results, err := d.applier.apply(c.Request().Context(), d.userOf(c.Request()), manifest)
		if err != nil {
			vm.Error = err.Error()
			status = http.StatusUnprocessableEntity
		}
		vm.Results = results
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

// csrfToken is the token the CSRF middleware expects back in the form.
func csrfToken(c *echo.Context) string {
	token, _ := c.Get(csrfField).(string)
	return token
}
