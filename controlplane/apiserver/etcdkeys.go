package apiserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/glassplane/glassplane/api/v1alpha1"
	"github.com/glassplane/glassplane/controlplane/storage"
	"github.com/glassplane/glassplane/etcdview"
)

// etcdkeys.glassplane.io/v1alpha1 is the etcd key explorer as an API
// (issue 27): the keys the API server stores under /registry/, read only,
// answered from etcd by package etcdview. RBAC decides who may read them:
// by default system:masters and the dashboard's identity, as raw values
// show every object whatever RBAC says of it.
//
//   - list: the keys (without values) at the revision of resourceVersion
//     (now when empty or "0"), limit and continue paging through them.
//   - get <name>: one key (its name is the key as unpadded base64url) with
//     its value decoded, at resourceVersion or now.
//   - get <name>/history: the key's values back through etcd's revisions,
//     newest first, from resourceVersion or now.
//   - watch: every change under /registry/ after resourceVersion (without
//     one, first every key as ADDED), values left out, as the live
//     explorer follows etcd.

func init() { utilruntime.Must(v1alpha1.AddToScheme(scheme.Scheme)) }

func etcdKeyResources() []*resource {
	return []*resource{{
		GVK: v1alpha1.SchemeGroupVersion.WithKind("EtcdKey"), Resource: "etcdkeys", Singular: "etcdkey",
		Verbs: []string{"get", "list", "watch"}, Serve: (*request).serveEtcdKeys,
		Subresources: []*subresource{{Name: "history", Kind: v1alpha1.SchemeGroupVersion.WithKind("EtcdKeyList"), Verbs: []string{"get"}}},
	}}
}

// etcdContinue is the continue token of an etcdkeys list: the revision the
// first page was read at and the key the next page starts at.
type etcdContinue struct {
	Revision int64  `json:"rv"`
	Start    string `json:"start"`
}

func (q *request) serveEtcdKeys() error {
	switch q.info.Verb {
	case "get", "list":
	case "watch":
		if q.info.Name != "" || q.info.Subresource != "" {
			return apierrors.NewMethodNotSupported(q.res.GroupResource(), q.info.Verb)
		}
		return q.watchEtcdKeys()
	default:
		return apierrors.NewMethodNotSupported(q.res.GroupResource(), q.info.Verb)
	}
	opts, err := q.listOptions()
	if err != nil {
		return err
	}
	var rev int64
	if rv := opts.ResourceVersion; rv != "" && rv != "0" {
		if _, err := fmt.Sscan(rv, &rev); err != nil || rev < 0 {
			return apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersion %q: must be an etcd revision", rv))
		}
	}
	r := etcdview.New(q.s.store.Client())
	gr := q.res.GroupResource()
	if q.info.Name == "" {
		start := ""
		if opts.Continue != "" {
			b, err := base64.RawURLEncoding.DecodeString(opts.Continue)
			var c etcdContinue
			if err != nil || json.Unmarshal(b, &c) != nil || c.Revision <= 0 {
				return apierrors.NewBadRequest("continue key is not valid: the token was not made by an etcdkeys list")
			}
			rev, start = c.Revision, c.Start
		}
		page, err := r.List(q.ctx, storage.Root, start, rev, opts.Limit)
		if err != nil {
			return etcdViewError(gr, "", rev, err)
		}
		list := &v1alpha1.EtcdKeyList{Items: page.Keys}
		list.ResourceVersion = fmt.Sprint(page.Revision)
		if page.Next != "" {
			b, _ := json.Marshal(etcdContinue{Revision: page.Revision, Start: page.Next})
			list.Continue = base64.RawURLEncoding.EncodeToString(b)
		}
		return q.respondEtcdKeys(list)
	}
	key, err := v1alpha1.EtcdKeyOf(q.info.Name)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	switch q.info.Subresource {
	case "":
		k, err := r.Get(q.ctx, key, rev)
		if err != nil {
			return etcdViewError(gr, q.info.Name, rev, err)
		}
		return q.respondEtcdKeys(k)
	case "history":
		versions, end, err := r.History(q.ctx, key, rev)
		if err != nil {
			return etcdViewError(gr, q.info.Name, rev, err)
		}
		list := &v1alpha1.EtcdKeyList{Items: versions, History: &end}
		list.ResourceVersion = versions[0].ResourceVersion
		return q.respondEtcdKeys(list)
	}
	return errNoRoute()
}

// etcdViewError words etcdview's errors as kube-apiserver words the same
// conditions on its own lists.
func etcdViewError(gr schema.GroupResource, name string, rev int64, err error) error {
	switch {
	case errors.Is(err, etcdview.ErrNotFound):
		return apierrors.NewNotFound(gr, name)
	case errors.Is(err, etcdview.ErrCompacted):
		return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d", rev))
	case errors.Is(err, etcdview.ErrFutureRevision):
		return apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d", rev), 1)
	}
	return apierrors.NewInternalError(err)
}

var etcdKeyColumns = []metav1.TableColumnDefinition{
	col("Key", "string", "The etcd key", 0),
	col("Mod Revision", "integer", "The etcd revision of the value", 0),
	col("Create Revision", "integer", "The etcd revision that created the key", 0),
	col("Version", "integer", "The writes since the key was created", 0),
	col("Size", "integer", "The value's length in bytes", 0),
}

// respondEtcdKeys answers an EtcdKey or a list, as a Table when asked.
func (q *request) respondEtcdKeys(obj runtime.Object) error {
	var items []v1alpha1.EtcdKey
	switch o := obj.(type) {
	case *v1alpha1.EtcdKey:
		o.TypeMeta = metav1.TypeMeta{Kind: "EtcdKey", APIVersion: v1alpha1.SchemeGroupVersion.String()}
		items = []v1alpha1.EtcdKey{*o}
	case *v1alpha1.EtcdKeyList:
		o.TypeMeta = metav1.TypeMeta{Kind: "EtcdKeyList", APIVersion: v1alpha1.SchemeGroupVersion.String()}
		items = o.Items
	}
	if wantsAs(q.r.Header.Get("Accept")) == asTable {
		table := &metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}, ColumnDefinitions: etcdKeyColumns}
		if l, ok := obj.(*v1alpha1.EtcdKeyList); ok {
			table.ResourceVersion, table.Continue = l.ResourceVersion, l.Continue
		}
		for i := range items {
			k := &items[i]
			partial := meta.AsPartialObjectMetadata(k)
			partial.TypeMeta = metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"}
			row := metav1.TableRow{Cells: []any{k.Key, k.ModRevision, k.CreateRevision, k.Version, k.Size}}
			row.Object.Object = partial
			table.Rows = append(table.Rows, row)
		}
		q.writeJSON(http.StatusOK, table)
		return nil
	}
	q.respond(http.StatusOK, obj)
	return nil
}

// watchEtcdKeys streams the changes under /registry/ from the storage's
// one etcd watch: ADDED when a put creates a key, MODIFIED on other puts,
// DELETED on deletes; objects carry the key's revisions and size, not its
// value (get it by name).
func (q *request) watchEtcdKeys() error {
	opts, err := q.listOptions()
	if err != nil {
		return err
	}
	startRev, err := parseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return err
	}
	timeout := defaultWatchTimeout
	if n := opts.TimeoutSeconds; n != nil && *n > 0 {
		timeout = time.Duration(*n) * time.Second
	}
	ctx, cancel := context.WithTimeout(q.ctx, timeout)
	defer cancel()
	var initial []v1alpha1.EtcdKey
	if startRev == 0 {
		page, err := etcdview.New(q.s.store.Client()).List(ctx, storage.Root, "", 0, 0)
		if err != nil {
			return etcdViewError(q.res.GroupResource(), "", 0, err)
		}
		initial, startRev = page.Keys, page.Revision
	}
	q.enter(stageEtcd)
	events, err := q.s.store.Watch(ctx, storage.Root, startRev)
	ws := &watchStream{q: q, lastRev: startRev}
	q.w.Header().Set("Content-Type", "application/json")
	q.w.Header().Set("Cache-Control", "no-cache, private")
	q.w.WriteHeader(http.StatusOK)
	q.ev.ResponseStatus = successStatus(http.StatusOK)
	q.auditStarted()
	if err != nil {
		return ws.sendError(q.watchStartError(err, startRev))
	}
	typed := func(k *v1alpha1.EtcdKey) *v1alpha1.EtcdKey {
		k.TypeMeta = metav1.TypeMeta{Kind: "EtcdKey", APIVersion: v1alpha1.SchemeGroupVersion.String()}
		return k
	}
	for i := range initial {
		if err := ws.send(watch.Added, typed(&initial[i])); err != nil {
			return nil
		}
	}
	q.w.Flush()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			k := &v1alpha1.EtcdKey{Key: ev.Key, ModRevision: ev.Revision, Size: int64(len(ev.Value))}
			k.Name, k.ResourceVersion = v1alpha1.EtcdKeyName(ev.Key), fmt.Sprint(ev.Revision)
			typ := watch.Modified
			switch {
			case ev.Type == storage.EventDelete:
				typ = watch.Deleted
			case ev.Created || ev.PrevValue == nil:
				typ, k.CreateRevision, k.Version = watch.Added, ev.Revision, 1
			}
			if err := ws.send(typ, typed(k)); err != nil {
				return nil
			}
			if len(events) == 0 {
				q.w.Flush()
			}
		}
	}
}
