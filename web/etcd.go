package web

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/glassplane/glassplane/components"
	"github.com/glassplane/glassplane/controlplane/storage"
)

// etcd serves /etcd: every key under /registry/ grouped by resource and
// namespace, and with ?key= that key's value and revisions.
func (d *Dashboard) etcd(c *echo.Context) error {
	ctx := c.Request().Context()
	seq := d.auditSeq()
	list, err := d.cfg.Store.List(ctx, storage.Root, storage.ListOptions{})
	if err != nil {
		return fmt.Errorf("failed to list etcd keys: %w", err)
	}
	selected := c.QueryParam("key")
	vm := etcdModel(list.Items, selected)
	if selected != "" && vm.Selected == nil {
		kv, err := d.cfg.Store.Get(ctx, selected)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			vm.Missing = selected
		case err != nil:
			return fmt.Errorf("failed to read %q: %w", selected, err)
		default:
			vm.Selected = etcdValue(kv)
		}
	}
	return render(c, http.StatusOK, components.EtcdPage(d.layout("etcd", components.PageEtcd, list.Revision, seq), vm))
}

// etcdModel groups keys (already in key order) by storage resource and
// namespace and picks out the selected one.
func etcdModel(kvs []storage.KeyValue, selected string) components.Etcd {
	vm := components.Etcd{Total: len(kvs)}
	group := map[string]int{}
	for i := range kvs {
		kv := &kvs[i]
		ref, ok := parseKey(kv.Key)
		if !ok {
			ref = keyRef{StorageResource: "(other)", Name: kv.Key}
		}
		gi, ok := group[ref.StorageResource]
		if !ok {
			gi = len(vm.Groups)
			group[ref.StorageResource] = gi
			vm.Groups = append(vm.Groups, components.KeyGroup{Resource: ref.StorageResource})
		}
		g := &vm.Groups[gi]
		g.Count++
		if n := len(g.Namespaces); n == 0 || g.Namespaces[n-1].Namespace != ref.Namespace {
			g.Namespaces = append(g.Namespaces, components.KeyNamespace{Namespace: ref.Namespace})
		}
		ns := &g.Namespaces[len(g.Namespaces)-1]
		ns.Keys = append(ns.Keys, components.EtcdKey{
			Key: kv.Key, Name: ref.Name, Href: keyHref(kv.Key), ModRevision: kv.ModRevision, Selected: kv.Key == selected,
		})
		if kv.Key == selected {
			vm.Selected = etcdValue(kv)
		}
	}
	return vm
}

// etcdValue is a key's value for display, secrets masked.
func etcdValue(kv *storage.KeyValue) *components.EtcdValue {
	v := &components.EtcdValue{
		Key: kv.Key, JSON: prettyJSON(maskSecrets(kv.Value)), CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision,
	}
	if ref, ok := parseKey(kv.Key); ok && ref.StorageResource != "events" {
		v.ObjectHref = objectHref(apiResource(ref.StorageResource), ref.Namespace, ref.Name)
	}
	return v
}
