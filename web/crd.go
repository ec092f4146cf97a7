package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v5"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"

	"github.com/glassplane/glassplane/components"
)

const (
	// maxSchemaRows bounds the fields a schema tree shows, maxSchemaDepth
	// how deep it goes.
	maxSchemaRows  = 2000
	maxSchemaDepth = 32
	// listPageSize is how many objects a list page and a CRD's count ask
	// for at once.
	listPageSize = 500
)

// crdsPage serves /crds: the CustomResourceDefinitions, read through the
// API as the page's user.
func (d *Dashboard) crdsPage(c *echo.Context) error {
	ctx := c.Request().Context()
	vm := components.CRDs{}
	status := http.StatusOK
	client, err := d.crdClient(c.Request())
	var list *apiextensionsv1.CustomResourceDefinitionList
	if err == nil {
		list, err = client.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
	}
	if err != nil {
		vm.Error, status = apiMessage(err), apiStatusCode(err)
	} else {
		for i := range list.Items {
			crd := &list.Items[i]
			row := components.CRDRow{
				Name: crd.Name, Href: crdHref(crd.Name), Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind,
				Scope: string(crd.Spec.Scope), Established: crdCondition(crd, apiextensionsv1.Established),
			}
			for _, v := range crd.Spec.Versions {
				row.Versions = append(row.Versions, v.Name)
			}
			vm.Rows = append(vm.Rows, row)
		}
	}
	return render(c, status, components.CRDsPage(d.layout("CustomResourceDefinitions", components.PageCRDs, 0, d.auditSeq()), vm))
}

// crdPage serves /crds/<name>: one CustomResourceDefinition read through
// the API as the page's user, with the number of its objects that user
// may list. A CRD that is not there, or that the user may not read,
// shows the API's message.
func (d *Dashboard) crdPage(c *echo.Context) error {
	ctx := c.Request().Context()
	name := c.Param("name")
	vm := components.CRD{Name: name}
	layout := d.layout("CustomResourceDefinition "+name, components.PageCRDs, 0, d.auditSeq())
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		vm.Error = fmt.Sprintf("CustomResourceDefinition.apiextensions.k8s.io %q is invalid: metadata.name: Invalid value: %q: %s", name, name, strings.Join(errs, "; "))
		return render(c, http.StatusBadRequest, components.CRDPage(layout, vm))
	}
	client, err := d.crdClient(c.Request())
	var crd *apiextensionsv1.CustomResourceDefinition
	if err == nil {
		crd, err = client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		vm.Error = apiMessage(err)
		return render(c, apiStatusCode(err), components.CRDPage(layout, vm))
	}
	vm = crdView(crd)
	vm.Objects, vm.ObjectsMore, vm.ObjectsError = d.countObjects(ctx, c.Request(), crd)
	return render(c, http.StatusOK, components.CRDPage(layout, vm))
}

// crdClient is an apiextensions client acting as r's user.
func (d *Dashboard) crdClient(r *http.Request) (apiextensionsclient.Interface, error) {
	if d.cfg.RESTConfig == nil {
		return nil, errNoAPI
	}
	return apiextensionsclient.NewForConfig(d.restConfigFor(d.userOf(r)))
}

// apiStatusCode is the HTTP status of an API error, 503 for an error that
// is not the API's answer (no connection).
func apiStatusCode(err error) int {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code >= 400 {
		return int(status.Status().Code)
	}
	return http.StatusServiceUnavailable
}

// crdHref is a CRD's page.
func crdHref(name string) string {
	return "/crds/" + name
}

// crdView is a CRD's page from the CRD.
func crdView(crd *apiextensionsv1.CustomResourceDefinition) components.CRD {
	n := crd.Spec.Names
	vm := components.CRD{
		Name: crd.Name, Group: crd.Spec.Group, Scope: string(crd.Spec.Scope),
		Plural: n.Plural, Singular: n.Singular, Kind: n.Kind, ListKind: n.ListKind,
		ShortNames: n.ShortNames, Categories: n.Categories, Conversion: "None",
		ListHref:   "/objects/" + n.Plural + "." + crd.Spec.Group,
		ObjectHref: objectHref("customresourcedefinitions", "", crd.Name),
	}
	if crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy != "" {
		vm.Conversion = string(crd.Spec.Conversion.Strategy)
	}
	for _, cd := range crd.Status.Conditions {
		vm.Conditions = append(vm.Conditions, components.CRDCondition{
			Type: string(cd.Type), Status: string(cd.Status), Reason: cd.Reason, Message: cd.Message,
			LastTransition: timestamp(cd.LastTransitionTime.Time),
		})
	}
	for _, v := range crd.Spec.Versions {
		cv := components.CRDVersion{Name: v.Name, Served: v.Served, Storage: v.Storage, Deprecated: v.Deprecated}
		if v.DeprecationWarning != nil {
			cv.DeprecationWarning = *v.DeprecationWarning
		}
		if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			cv.Schema, cv.SchemaNote = schemaRows(v.Schema.OpenAPIV3Schema)
		} else {
			cv.SchemaNote = "This version has no schema."
		}
		for _, col := range v.AdditionalPrinterColumns {
			cv.Columns = append(cv.Columns, components.PrinterColumn{
				Name: col.Name, Type: col.Type, Format: col.Format, JSONPath: col.JSONPath, Description: col.Description, Priority: col.Priority,
			})
		}
		if s := v.Subresources; s != nil {
			if s.Status != nil {
				cv.Subresources = append(cv.Subresources, "status")
			}
			if s.Scale != nil {
				scale := fmt.Sprintf("scale (spec %s, status %s", s.Scale.SpecReplicasPath, s.Scale.StatusReplicasPath)
				if s.Scale.LabelSelectorPath != nil {
					scale += ", selector " + *s.Scale.LabelSelectorPath
				}
				cv.Subresources = append(cv.Subresources, scale+")")
			}
		}
		for _, f := range v.SelectableFields {
			cv.SelectableFields = append(cv.SelectableFields, f.JSONPath)
		}
		vm.Versions = append(vm.Versions, cv)
	}
	return vm
}

// schemaRows walks an OpenAPI v3 schema depth first, properties in name
// order, into the rows of its tree: an array's item fields sit under it
// as <field>[*].<name>, a map's value fields as <field>.*.<name>. note
// says where the walk was cut short.
func schemaRows(root *apiextensionsv1.JSONSchemaProps) (rows []components.SchemaRow, note string) {
	if len(root.XValidations) > 0 {
		rows = append(rows, components.SchemaRow{Path: ".", Name: "(object)", Type: schemaType(root), Rules: schemaRules(root)})
	}
	var walk func(s *apiextensionsv1.JSONSchemaProps, prefix string, depth int)
	walk = func(s *apiextensionsv1.JSONSchemaProps, prefix string, depth int) {
		if depth > maxSchemaDepth {
			note = fmt.Sprintf("Fields deeper than %d levels are not shown.", maxSchemaDepth)
			return
		}
		required := map[string]bool{}
		for _, r := range s.Required {
			required[r] = true
		}
		names := make([]string, 0, len(s.Properties))
		for name := range s.Properties {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if len(rows) >= maxSchemaRows {
				note = fmt.Sprintf("The schema has more than %d fields; the first %d are shown.", maxSchemaRows, maxSchemaRows)
				return
			}
			p := s.Properties[name]
			path := name
			if prefix != "" {
				path = prefix + "." + name
			}
			rows = append(rows, components.SchemaRow{
				Path: path, Name: name, Depth: depth, Type: schemaType(&p), Required: required[name],
				Description: p.Description, Constraints: schemaConstraints(&p), Rules: schemaRules(&p),
			})
			walk(&p, path, depth+1)
			switch {
			case p.Items != nil && p.Items.Schema != nil:
				item := p.Items.Schema
				rows[len(rows)-1].Rules = append(rows[len(rows)-1].Rules, itemRules(item, "[*]")...)
				walk(item, path+"[*]", depth+1)
			case p.AdditionalProperties != nil && p.AdditionalProperties.Schema != nil:
				value := p.AdditionalProperties.Schema
				rows[len(rows)-1].Rules = append(rows[len(rows)-1].Rules, itemRules(value, ".*")...)
				walk(value, path+".*", depth+1)
			}
		}
	}
	walk(root, "", 0)
	return rows, note
}

// itemRules are an array item's or map value's own rules, shown on the
// field that holds them.
func itemRules(s *apiextensionsv1.JSONSchemaProps, where string) []components.SchemaRule {
	rules := schemaRules(s)
	for i := range rules {
		rules[i].FieldPath = strings.TrimSpace(where + " " + rules[i].FieldPath)
	}
	return rules
}

// schemaType reads like kubectl explain's types: "integer",
// "[]string", "map[string]object", "int-or-string", "Object".
func schemaType(s *apiextensionsv1.JSONSchemaProps) string {
	switch {
	case s.XIntOrString:
		return "int-or-string"
	case s.XEmbeddedResource:
		return "Object (embedded resource)"
	case s.Type == "array" && s.Items != nil && s.Items.Schema != nil:
		return "[]" + schemaType(s.Items.Schema)
	case s.Type == "object" && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
		return "map[string]" + schemaType(s.AdditionalProperties.Schema)
	case s.Type == "":
		if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields {
			return "any"
		}
		return "Object"
	}
	return s.Type
}

// schemaConstraints says the rest of a field's schema in a few words.
func schemaConstraints(s *apiextensionsv1.JSONSchemaProps) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if s.Format != "" {
		add("format %s", s.Format)
	}
	if len(s.Enum) > 0 {
		var vals []string
		for _, e := range s.Enum {
			vals = append(vals, string(e.Raw))
		}
		add("enum %s", strings.Join(vals, ", "))
	}
	if s.Minimum != nil {
		add("minimum %s", strconv.FormatFloat(*s.Minimum, 'g', -1, 64))
	}
	if s.Maximum != nil {
		add("maximum %s", strconv.FormatFloat(*s.Maximum, 'g', -1, 64))
	}
	if s.MinLength != nil {
		add("minLength %d", *s.MinLength)
	}
	if s.MaxLength != nil {
		add("maxLength %d", *s.MaxLength)
	}
	if s.Pattern != "" {
		add("pattern %s", s.Pattern)
	}
	if s.MinItems != nil {
		add("minItems %d", *s.MinItems)
	}
	if s.MaxItems != nil {
		add("maxItems %d", *s.MaxItems)
	}
	if s.Default != nil {
		add("default %s", string(s.Default.Raw))
	}
	if s.Nullable {
		add("nullable")
	}
	if s.XListType != nil {
		lt := "list-type " + *s.XListType
		if len(s.XListMapKeys) > 0 {
			lt += " (keys " + strings.Join(s.XListMapKeys, ", ") + ")"
		}
		add("%s", lt)
	}
	if s.XMapType != nil {
		add("map-type %s", *s.XMapType)
	}
	if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields {
		add("preserves unknown fields")
	}
	return out
}

// schemaRules are a field's x-kubernetes-validations.
func schemaRules(s *apiextensionsv1.JSONSchemaProps) []components.SchemaRule {
	var out []components.SchemaRule
	for _, r := range s.XValidations {
		rule := components.SchemaRule{Rule: r.Rule, Message: r.Message, FieldPath: r.FieldPath}
		if r.MessageExpression != "" && rule.Message == "" {
			rule.Message = "messageExpression: " + r.MessageExpression
		}
		if r.Reason != nil {
			rule.Reason = string(*r.Reason)
		}
		out = append(out, rule)
	}
	return out
}

// countObjects counts a CRD's objects the user may list, in every
// namespace, in one page of listPageSize: more is true when there are
// more than it could count.
func (d *Dashboard) countObjects(ctx context.Context, r *http.Request, crd *apiextensionsv1.CustomResourceDefinition) (n int64, more bool, errMsg string) {
	version := servedVersion(crd)
	if version == "" {
		return 0, false, "no version of this CRD is served"
	}
	dyn, err := d.dynamicOf(r)
	if err != nil {
		return 0, false, apiMessage(err)
	}
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Spec.Names.Plural}
	list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: listPageSize})
	if err != nil {
		return 0, false, apiMessage(err)
	}
	n = int64(len(list.Items))
	if rest := list.GetRemainingItemCount(); rest != nil {
		return n + *rest, false, ""
	}
	return n, list.GetContinue() != "", ""
}

// servedVersion is the version a CRD's objects are read in: the storage
// version when served, else the first served one.
func servedVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	first := ""
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		if v.Storage {
			return v.Name
		}
		if first == "" {
			first = v.Name
		}
	}
	return first
}

// dynamicOf is a dynamic client acting as r's user.
func (d *Dashboard) dynamicOf(r *http.Request) (dynamic.Interface, error) {
	if d.cfg.RESTConfig == nil {
		return nil, errNoAPI
	}
	return dynamic.NewForConfig(d.restConfigFor(d.userOf(r)))
}

// resourceList serves /objects/<resource>: the objects of any resource
// discovery knows ("widgets", "widgets.example.com"), as the API server
// prints them for kubectl get (a Table, with a CRD's
// additionalPrinterColumns), read as the page's user; ?namespace= narrows
// it to one namespace. A resource the server does not have shows
// kubectl's message.
func (d *Dashboard) resourceList(c *echo.Context) error {
	ctx := c.Request().Context()
	resource, namespace := c.Param("resource"), c.QueryParam("namespace")
	vm := components.ResourceList{Resource: resource, Namespace: namespace}
	layout := d.layout(resource, components.PageCRDs, 0, d.auditSeq())
	if errs := validation.IsDNS1123Label(namespace); namespace != "" && len(errs) > 0 {
		vm.Error = fmt.Sprintf("namespace %q is invalid: %s", namespace, strings.Join(errs, "; "))
		return render(c, http.StatusBadRequest, components.ResourceListPage(layout, vm))
	}
	if d.cfg.RESTConfig == nil {
		vm.Error = errNoAPI.Error()
		return render(c, http.StatusServiceUnavailable, components.ResourceListPage(layout, vm))
	}
	k, ok := kinds.byResource(resource)
	if !ok {
		vm.Error = fmt.Sprintf("the server doesn't have a resource type %q", resource)
		return render(c, http.StatusNotFound, components.ResourceListPage(layout, vm))
	}
	vm.Kind, vm.GroupVersion = k.Kind, schema.GroupVersion{Group: k.Group, Version: k.Version}.String()
	vm.DataPathNote, vm.DataPathNoteKey = dataPathNote(k.Group, k.Resource)
	if k.Custom {
		vm.CRDHref = crdHref(k.Resource + "." + k.Group)
	}
	client, err := d.clientFor(c.Request())
	if err != nil {
		vm.Error = err.Error()
		return render(c, http.StatusServiceUnavailable, components.ResourceListPage(layout, vm))
	}
	path := "/apis/" + vm.GroupVersion
	if k.Group == "" {
		path = "/api/" + k.Version
	}
	if namespace != "" && k.Namespaced {
		path += "/namespaces/" + namespace
	}
	raw, err := client.CoreV1().RESTClient().Get().AbsPath(path, k.Resource).
		Param("limit", strconv.Itoa(listPageSize)).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json").
		DoRaw(ctx)
	if err != nil {
		vm.Error = apiMessage(err)
		return render(c, apiStatusCode(err), components.ResourceListPage(layout, vm))
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		vm.Error = fmt.Sprintf("the API server's answer is not a Table: %v", err)
		return render(c, http.StatusBadGateway, components.ResourceListPage(layout, vm))
	}
	hrefRes := k.Resource
	if k.Custom {
		hrefRes = k.Resource + "." + k.Group
	}
	vm.Rows, vm.Columns = tableRows(&table, hrefRes)
	vm.More = table.Continue != ""
	return render(c, http.StatusOK, components.ResourceListPage(layout, vm))
}

// tableRows reads a Table's columns of priority 0 (kubectl get's
// default) and its rows, each linked to its object's page.
func tableRows(t *metav1.Table, hrefRes string) ([]components.ResourceListRow, []string) {
	var cols []int
	var names []string
	for i, c := range t.ColumnDefinitions {
		if c.Priority == 0 {
			cols = append(cols, i)
			names = append(names, c.Name)
		}
	}
	var rows []components.ResourceListRow
	for _, r := range t.Rows {
		row := components.ResourceListRow{}
		var meta metav1.PartialObjectMetadata
		if len(r.Object.Raw) > 0 && json.Unmarshal(r.Object.Raw, &meta) == nil {
			row.Namespace, row.Name = meta.Namespace, meta.Name
			row.Href = objectHref(hrefRes, meta.Namespace, meta.Name)
		}
		for _, i := range cols {
			cell := ""
			if i < len(r.Cells) && r.Cells[i] != nil {
				cell = fmt.Sprint(r.Cells[i])
			}
			row.Cells = append(row.Cells, cell)
		}
		rows = append(rows, row)
	}
	return rows, names
}
