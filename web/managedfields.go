package web

import (
	"bytes"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/glassplane/glassplane/components"
)

// fieldOwners turns an object's managedFields into "who owns which field":
// one row per entry (manager, operation, subresource, when) with the paths
// of the fields it owns, as structured-merge-diff reads FieldsV1 (a leaf
// per field; ".spec.template.spec.containers[name=\"web\"].image").
func fieldOwners(entries []metav1.ManagedFieldsEntry) []components.FieldOwner {
	out := make([]components.FieldOwner, 0, len(entries))
	for _, e := range entries {
		row := components.FieldOwner{Manager: e.Manager, Operation: string(e.Operation), Subresource: e.Subresource, APIVersion: e.APIVersion}
		if e.Time != nil {
			row.Time = e.Time.UTC().Format("2006-01-02 15:04:05")
		}
		if e.FieldsV1 != nil {
			set := &fieldpath.Set{}
			if err := set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err == nil {
				set.Leaves().Iterate(func(p fieldpath.Path) { row.Fields = append(row.Fields, p.String()) })
			}
		}
		out = append(out, row)
	}
	return out
}
