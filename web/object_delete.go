package web

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/glassplane/glassplane/web/source"

	"github.com/labstack/echo/v5"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// objectDelete deletes the object of an object page through the API, as
// the logged-in user (with the stored uid as precondition, so a newer
// object of the same name is never hit), and goes back to the page, which
// shows the deletion as it happens or the API's refusal.
func (d *Dashboard) objectDelete(c *echo.Context) error {
	ctx := c.Request().Context()
	resource, namespace, name := c.Param("resource"), c.Param("namespace"), c.Param("name")
	back := objectHref(resource, namespace, name)
	fail := func(msg string) error {
		return c.Redirect(http.StatusSeeOther, back+"?error="+url.QueryEscape(msg))
	}
	if d.applier == nil {
		return fail(errNoAPI.Error())
	}
	kv, err := d.cfg.Store.Get(ctx, source.Key(storageResource(resource), namespace, name))
	if errors.Is(err, source.ErrNotFound) {
		return fail(resource + " \"" + name + "\" not found")
	}
	if err != nil {
		return err
	}
	head := decodeHead(kv.Value)
	gv, err := schema.ParseGroupVersion(head.APIVersion)
	if err != nil {
		return fail(err.Error())
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: head.Kind}
	mapping, err := d.applier.mapper.RESTMapping(gk, gv.Version)
	if meta.IsNoMatchError(err) {
		// A custom resource defined since discovery was last read.
		d.applier.mapper.Reset()
		mapping, err = d.applier.mapper.RESTMapping(gk, gv.Version)
	}
	if err != nil {
		return fail(err.Error())
	}
	dyn, err := d.applier.client(d.userOf(c.Request()))
	if err != nil {
		return fail(err.Error())
	}
	ri := dynamic.ResourceInterface(dyn.Resource(mapping.Resource))
	if namespace != "" {
		ri = dyn.Resource(mapping.Resource).Namespace(namespace)
	}
	uid := types.UID(head.Metadata.UID)
	if err := ri.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
		return fail(apiMessage(err))
	}
	d.log.Info("dashboard deleted", "object", back, "by", d.actingAs(c.Request()))
	return c.Redirect(http.StatusSeeOther, back)
}
