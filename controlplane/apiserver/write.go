package apiserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/glassplane/glassplane/controlplane/apiserver/admission"
	"github.com/glassplane/glassplane/controlplane/storage"
)

// maxWriteAttempts bounds the compare-and-swap retries of one write.
const maxWriteAttempts = 16

// dryRun reports whether the request asked for dryRun=All.
func (q *request) dryRun() (bool, error) {
	values := q.r.URL.Query()["dryRun"]
	for _, v := range values {
		if v != metav1.DryRunAll {
			return false, apierrors.NewBadRequest(fmt.Sprintf("Invalid dryRun value: %q, supported values are: [%q]", v, metav1.DryRunAll))
		}
	}
	return len(values) > 0, nil
}

// admit runs the admission chain and records its steps; an empty op skips
// admission (for writes admitted already, such as a binding).
func (q *request) admit(op admission.Operation, obj, old runtime.Object, dryRun bool) error {
	if op == "" {
		return nil
	}
	if err := q.preventEscalation(op, obj, old); err != nil {
		return err
	}
	var validate func(context.Context, runtime.Object) field.ErrorList
	if v := q.res.Validate; v != nil {
		sub := q.info.Subresource
		validate = func(ctx context.Context, obj runtime.Object) field.ErrorList { return v(ctx, sub, obj, old) }
	}
	return q.runAdmission(op, q.res.GVK, obj, old, dryRun, validate)
}

// admitUpdate admits an update: the object itself, or, for a write through
// the scale subresource, its autoscaling/v1 Scale (old and new), as
// kube-apiserver's scale REST admits it: webhooks and policies see kind
// Scale, a mutating webhook may change its replicas, and the resource's own
// validation runs on the object with the admitted replicas. It returns the
// object to store.
func (q *request) admitUpdate(op admission.Operation, next, cur runtime.Object, dryRun bool) (runtime.Object, error) {
	v := q.scaleView()
	if v == nil || op != admission.Update {
		return next, q.admit(op, next, cur, dryRun)
	}
	scale, ok := v.get(q.res, next).(*autoscalingv1.Scale)
	if !ok {
		return next, q.admit(op, next, cur, dryRun)
	}
	requested := scale.Spec.Replicas
	// withReplicas is next as the (mutated) Scale says.
	withReplicas := func(s runtime.Object) (runtime.Object, error) {
		sc := s.(*autoscalingv1.Scale)
		if sc.Spec.Replicas == requested {
			return next, nil
		}
		merged, err := v.merge(q.res, cur, sc)
		if err != nil {
			return nil, err
		}
		nm, _ := meta.Accessor(next)
		mm, _ := meta.Accessor(merged)
		mm.SetManagedFields(nm.GetManagedFields())
		return merged, nil
	}
	var validate func(context.Context, runtime.Object) field.ErrorList
	if val := q.res.Validate; val != nil {
		validate = func(ctx context.Context, s runtime.Object) field.ErrorList {
			if r := s.(*autoscalingv1.Scale).Spec.Replicas; r < 0 {
				return field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), r, "must be greater than or equal to 0")}
			}
			obj, err := withReplicas(s)
			if err != nil {
				return field.ErrorList{field.InternalError(field.NewPath("spec", "replicas"), err)}
			}
			return val(ctx, "scale", obj, cur)
		}
	}
	if err := q.runAdmission(op, scaleKind, scale, v.get(q.res, cur), dryRun, validate); err != nil {
		return nil, err
	}
	return withReplicas(scale)
}

// scaleView is the view of the request's scale subresource; nil for any
// other request.
func (q *request) scaleView() *view {
	if q.info.Subresource != "scale" {
		return nil
	}
	for _, sub := range q.res.Subresources {
		if sub.Name == "scale" && sub.view != nil && sub.view.bodyKind == scaleKind {
			return sub.view
		}
	}
	return nil
}

// runAdmission runs the admission chain on obj and old as kind and records
// its steps; validate is the resource's own validation of the (mutated)
// object, run between the mutating and the validating plugins.
func (q *request) runAdmission(op admission.Operation, kind schema.GroupVersionKind, obj, old runtime.Object, dryRun bool, validate func(context.Context, runtime.Object) field.ErrorList) error {
	q.enter(stageAdmission)
	name := q.info.Name
	for _, o := range []runtime.Object{obj, old} {
		if o == nil {
			continue
		}
		if m, err := meta.Accessor(o); err == nil && m.GetName() != "" {
			name = m.GetName()
			break
		}
	}
	attrs := &admission.Attributes{
		Operation: op, Resource: q.res.GroupVersionResource(), Subresource: q.info.Subresource, Kind: kind,
		Namespace: q.info.Namespace, Name: name, Object: obj, OldObject: old, DryRun: dryRun,
		UserName: q.user.Name, UserUID: q.user.UID, UserGroups: q.user.Groups, UserExtra: q.user.Extra,
	}
	if validate != nil {
		attrs.Validate = func(ctx context.Context) field.ErrorList { return validate(ctx, attrs.Object) }
	}
	if cr := q.res.Custom; cr != nil {
		attrs.Normalize = cr.normalize
	}
	steps, err := q.s.admission.Run(q.ctx, attrs)
	if err == nil && q.s.restrictions != nil {
		var more []admission.Step
		more, err = q.s.restrictions.Run(q.ctx, attrs)
		steps = append(steps, more...)
	}
	q.recordAdmission(steps)
	for k, v := range attrs.AuditAnnotations {
		q.ev.Annotations[k] = v
	}
	return err
}

func (q *request) create() error {
	if q.info.Namespace == "" && q.res.Namespaced {
		return errNoRoute()
	}
	dryRun, err := q.dryRun()
	if err != nil {
		return err
	}
	q.enter(stageDecoding)
	body, err := q.readBody()
	if err != nil {
		return err
	}
	obj, raw, err := q.decodeBody(body, q.res.GVK)
	if err != nil {
		return err
	}
	q.recordObject(raw)
	m, _ := meta.Accessor(obj)
	if q.res.Namespaced {
		switch m.GetNamespace() {
		case "":
			m.SetNamespace(q.info.Namespace)
		case q.info.Namespace:
		default:
			return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
	} else {
		m.SetNamespace("")
	}
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(m.GetGenerateName() + utilrand.String(5))
	}
	q.ev.ObjectRef.Name = m.GetName()
	sentVersion := m.GetResourceVersion()
	opts, err := q.writeOptions("")
	if err != nil {
		return err
	}
	if obj, err = q.trackCreate(obj, opts); err != nil {
		return err
	}
	m, _ = meta.Accessor(obj)
	prepareForCreateIn(q.ctx, q.res, obj)
	if err := q.admit(admission.Create, obj, nil, dryRun); err != nil {
		return err
	}
	if m.GetName() == "" {
		return apierrors.NewInvalid(q.res.GVK.GroupKind(), "", field.ErrorList{field.Required(field.NewPath("metadata", "name"), "name or generateName is required")})
	}
	q.ev.ObjectRef.Name = m.GetName()
	if dryRun {
		if err := q.dryRunWrite(obj, nil); err != nil {
			return err
		}
		q.setObjectRef(obj)
		q.respond(http.StatusCreated, obj)
		return nil
	}
	if resourceVersionSetOnCreate(sentVersion) {
		return errResourceVersionSetOnCreate
	}
	finish, err := q.beginWrite(obj, nil)
	if err != nil {
		return err
	}
	q.enter(stageEtcd)
	kv, err := q.s.createInStore(q.ctx, q.res, obj)
	finish(err == nil)
	if err != nil {
		return err
	}
	q.recordWrite(kv.Key, kv.ModRevision, len(kv.Value))
	q.setObjectRef(obj)
	q.respond(http.StatusCreated, obj)
	return nil
}

// beginWrite runs the resource's BeginWrite on a write of the main resource
// (old nil on create); the function it returns finishes the write.
func (q *request) beginWrite(next, old runtime.Object) (func(ok bool), error) {
	if q.res.BeginWrite == nil || q.info.Subresource != "" {
		return func(bool) {}, nil
	}
	return q.res.BeginWrite(q.s, q.ctx, next, old)
}

// dryRunKey marks the context of a BeginWrite that only checks.
type dryRunKey struct{}

// isDryRun reports whether ctx is a dry run's: a BeginWrite then checks
// what it would claim and sets it on the object, and keeps nothing, as
// kube-apiserver's dry-run allocators do.
func isDryRun(ctx context.Context) bool { return ctx.Value(dryRunKey{}) != nil }

// dryRunWrite runs the resource's BeginWrite as a dry run, so that a dry
// run shows (and refuses) what the write would: a Service's cluster IP and
// node ports.
func (q *request) dryRunWrite(next, old runtime.Object) error {
	if q.res.BeginWrite == nil || q.info.Subresource != "" {
		return nil
	}
	finish, err := q.res.BeginWrite(q.s, context.WithValue(q.ctx, dryRunKey{}, true), next, old)
	if err != nil {
		return err
	}
	finish(false)
	return nil
}

// afterDelete runs the resource's AfterDelete on an object gone from storage.
func (q *request) afterDelete(obj runtime.Object) {
	if q.res.AfterDelete != nil {
		q.res.AfterDelete(q.s, obj)
	}
}

// errResourceVersionSetOnCreate refuses a create whose object carries a
// resourceVersion with the text of kube-apiserver's etcd3 store. That store
// returns a plain error, which kube-apiserver answers as a 500; a request a
// client got wrong is a 400 here, as no user input gets a 500.
var errResourceVersionSetOnCreate = apiStatusError(http.StatusBadRequest, metav1.StatusReasonBadRequest, "resourceVersion should not be set on objects to be created")

// resourceVersionSetOnCreate tells whether the etcd3 store would refuse a
// create sent with rv: one that parses as a non-zero revision (one that
// does not parse is ignored there, and a dry run never reaches it).
func resourceVersionSetOnCreate(rv string) bool {
	n, err := strconv.ParseUint(rv, 10, 64)
	return err == nil && n != 0
}

// mutation computes the object to write from the stored one. It returns an
// error to refuse the write (a Conflict for a stale resourceVersion).
type mutation func(cur runtime.Object) (runtime.Object, error)

// updateResult is what a write through update did.
type updateResult struct {
	obj     runtime.Object
	created bool
	deleted bool
}

// update runs mutate against the stored object with compare-and-swap,
// admission and the shouldDeleteDuringUpdate rule. create, when not nil,
// makes the object when it does not exist (PUT on AllowCreateOnUpdate
// resources).
func (q *request) update(name string, op admission.Operation, mutate mutation, create func() (runtime.Object, error)) (*updateResult, error) {
	dryRun, err := q.dryRun()
	if err != nil {
		return nil, err
	}
	k := key(q.res, q.info.Namespace, name)
	// The first attempt starts from the storage watch's copy of the object
	// when it has one, as kube-apiserver's starts from its watch cache's:
	// no read from etcd. The copy may be a little behind; what it made of
	// the update is trusted only if the compare-and-swap succeeds, and any
	// other outcome (a conflict, a no-op, a refusal) is tried again from a
	// fresh read.
	var guess *storage.KeyValue
	guessed := false
	if !dryRun {
		guess, guessed = q.s.recent(k)
	}
	for range maxWriteAttempts + 1 {
		kv, fromGuess := guess, guessed
		guess, guessed = nil, false
		if !fromGuess {
			kv, err = q.s.store.Get(q.ctx, k)
		}
		if errors.Is(err, storage.ErrNotFound) && create != nil {
			obj, err := create()
			if err != nil {
				return nil, err
			}
			prepareForCreate(q.res, obj)
			if err := q.admit(admission.Create, obj, nil, dryRun); err != nil {
				return nil, err
			}
			if dryRun {
				if err := q.dryRunWrite(obj, nil); err != nil {
					return nil, err
				}
				return &updateResult{obj: obj, created: true}, nil
			}
			finish, err := q.beginWrite(obj, nil)
			if err != nil {
				return nil, err
			}
			q.enter(stageEtcd)
			kv, err := q.s.createInStore(q.ctx, q.res, obj)
			finish(err == nil)
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			if err != nil {
				return nil, err
			}
			q.recordWrite(kv.Key, kv.ModRevision, len(kv.Value))
			return &updateResult{obj: obj, created: true}, nil
		}
		if err != nil {
			return nil, storageError(q.res, name, err)
		}
		// A recent value comes with what the store's watchers decoded of
		// it: a copy of that costs far less than decoding it again.
		cur, err := decodeMemo(q.res, kv.Memo, kv.Value, kv.ModRevision)
		if err != nil {
			return nil, err
		}
		if kv.Memo != nil {
			cur = cur.DeepCopyObject()
		}
		next, err := mutate(cur.DeepCopyObject())
		if err == nil {
			next, err = q.admitUpdate(op, next, cur, dryRun)
		}
		if err != nil {
			if fromGuess {
				continue
			}
			return nil, err
		}
		if dryRun {
			if !shouldDeleteOnUpdate(next) {
				if err := q.dryRunWrite(next, cur); err != nil {
					return nil, err
				}
			}
			return &updateResult{obj: next}, nil
		}
		q.enter(stageEtcd)
		if shouldDeleteOnUpdate(next) {
			_, rev, err := q.s.store.Delete(q.ctx, k, kv.ModRevision)
			if retryWrite(err, fromGuess) {
				continue
			}
			if err != nil {
				return nil, storageError(q.res, name, err)
			}
			q.recordWrite(k, rev, 0)
			q.afterDelete(cur)
			return &updateResult{obj: next, deleted: true}, nil
		}
		finish, err := q.beginWrite(next, cur)
		if err != nil {
			if fromGuess {
				continue
			}
			return nil, err
		}
		value, err := encodeForStorage(q.res, next)
		if err != nil {
			finish(false)
			return nil, err
		}
		if bytes.Equal(value, kv.Value) {
			finish(false)
			if fromGuess {
				continue
			}
			nm, _ := meta.Accessor(next)
			nm.SetResourceVersion(strconv.FormatInt(kv.ModRevision, 10))
			return &updateResult{obj: next}, nil
		}
		written, err := q.s.store.Update(q.ctx, k, value, kv.ModRevision)
		finish(err == nil)
		if retryWrite(err, fromGuess) {
			continue
		}
		if err != nil {
			return nil, storageError(q.res, name, err)
		}
		q.recordWrite(k, written.ModRevision, len(value))
		nm, _ := meta.Accessor(next)
		nm.SetResourceVersion(strconv.FormatInt(written.ModRevision, 10))
		return &updateResult{obj: next}, nil
	}
	return nil, apierrors.NewConflict(q.res.GroupResource(), name, errModified)
}

// retryWrite tells whether a compare-and-swap that failed with err is
// tried again: on a conflict, and on a missing key when the attempt started
// from the watch's copy (the key may have been deleted, or recreated, since).
func retryWrite(err error, fromGuess bool) bool {
	return errors.Is(err, storage.ErrConflict) || (fromGuess && errors.Is(err, storage.ErrNotFound))
}

// checkResourceVersion refuses an update whose resourceVersion is set and
// differs from the stored one. One without a resourceVersion is an
// unconditional update, as kube-apiserver allows for the built-in kinds:
// it takes the stored object's.
func (q *request) checkResourceVersion(in, cur runtime.Object) error {
	im, _ := meta.Accessor(in)
	cm, _ := meta.Accessor(cur)
	switch rv := im.GetResourceVersion(); rv {
	case "":
		im.SetResourceVersion(cm.GetResourceVersion())
	case cm.GetResourceVersion():
	default:
		return apierrors.NewConflict(q.res.GroupResource(), cm.GetName(), errModified)
	}
	return nil
}

// checkNameAndNamespace refuses a body that names another object.
func (q *request) checkNameAndNamespace(in runtime.Object) error {
	m, _ := meta.Accessor(in)
	if m.GetName() == "" {
		m.SetName(q.info.Name)
	}
	if m.GetName() != q.info.Name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), q.info.Name))
	}
	if q.res.Namespaced {
		switch m.GetNamespace() {
		case "":
			m.SetNamespace(q.info.Namespace)
		case q.info.Namespace:
		default:
			return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
	}
	return nil
}

// put serves PUT on an object or a subresource view of it.
func (q *request) put(v *view) error {
	q.enter(stageDecoding)
	body, err := q.readBody()
	if err != nil {
		return err
	}
	in, raw, err := q.decodeBody(body, v.kind(q.res))
	if err != nil {
		return err
	}
	q.recordObject(raw)
	if err := q.checkNameAndNamespace(in); err != nil {
		return err
	}
	opts, err := q.writeOptions("")
	if err != nil {
		return err
	}
	var create func() (runtime.Object, error)
	if v.main && q.res.AllowCreateOnUpdate {
		create = func() (runtime.Object, error) { return q.trackCreate(in.DeepCopyObject(), opts) }
	}
	result, err := q.update(q.info.Name, admission.Update, func(cur runtime.Object) (runtime.Object, error) {
		next := in.DeepCopyObject() // each attempt starts from the body
		if err := q.checkResourceVersion(next, v.get(q.res, cur)); err != nil {
			return nil, err
		}
		return q.mergeTracked(v, cur, q.trackUpdate(next, opts))
	}, create)
	if err != nil {
		return err
	}
	return q.answerWrite(v, result)
}

// answerWrite answers the outcome of an update or patch.
func (q *request) answerWrite(v *view, result *updateResult) error {
	q.setObjectRef(result.obj)
	code := http.StatusOK
	if result.created {
		code = http.StatusCreated
	}
	q.respond(code, v.get(q.res, result.obj))
	return nil
}

// deleteOptions reads DeleteOptions from the body or the query.
func (q *request) deleteOptions() (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	body, err := q.readBody()
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(body)) > 0 {
		ser, err := q.bodyDecoder()
		if err != nil {
			return nil, err
		}
		if ser == protobuf {
			gvk := corev1.SchemeGroupVersion.WithKind("DeleteOptions")
			if _, _, err := ser.Decode(body, &gvk, opts); err != nil {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("failed to decode DeleteOptions: %v", err))
			}
		} else if err := yaml.Unmarshal(body, opts); err != nil {
			// DeleteOptions is accepted as v1 and meta.k8s.io/v1 alike, so
			// it is read without the scheme.
			return nil, apierrors.NewBadRequest(fmt.Sprintf("failed to decode DeleteOptions: %v", err))
		}
	}
	var query metav1.DeleteOptions
	if err := decodeQuery(q.r.URL.Query(), &query); err != nil {
		return nil, err
	}
	if query.GracePeriodSeconds != nil {
		opts.GracePeriodSeconds = query.GracePeriodSeconds
	}
	if p := query.PropagationPolicy; p != nil && *p != "" {
		opts.PropagationPolicy = p
	}
	if err := checkDeleteOptions(opts); err != nil {
		return nil, err
	}
	return opts, nil
}

// checkDeleteOptions refuses an unknown propagationPolicy or dryRun value.
func checkDeleteOptions(opts *metav1.DeleteOptions) error {
	if p := opts.PropagationPolicy; p != nil && *p != metav1.DeletePropagationOrphan && *p != metav1.DeletePropagationBackground && *p != metav1.DeletePropagationForeground {
		return apierrors.NewInvalid(metav1.SchemeGroupVersion.WithKind("DeleteOptions").GroupKind(), "", field.ErrorList{field.NotSupported(field.NewPath("propagationPolicy"), *p, []string{string(metav1.DeletePropagationForeground), string(metav1.DeletePropagationBackground), string(metav1.DeletePropagationOrphan), "nil"})})
	}
	for _, v := range opts.DryRun {
		if v != metav1.DryRunAll {
			return apierrors.NewBadRequest(fmt.Sprintf("Invalid dryRun value: %q, supported values are: [%q]", v, metav1.DryRunAll))
		}
	}
	return nil
}

func (q *request) delete() error {
	opts, err := q.deleteOptions()
	if err != nil {
		return err
	}
	dryRun, err := q.dryRun()
	if err != nil {
		return err
	}
	dryRun = dryRun || len(opts.DryRun) > 0
	obj, deleted, err := q.deleteOne(q.info.Namespace, q.info.Name, opts, dryRun)
	if err != nil {
		return err
	}
	q.setObjectRef(obj)
	if !deleted || q.res.ReturnDeletedObject {
		q.respond(http.StatusOK, obj)
		return nil
	}
	m, _ := meta.Accessor(obj)
	q.writeJSON(http.StatusOK, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Details:  &metav1.StatusDetails{Name: m.GetName(), Group: q.res.GVK.Group, Kind: q.res.Resource, UID: m.GetUID()},
	})
	return nil
}

// deleteOne deletes one object: at once, or by marking it for deletion when
// finalizers or a grace period make it wait. It returns the object's last
// state and whether it is gone.
func (q *request) deleteOne(namespace, name string, opts *metav1.DeleteOptions, dryRun bool) (runtime.Object, bool, error) {
	k := key(q.res, namespace, name)
	for range maxWriteAttempts {
		kv, err := q.s.store.Get(q.ctx, k)
		if err != nil {
			return nil, false, storageError(q.res, name, err)
		}
		cur, err := decodeStored(q.res, kv.Value, kv.ModRevision)
		if err != nil {
			return nil, false, err
		}
		cm, _ := meta.Accessor(cur)
		if p := opts.Preconditions; p != nil {
			if p.UID != nil && *p.UID != cm.GetUID() {
				return nil, false, apierrors.NewConflict(q.res.GroupResource(), name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, cm.GetUID()))
			}
			if p.ResourceVersion != nil && *p.ResourceVersion != cm.GetResourceVersion() {
				return nil, false, apierrors.NewConflict(q.res.GroupResource(), name, fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, cm.GetResourceVersion()))
			}
		}
		if err := q.admit(admission.Delete, nil, cur, dryRun); err != nil {
			return nil, false, err
		}
		grace := gracePeriod(cur, opts.GracePeriodSeconds)
		next := cur.DeepCopyObject()
		gcChanged := setGCFinalizers(next, opts)
		if mustWait(next, grace) {
			if !markDeleting(q.res, next, grace) && !gcChanged {
				return cur, false, nil
			}
			if dryRun {
				return next, false, nil
			}
			q.enter(stageEtcd)
			value, err := encodeForStorage(q.res, next)
			if err != nil {
				return nil, false, err
			}
			written, err := q.s.store.Update(q.ctx, k, value, kv.ModRevision)
			if errors.Is(err, storage.ErrConflict) {
				continue
			}
			if err != nil {
				return nil, false, storageError(q.res, name, err)
			}
			q.recordWrite(k, written.ModRevision, len(value))
			nm, _ := meta.Accessor(next)
			nm.SetResourceVersion(strconv.FormatInt(written.ModRevision, 10))
			return next, false, nil
		}
		if dryRun {
			return cur, true, nil
		}
		q.enter(stageEtcd)
		_, rev, err := q.s.store.Delete(q.ctx, k, kv.ModRevision)
		if errors.Is(err, storage.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, false, storageError(q.res, name, err)
		}
		q.recordWrite(k, rev, 0)
		q.afterDelete(cur)
		return cur, true, nil
	}
	return nil, false, apierrors.NewConflict(q.res.GroupResource(), name, errModified)
}

func (q *request) deleteCollection() error {
	if !containsVerb(q.res.Verbs, "deletecollection") {
		return apierrors.NewMethodNotSupported(q.res.GroupResource(), "deletecollection")
	}
	opts, err := q.deleteOptions()
	if err != nil {
		return err
	}
	dryRun, err := q.dryRun()
	if err != nil {
		return err
	}
	dryRun = dryRun || len(opts.DryRun) > 0
	sel, err := q.selection()
	if err != nil {
		return err
	}
	items, rev, _, _, err := q.listObjects(sel, &listParams{})
	if err != nil {
		return err
	}
	var out []runtime.Object
	for _, it := range items {
		m, _ := meta.Accessor(it)
		obj, _, err := q.deleteOne(m.GetNamespace(), m.GetName(), opts, dryRun)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		out = append(out, obj)
	}
	list, err := q.newList(out, rev)
	if err != nil {
		return err
	}
	q.respond(http.StatusOK, list)
	return nil
}

func containsVerb(verbs []string, verb string) bool {
	for _, v := range verbs {
		if v == verb {
			return true
		}
	}
	return false
}
