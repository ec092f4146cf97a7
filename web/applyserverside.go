package web

import (
	"context"
	"strings"

	"github.com/labstack/echo/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/glassplane/glassplane/components"
)

// applyMode is how the apply form sends a manifest: as the dashboard's
// create-or-update (kubectl apply's client side), or as server-side apply
// patches by a field manager, forcing conflicts or not; either as a dry
// run or for real.
type applyMode struct {
	dryRun       bool
	serverSide   bool
	fieldManager string
	force        bool
}

// applyModeOf reads the form's server-side apply fields: serverSide=on,
// fieldManager (the dashboard's name when empty) and force=on.
func applyModeOf(c *echo.Context, dryRun bool) applyMode {
	m := applyMode{dryRun: dryRun, serverSide: c.FormValue("serverSide") == "on", force: c.FormValue("force") == "on"}
	m.fieldManager = strings.TrimSpace(c.FormValue("fieldManager"))
	if m.fieldManager == "" {
		m.fieldManager = fieldManager
	}
	return m
}

// serverSideApply sends obj as a server-side apply patch (PATCH with
// application/apply-patch+yaml) by mode's field manager, as kubectl apply
// --server-side does. The API server merges it with what other managers
// own; a field another manager owns with a different value is a 409
// Conflict whose message names the manager and the fields, shown as the
// document's error, unless mode.force takes them over. A dry run lists
// what the API server would add.
func serverSideApply(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured, submitted map[string]any,
	mode applyMode, res components.ApplyResult, fail func(error) components.ApplyResult, href string,
) components.ApplyResult {
	opts := metav1.ApplyOptions{FieldManager: mode.fieldManager, Force: mode.force}
	if mode.dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	applied, err := ri.Apply(ctx, obj.GetName(), obj, opts)
	if err != nil {
		return fail(err)
	}
	res.Action = "serverside-applied"
	if mode.dryRun {
		res.Added = addedFields(submitted, applied.Object)
	} else {
		res.Href = href
	}
	return res
}
