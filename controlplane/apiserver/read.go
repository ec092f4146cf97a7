package apiserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/glassplane/glassplane/controlplane/storage"
)

// selection is a request's label and field selectors.
type selection struct {
	labels labels.Selector
	fields fields.Selector
}

func (q *request) selection() (*selection, error) {
	query := q.r.URL.Query()
	sel := &selection{labels: labels.Everything(), fields: fields.Everything()}
	if v := query.Get("labelSelector"); v != "" {
		ls, err := labels.Parse(v)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
		}
		sel.labels = ls
	}
	if v := query.Get("fieldSelector"); v != "" {
		fs, err := fields.ParseSelector(v)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		for _, req := range fs.Requirements() {
			if !q.res.supportsField(req.Field) {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
			}
		}
		sel.fields = fs
	}
	if q.info.Name != "" {
		sel.fields = fields.AndSelectors(sel.fields, fields.OneTermEqualSelector("metadata.name", q.info.Name))
	}
	return sel, nil
}

func (sel *selection) empty() bool { return sel.labels.Empty() && sel.fields.Empty() }

// matches reports whether obj is selected.
func (sel *selection) matches(res *resource, obj runtime.Object) bool {
	if sel.empty() {
		return true
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	return sel.labels.Matches(labels.Set(m.GetLabels())) && sel.fields.Matches(res.fieldSet(obj))
}

// matchesShared is matches for an object decoded from a storage event: its
// field set is computed once for all the event's watchers (node agents each
// watch pods with their own spec.nodeName selector).
func (sel *selection) matchesShared(res *resource, ev storage.Event, prev bool, obj runtime.Object) bool {
	if sel.empty() {
		return true
	}
	m, err := meta.Accessor(obj)
	if err != nil || !sel.labels.Matches(labels.Set(m.GetLabels())) {
		return false
	}
	if sel.fields.Empty() {
		return true
	}
	type fieldsKey struct {
		res  *resource
		prev bool
	}
	// The previous value's fields were computed for the event that wrote
	// it, when the store still keeps that event's memo.
	memo := ev.Memo
	if prev && ev.PrevMemo != nil {
		memo, prev = ev.PrevMemo, false
	}
	set := memo.Do(fieldsKey{res, prev}, func() any { return res.fieldSet(obj) }).(fields.Set)
	return sel.fields.Matches(set)
}

func (q *request) get() error {
	var opts metav1.GetOptions
	if err := decodeQuery(q.r.URL.Query(), &opts); err != nil {
		return err
	}
	if _, err := parseResourceVersion(opts.ResourceVersion); err != nil {
		return err
	}
	q.enter(stageEtcd)
	obj, err := q.s.getFromStore(q.ctx, q.res, q.info.Namespace, q.info.Name)
	if err != nil {
		return err
	}
	q.setObjectRef(obj)
	q.respond(http.StatusOK, obj)
	return nil
}

// setObjectRef completes the audit objectRef from obj.
func (q *request) setObjectRef(obj runtime.Object) {
	if q.ev.ObjectRef == nil {
		return
	}
	if m, err := meta.Accessor(obj); err == nil {
		q.ev.ObjectRef.UID = m.GetUID()
		q.ev.ObjectRef.ResourceVersion = m.GetResourceVersion()
		if q.ev.ObjectRef.Name == "" {
			q.ev.ObjectRef.Name = m.GetName()
		}
		if q.ev.ObjectRef.Namespace == "" {
			q.ev.ObjectRef.Namespace = m.GetNamespace()
		}
	}
}

// continueToken is the opaque list continuation, shaped as Kubernetes' own.
type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

func encodeContinue(rev int64, startKey string) string {
	b, _ := json.Marshal(continueToken{APIVersion: "meta.k8s.io/v1", ResourceVersion: rev, StartKey: startKey})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeContinue(token string) (*continueToken, error) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return nil, fmt.Errorf("continue key is not valid: %v", err)
	}
	var t continueToken
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("continue key is not valid: %v", err)
	}
	// A resourceVersion of -1 is the inconsistent continuation a 410
	// hands out: from the start key at the newest revision, as upstream's.
	if t.APIVersion != "meta.k8s.io/v1" || (t.ResourceVersion <= 0 && t.ResourceVersion != inconsistentRevision) || strings.Contains(t.StartKey, "..") || strings.HasPrefix(t.StartKey, "/") {
		return nil, errors.New("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
	}
	return &t, nil
}

// inconsistentRevision is the resourceVersion of an inconsistent continue
// token: continue at the newest revision.
const inconsistentRevision = -1

const continueExpired = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."

// listParams are a list's resourceVersion, limit and continue parameters.
type listParams struct {
	limit    int64
	revision int64
	startKey string
	// minRevision is a NotOlderThan lower bound.
	minRevision int64
	continued   bool
}

func (q *request) listParams(prefix string) (*listParams, error) {
	opts, err := q.listOptions()
	if err != nil {
		return nil, err
	}
	p := &listParams{}
	if opts.Limit > 0 {
		p.limit = opts.Limit
	}
	rv := opts.ResourceVersion
	match := string(opts.ResourceVersionMatch)
	if token := opts.Continue; token != "" {
		if rv != "" && rv != "0" {
			return nil, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
		}
		t, err := decodeContinue(token)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		p.revision, p.startKey, p.continued = max(t.ResourceVersion, 0), prefix+t.StartKey, true
		return p, nil
	}
	n, err := parseResourceVersion(rv)
	if err != nil {
		return nil, err
	}
	switch match {
	case "":
		if n > 0 {
			p.minRevision = n
		}
	case string(metav1.ResourceVersionMatchNotOlderThan):
		if rv == "" {
			return nil, apierrors.NewBadRequest("resourceVersionMatch is forbidden unless resourceVersion is provided")
		}
		p.minRevision = n
	case string(metav1.ResourceVersionMatchExact):
		if rv == "" || n == 0 {
			return nil, apierrors.NewBadRequest("resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\"")
		}
		p.revision = n
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("unsupported resourceVersionMatch %q", match))
	}
	return p, nil
}

// parseResourceVersion reads a resourceVersion query parameter as
// kube-apiserver's etcd3 store does: "" and "0" are 0, anything but a
// decimal uint64 is a 400.
func parseResourceVersion(rv string) (int64, error) {
	if rv == "" || rv == "0" {
		return 0, nil
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	if err == nil && n > math.MaxInt64 {
		err = fmt.Errorf("strconv.ParseInt: parsing %q: value out of range", rv)
	}
	if err != nil {
		invalid := field.ErrorList{field.Invalid(field.NewPath("resourceVersion"), rv, err.Error())}
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %v", invalid.ToAggregate()))
	}
	return int64(n), nil
}

// tooLargeResourceVersion is kube-apiserver's answer for a read from a
// revision the store has not reached.
func tooLargeResourceVersion(want, current int64) error {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", want, current), 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return err
}

// listObjects reads the selected objects of the request's resource.
func (q *request) listObjects(sel *selection, p *listParams) ([]runtime.Object, int64, string, *int64, error) {
	prefix := storage.Prefix(q.res.StorageResource, q.info.Namespace)
	var items []runtime.Object
	rev, start := p.revision, p.startKey
	var lastKey string
	for {
		page, err := q.s.store.List(q.ctx, prefix, storage.ListOptions{Revision: rev, Limit: p.limit, StartKey: start})
		if errors.Is(err, storage.ErrCompacted) {
			if p.continued {
				// The 410 carries a token that continues from the same
				// key at the newest revision, as kube-apiserver's.
				gone := apierrors.NewResourceExpired(continueExpired)
				gone.ErrStatus.ListMeta.Continue = encodeContinue(inconsistentRevision, strings.TrimPrefix(start, prefix))
				return nil, 0, "", nil, gone
			}
			return nil, 0, "", nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rev, q.s.compactRevision(q.ctx, rev)))
		}
		if errors.Is(err, storage.ErrFutureRevision) {
			return nil, 0, "", nil, tooLargeResourceVersion(rev, q.s.store.Revision())
		}
		if err != nil {
			return nil, 0, "", nil, err
		}
		rev = page.Revision
		if p.minRevision > rev {
			return nil, 0, "", nil, tooLargeResourceVersion(p.minRevision, rev)
		}
		for i, kv := range page.Items {
			obj, err := decodeStored(q.res, kv.Value, kv.ModRevision)
			if err != nil {
				return nil, 0, "", nil, err
			}
			lastKey = kv.Key
			if !sel.matches(q.res, obj) {
				continue
			}
			items = append(items, obj)
			if p.limit > 0 && int64(len(items)) == p.limit {
				more := page.More || i < len(page.Items)-1
				if !more {
					return items, rev, "", nil, nil
				}
				var remaining *int64
				if sel.empty() {
					n := page.Remaining + int64(len(page.Items)-1-i)
					remaining = &n
				}
				return items, rev, encodeContinue(rev, strings.TrimPrefix(lastKey, prefix)+"\x00"), remaining, nil
			}
		}
		if !page.More || len(page.Items) == 0 {
			return items, rev, "", nil, nil
		}
		start = lastKey + "\x00"
	}
}

func (q *request) list() error {
	sel, err := q.selection()
	if err != nil {
		return err
	}
	p, err := q.listParams(storage.Prefix(q.res.StorageResource, q.info.Namespace))
	if err != nil {
		return err
	}
	q.enter(stageEtcd)
	items, rev, cont, remaining, err := q.listObjects(sel, p)
	if err != nil {
		return err
	}
	list, err := q.newList(items, rev)
	if err != nil {
		return err
	}
	lm, _ := meta.ListAccessor(list)
	lm.SetContinue(cont)
	lm.SetRemainingItemCount(remaining)
	q.respond(http.StatusOK, list)
	return nil
}

// newList wraps items in the resource's list kind.
func (q *request) newList(items []runtime.Object, rev int64) (runtime.Object, error) {
	list := q.res.NewList()
	if err := meta.SetList(list, items); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	list.GetObjectKind().SetGroupVersionKind(q.res.GVK.GroupVersion().WithKind(q.res.GVK.Kind + "List"))
	lm, _ := meta.ListAccessor(list)
	lm.SetResourceVersion(strconv.FormatInt(rev, 10))
	return list, nil
}

// compactRevision returns etcd's compaction point, read from the answer to
// a watch from rev (etcd reports it when rev was compacted away).
func (s *Server) compactRevision(ctx context.Context, rev int64) int64 {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	wch := s.store.Client().Watch(ctx, storage.Root+"\x00compaction-probe", clientv3.WithRev(max(rev, 1)))
	// The first answer says it; a watch that never answers (nor closes)
	// must not hold the request past the timeout.
	select {
	case resp, ok := <-wch:
		if ok && resp.CompactRevision > 0 {
			return resp.CompactRevision
		}
	case <-ctx.Done():
	}
	return s.store.Revision()
}
