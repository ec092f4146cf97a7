package web

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/glassplane/glassplane/web/source"

	"github.com/labstack/echo/v5"

	"github.com/glassplane/glassplane/components"
)

// etcd serves /etcd: every key under /registry/ grouped by resource and
// namespace, and with ?key= that key's value and its history through etcd's
// revisions. ?at=<revision> shows the cluster as it was at that revision (as
// long as etcd keeps it); ?rev= picks the key's value at a revision and
// ?from=&to= the two revisions to diff. Raw etcd bypasses every object's
// RBAC, so a logged-in user needs get on etcdkeys.glassplane.io.
//
// The keys come from Config.Etcd (Glassplane's etcdkeys API, or the
// cluster's etcd read directly); without it the page says the cluster's
// etcd cannot be read, once.
func (d *Dashboard) etcd(c *echo.Context) error {
	ctx := c.Request().Context()
	if reader := d.readerOf(c.Request()); !reader.mayReadEtcd(ctx) {
		return d.forbidden(c, components.Forbidden{
			Message: forbiddenMessage(reader.user(), "get", EtcdGroup, EtcdResource, "", ""),
			Hint: "The etcd explorer shows raw keys and values, whatever RBAC allows for the objects in them, so it is only for users " +
				"allowed get on etcdkeys." + EtcdGroup + " (cluster-scoped), as system:masters is.",
			HintKey: "forbidden.etcd",
		})
	}
	seq := d.auditSeq()
	var params [4]int64
	for i, name := range []string{"at", "rev", "from", "to"} {
		v, err := queryInt(c, name)
		if err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, err.Error())
		}
		params[i] = max(v, 0)
	}
	at, rev, from, to := params[0], params[1], params[2], params[3]
	if d.cfg.Etcd == nil {
		vm := components.Etcd{Unavailable: noEtcdMessage}
		return render(c, http.StatusOK, components.EtcdPage(d.layout("etcd", components.PageEtcd, d.cfg.Store.Revision(), seq), vm))
	}
	current := d.cfg.Store.Revision()
	list, err := d.cfg.Etcd.Keys(ctx, source.Root, at)
	var atError string
	switch {
	case errors.Is(err, source.ErrCompacted), errors.Is(err, source.ErrFutureRevision):
		atError = fmt.Sprintf("etcd cannot show revision %d: %v. Showing the newest revision instead.", at, err)
		at = 0
		list, err = d.cfg.Etcd.Keys(ctx, source.Root, 0)
	}
	if err != nil {
		return fmt.Errorf("failed to list etcd keys: %w", err)
	}
	if at == 0 {
		current = max(current, list.Revision)
	}
	selected := c.QueryParam("key")
	vm := etcdModel(list.Items, selected, at)
	vm.Revision, vm.At, vm.AtError = current, at, atError
	if selected != "" {
		if err := d.keyDetail(c, &vm, selected, at, rev, from, to); err != nil {
			return err
		}
	}
	return render(c, http.StatusOK, components.EtcdPage(d.layout("etcd", components.PageEtcd, list.Revision, seq), vm))
}

// keyDetail fills the selected key's value, history and diff.
func (d *Dashboard) keyDetail(c *echo.Context, vm *components.Etcd, key string, at, rev, from, to int64) error {
	start := at
	if rev > 0 && (start == 0 || rev < start) {
		start = rev
	}
	ctx := c.Request().Context()
	versions, end, err := d.cfg.Etcd.History(ctx, key, 0, historyLength)
	if errors.Is(err, source.ErrNotFound) && start > 0 {
		versions, end, err = d.cfg.Etcd.History(ctx, key, start, historyLength)
	}
	switch {
	case errors.Is(err, source.ErrNotFound):
		vm.Selected = nil
		vm.Missing = key
		return nil
	case err != nil:
		return err
	}
	chosen := 0
	if start > 0 {
		chosen = -1
		for i, v := range versions {
			if v.ModRevision <= start {
				chosen = i
				break
			}
		}
		if chosen < 0 {
			vm.Selected = nil
			vm.Missing = key
			return nil
		}
	}
	v := versions[chosen]
	vm.Selected = etcdValue(&source.KeyValue{Key: key, Value: v.Value, CreateRevision: v.CreateRevision, ModRevision: v.ModRevision})
	vm.Selected.Version = v.Version
	vm.Selected.Current = chosen == 0
	base := keyHref(key)
	if at > 0 {
		base += "&at=" + strconv.FormatInt(at, 10)
	}
	for i, h := range versions {
		ev := components.EtcdVersion{
			ModRevision: h.ModRevision, Version: h.Version, Selected: i == chosen,
			Href: base + "&rev=" + strconv.FormatInt(h.ModRevision, 10),
		}
		if i+1 < len(versions) {
			ev.DiffHref = base + "&from=" + strconv.FormatInt(versions[i+1].ModRevision, 10) + "&to=" + strconv.FormatInt(h.ModRevision, 10)
		}
		vm.History = append(vm.History, ev)
	}
	switch {
	case end.CreatedAt > 0:
		vm.HistoryNote = fmt.Sprintf("created at revision %d", end.CreatedAt)
		vm.HistoryNoteKey, vm.HistoryNoteRevision = "etcd.note.created", end.CreatedAt
	case end.CompactedAt > 0:
		vm.HistoryNote = fmt.Sprintf("older revisions were compacted (etcd no longer keeps revision %d)", end.CompactedAt)
		vm.HistoryNoteKey, vm.HistoryNoteRevision = "etcd.note.compacted", end.CompactedAt
	case end.Truncated:
		vm.HistoryNote = fmt.Sprintf("showing the newest %d revisions", historyLength)
		vm.HistoryNoteKey, vm.HistoryNoteRevision = "etcd.note.truncated", historyLength
	}
	if from == 0 && to == 0 && chosen+1 < len(versions) {
		from, to = versions[chosen+1].ModRevision, v.ModRevision
	}
	if from > 0 && to > 0 {
		a, aok := versionAt(versions, from)
		b, bok := versionAt(versions, to)
		if aok && bok {
			vm.Diff = etcdDiff(a, b)
		}
	}
	return nil
}

// versionAt is the value the key had at revision rev.
func versionAt(versions []source.KeyVersion, rev int64) (source.KeyVersion, bool) {
	for _, v := range versions {
		if v.ModRevision <= rev {
			return v, true
		}
	}
	return source.KeyVersion{}, false
}

// etcdDiff compares two values as pretty JSON, secrets masked.
func etcdDiff(a, b source.KeyVersion) *components.EtcdDiff {
	d := &components.EtcdDiff{From: a.ModRevision, To: b.ModRevision}
	for _, l := range lineDiff(prettyJSON(maskSecrets(a.Value)), prettyJSON(maskSecrets(b.Value))) {
		d.Lines = append(d.Lines, components.DiffLine{Op: string(l.Op), Text: l.Text})
		switch l.Op {
		case diffAdd:
			d.Added++
		case diffRemove:
			d.Removed++
		}
	}
	return d
}

// noEtcdMessage is what the explorer says of a cluster whose etcd the
// dashboard cannot read.
const noEtcdMessage = "This cluster's etcd cannot be read from the dashboard: its API server does not serve etcdkeys.glassplane.io " +
	"and the dashboard was started without --etcd-endpoints. Everything else works; objects link here no further."

// etcdModel groups keys (already in key order) by storage resource and
// namespace and picks out the selected one; at > 0 keeps the links at that
// revision. The tree opens on the focus namespace and the selected key.
func etcdModel(kvs []source.KeyValue, selected string, at int64) components.Etcd {
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
		href := keyHref(kv.Key)
		if at > 0 {
			href += "&at=" + strconv.FormatInt(at, 10)
		}
		ns.Keys = append(ns.Keys, components.EtcdKey{
			Key: kv.Key, Name: ref.Name, Href: href, ModRevision: kv.ModRevision, Selected: kv.Key == selected,
		})
		if kv.Key == selected {
			vm.Selected = etcdValue(kv)
		}
	}
	vm.Focus = focusNamespace(kvs)
	for gi := range vm.Groups {
		g := &vm.Groups[gi]
		for ni := range g.Namespaces {
			ns := &g.Namespaces[ni]
			ns.Open = ns.Namespace != "" && ns.Namespace == vm.Focus
			for _, k := range ns.Keys {
				ns.Open = ns.Open || k.Selected
			}
			g.Open = g.Open || ns.Open
		}
	}
	return vm
}

// systemNamespaces are where the cluster writes on its own (leases,
// heartbeats, its controllers' objects): not where a student looks first.
var systemNamespaces = map[string]bool{"kube-system": true, "kube-node-lease": true, "kube-public": true}

// focusNamespace is the namespace of the newest write to a namespaced key
// outside the system's namespaces, most often that of the object the user
// applied last ("" when there is none).
func focusNamespace(kvs []source.KeyValue) string {
	var focus string
	var newest int64
	for i := range kvs {
		ref, ok := parseKey(kvs[i].Key)
		if !ok || ref.Namespace == "" || systemNamespaces[ref.Namespace] || ref.StorageResource == "leases" {
			continue
		}
		if kvs[i].ModRevision > newest {
			focus, newest = ref.Namespace, kvs[i].ModRevision
		}
	}
	return focus
}

// etcdValue is a key's value for display, secrets masked.
func etcdValue(kv *source.KeyValue) *components.EtcdValue {
	v := &components.EtcdValue{
		Key: kv.Key, JSON: prettyJSON(maskSecrets(kv.Value)), CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision,
	}
	if ref, ok := parseKey(kv.Key); ok && ref.StorageResource != "events" {
		v.ObjectHref = objectHref(hrefResource(ref.StorageResource), ref.Namespace, ref.Name)
	}
	return v
}
