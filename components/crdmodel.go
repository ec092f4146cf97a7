package components

// PageCRDs is the CustomResourceDefinitions pages' navigation entry.
const PageCRDs Page = "crds"

// CRDs lists the cluster's CustomResourceDefinitions.
type CRDs struct {
	Rows []CRDRow
	// Error is the API's refusal of the list, as it wrote it.
	Error string
}

// CRDRow is one CRD in the list.
type CRDRow struct {
	Name, Href, Group, Kind, Scope string
	Versions                       []string
	Established                    bool
}

// CRD is one CustomResourceDefinition's page: its names, scope, versions
// with their schemas, printer columns and subresources, its conditions
// and how many objects it has.
type CRD struct {
	Name string
	// Error is the API's answer when the CRD could not be read (not
	// found, forbidden), as it wrote it; nothing else is set then.
	Error string

	Group, Scope                     string
	Plural, Singular, Kind, ListKind string
	ShortNames, Categories           []string
	// Conversion is the conversion strategy (None or Webhook).
	Conversion string
	Versions   []CRDVersion
	Conditions []CRDCondition
	// Objects counts the CRD's objects the user may list (with
	// ObjectsMore when the count is a lower bound); ObjectsError is the
	// API's refusal of that list.
	Objects      int64
	ObjectsMore  bool
	ObjectsError string
	// ListHref is the page listing the objects; ObjectHref the CRD as an
	// object (its timeline, YAML and field owners).
	ListHref   string
	ObjectHref string
}

// CRDVersion is one version of a CRD.
type CRDVersion struct {
	Name                        string
	Served, Storage, Deprecated bool
	DeprecationWarning          string
	Schema                      []SchemaRow
	Columns                     []PrinterColumn
	Subresources                []string
	SelectableFields            []string
	// SchemaNote says why the schema is shown in part or not at all.
	SchemaNote string
}

// SchemaRow is one field of an OpenAPI schema, in a depth-first walk.
type SchemaRow struct {
	// Path is where the field sits (spec.ports[*].port); Name its last
	// part; Depth how deep it is, from 0 for a top-level field.
	Path, Name string
	Depth      int
	// Type reads like "integer", "array of object", "int-or-string".
	Type        string
	Required    bool
	Description string
	// Constraints are the rest of the schema in a few words
	// (format, enum, minimum, default, list-type, preserves unknown fields).
	Constraints []string
	// Rules are the field's x-kubernetes-validations.
	Rules []SchemaRule
}

// SchemaRule is one x-kubernetes-validations CEL rule.
type SchemaRule struct {
	Rule, Message, Reason, FieldPath string
}

// PrinterColumn is one additionalPrinterColumns entry.
type PrinterColumn struct {
	Name, Type, Format, JSONPath, Description string
	Priority                                  int32
}

// CRDCondition is one status condition of a CRD.
type CRDCondition struct {
	Type, Status, Reason, Message, LastTransition string
}

// ResourceList is the objects of one resource, as the API server prints
// them for kubectl get (its Table, printer columns included).
type ResourceList struct {
	// Resource is "plural" or "plural.group"; Kind and GroupVersion are
	// what discovery says.
	Resource, Kind, GroupVersion string
	Namespace                    string
	Columns                      []string
	Rows                         []ResourceListRow
	// More is true when the list was cut at its page size.
	More bool
	// Error is the API's refusal, as it wrote it.
	Error string
	// CRDHref is the resource's CRD page, for a custom resource.
	CRDHref string
	// DataPathNote and DataPathNoteKey are as Object's.
	DataPathNote, DataPathNoteKey string
}

// ResourceListRow is one object of a ResourceList.
type ResourceListRow struct {
	Namespace, Name, Href string
	Cells                 []string
}
