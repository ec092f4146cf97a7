package apiserver

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/glassplane/glassplane/controlplane/apiserver/admission"
	"github.com/glassplane/glassplane/controlplane/storage"
)

// maxDisruptedPods is kube-apiserver's MaxDisruptedPodSize: past this many
// evictions the disruption controller has not yet confirmed, a budget
// refuses more.
const maxDisruptedPods = 2000

// evictionAttempts bounds the retries of an eviction on conflicts, as the
// 20 steps of kube-apiserver's EvictionsRetry do.
const evictionAttempts = 20

var (
	evictionKind        = policyv1.SchemeGroupVersion.WithKind("Eviction")
	evictionV1beta1Kind = policyv1beta1.SchemeGroupVersion.WithKind("Eviction")
	pdbResource         = policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")
)

// budgetViolatedMessage is the message of every eviction a budget refuses.
const budgetViolatedMessage = "Cannot evict pod as it would violate the pod's disruption budget."

func evictionSubresource() *subresource {
	return &subresource{Name: "eviction", Kind: evictionKind, Verbs: verbsBinding, create: (*request).evict}
}

// evict serves POST pods/<name>/eviction as kube-apiserver's EvictionREST
// does: a pod that is not running (or already going) is deleted at once;
// otherwise the one PodDisruptionBudget that selects it must allow a
// disruption, which is taken from its status before the pod is marked
// DisruptionTarget and deleted with the Eviction's deleteOptions.
func (q *request) evict() error {
	q.enter(stageDecoding)
	body, err := q.readBody()
	if err != nil {
		return err
	}
	eviction, raw, err := q.decodeEviction(body)
	if err != nil {
		return err
	}
	q.recordObject(raw)
	switch eviction.Namespace {
	case "":
		eviction.Namespace = q.info.Namespace
	case q.info.Namespace:
	default:
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	if eviction.Name != q.info.Name {
		return apierrors.NewBadRequest("name in URL does not match name in Eviction object")
	}
	opts, err := q.evictionDeleteOptions(eviction)
	if err != nil {
		return err
	}
	dryRun := len(opts.DryRun) > 0
	if err := q.admit(admission.Create, eviction, nil, dryRun); err != nil {
		return err
	}

	var pod *corev1.Pod
	for attempt := 1; ; attempt++ {
		obj, err := q.s.getFromStore(q.ctx, q.res, q.info.Namespace, eviction.Name)
		if err != nil {
			return err
		}
		pod = obj.(*corev1.Pod)
		if !canIgnorePDB(pod) {
			break
		}
		deleteOpts := opts
		if shouldEnforceResourceVersion(pod) && resourceVersionIsUnset(opts) {
			deleteOpts = withResourceVersion(opts, pod.ResourceVersion)
		}
		err = q.addConditionAndDeletePod(pod.Name, deleteOpts, dryRun)
		if apierrors.IsConflict(err) && resourceVersionIsUnset(opts) && attempt < evictionAttempts {
			continue
		}
		if err != nil {
			return err
		}
		return q.evicted()
	}

	pdbs, err := q.podDisruptionBudgets(pod)
	if err != nil {
		return err
	}
	if len(pdbs) > 1 {
		// kube-apiserver returns this Status as its result, and its handler
		// answers a Failure result as the error it describes.
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status:  metav1.StatusFailure,
			Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
			Code:    http.StatusInternalServerError,
		}}
	}
	deleteOpts := opts
	unhealthy := false
	if len(pdbs) == 1 {
		pdb := pdbs[0]
		if !podReady(pod) && unhealthyPodMayGo(pdb) {
			// An unready pod does not count towards the budget's healthy
			// pods; the precondition makes sure it has not turned ready
			// since.
			unhealthy = true
			deleteOpts = withResourceVersion(opts, pod.ResourceVersion)
		} else if err := q.takeDisruption(pdb, pod.Name, dryRun); err != nil {
			return err
		}
	}
	if err := q.addConditionAndDeletePod(pod.Name, deleteOpts, dryRun); err != nil {
		if apierrors.IsConflict(err) && unhealthy && resourceVersionIsUnset(opts) {
			return budgetStillProcessing(pdbs[0].Name)
		}
		return err
	}
	return q.evicted()
}

// evicted answers a successful eviction: 201 with a Success Status.
func (q *request) evicted() error {
	q.writeJSON(http.StatusCreated, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: http.StatusCreated})
	return nil
}

// decodeEviction decodes a policy/v1 Eviction, or a policy/v1beta1 one as
// the same object.
func (q *request) decodeEviction(body []byte) (*policyv1.Eviction, []byte, error) {
	if declaredAPIVersion(body) != policyv1beta1.SchemeGroupVersion.String() {
		obj, raw, err := q.decodeBody(body, evictionKind)
		if err != nil {
			return nil, nil, err
		}
		return obj.(*policyv1.Eviction), raw, nil
	}
	obj, raw, err := q.decodeBody(body, evictionV1beta1Kind)
	if err != nil {
		return nil, nil, err
	}
	old := obj.(*policyv1beta1.Eviction)
	return &policyv1.Eviction{TypeMeta: metav1.TypeMeta{Kind: "Eviction", APIVersion: policyv1.SchemeGroupVersion.String()}, ObjectMeta: old.ObjectMeta, DeleteOptions: old.DeleteOptions}, raw, nil
}

// protobufMagic starts every body in Kubernetes' protobuf encoding.
var protobufMagic = []byte("k8s\x00")

// declaredAPIVersion returns the apiVersion a JSON, YAML or protobuf body
// declares, or "".
func declaredAPIVersion(body []byte) string {
	if bytes.HasPrefix(body, protobufMagic) {
		var u runtime.Unknown
		if err := u.Unmarshal(body[len(protobufMagic):]); err != nil {
			return ""
		}
		return u.APIVersion
	}
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(body, &tm); err != nil {
		return ""
	}
	return tm.APIVersion
}

// evictionDeleteOptions is kube-apiserver's propagateDryRun: the Eviction's
// deleteOptions, taking the request's dryRun when they name none.
func (q *request) evictionDeleteOptions(eviction *policyv1.Eviction) (*metav1.DeleteOptions, error) {
	if _, err := q.dryRun(); err != nil {
		return nil, err
	}
	query := q.r.URL.Query()["dryRun"]
	opts := eviction.DeleteOptions
	switch {
	case opts == nil:
		opts = &metav1.DeleteOptions{DryRun: query}
	case len(opts.DryRun) == 0:
		opts.DryRun = query
	case len(query) > 0 && !reflect.DeepEqual(query, opts.DryRun):
		return nil, fmt.Errorf("Non-matching dry-run options in request and content: %v and %v", query, opts.DryRun)
	}
	if err := checkDeleteOptions(opts); err != nil {
		return nil, err
	}
	return opts, nil
}

// canIgnorePDB reports whether a pod may go without asking its budget: it
// has finished, has not started, or is being deleted already.
func canIgnorePDB(pod *corev1.Pod) bool {
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed, corev1.PodPending:
		return true
	}
	return pod.DeletionTimestamp != nil
}

// shouldEnforceResourceVersion reports whether deleting pod must be
// conditional on its resourceVersion, so as not to race with the pod
// becoming ready: all but finished pods and pods being deleted.
func shouldEnforceResourceVersion(pod *corev1.Pod) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	return pod.DeletionTimestamp == nil
}

func resourceVersionIsUnset(opts *metav1.DeleteOptions) bool {
	return opts.Preconditions == nil || opts.Preconditions.ResourceVersion == nil
}

// withResourceVersion returns a copy of opts with a resourceVersion
// precondition.
func withResourceVersion(opts *metav1.DeleteOptions, rv string) *metav1.DeleteOptions {
	out := opts.DeepCopy()
	if out.Preconditions == nil {
		out.Preconditions = &metav1.Preconditions{}
	}
	out.Preconditions.ResourceVersion = &rv
	return out
}

// podReady reports whether the pod's Ready condition is True.
func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// unhealthyPodMayGo reports whether the budget lets an unready pod be
// evicted without taking a disruption: always under AlwaysAllow, and under
// IfHealthyBudget (the default) while the budget has the healthy pods it
// wants.
func unhealthyPodMayGo(pdb *policyv1.PodDisruptionBudget) bool {
	if p := pdb.Spec.UnhealthyPodEvictionPolicy; p != nil && *p == policyv1.AlwaysAllow {
		return true
	}
	return pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0
}

// podDisruptionBudgets returns the budgets in the pod's namespace whose
// selector matches its labels. As in kube-apiserver, a budget with a nil or
// empty selector, or an invalid one, matches no pod here.
func (q *request) podDisruptionBudgets(pod *corev1.Pod) ([]*policyv1.PodDisruptionBudget, error) {
	res := q.s.byPath[pdbResource]
	page, err := q.s.store.List(q.ctx, storage.Prefix(res.StorageResource, pod.Namespace), storage.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []*policyv1.PodDisruptionBudget
	for _, kv := range page.Items {
		obj, err := decodeStored(res, kv.Value, kv.ModRevision)
		if err != nil {
			return nil, err
		}
		pdb := obj.(*policyv1.PodDisruptionBudget)
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, pdb)
	}
	return out, nil
}

// takeDisruption is kube-apiserver's checkAndDecrement with its retries: it
// refuses the eviction when the budget allows no disruption, and otherwise
// decrements status.disruptionsAllowed and records the pod in
// status.disruptedPods with a compare-and-swap, reading the budget again
// after a conflict. A dry run checks without writing.
func (q *request) takeDisruption(pdb *policyv1.PodDisruptionBudget, podName string, dryRun bool) error {
	res := q.s.byPath[pdbResource]
	k := key(res, pdb.Namespace, pdb.Name)
	for attempt := 1; ; attempt++ {
		if err := checkBudget(pdb); err != nil {
			return err
		}
		pdb.Status.DisruptionsAllowed--
		if pdb.Status.DisruptionsAllowed == 0 {
			apimeta.SetStatusCondition(&pdb.Status.Conditions, metav1.Condition{
				Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse,
				Reason: policyv1.InsufficientPodsReason, ObservedGeneration: pdb.Status.ObservedGeneration,
			})
		}
		if dryRun {
			return nil
		}
		if pdb.Status.DisruptedPods == nil {
			pdb.Status.DisruptedPods = map[string]metav1.Time{}
		}
		pdb.Status.DisruptedPods[podName] = metav1.Now()
		rev, err := strconv.ParseInt(pdb.ResourceVersion, 10, 64)
		if err != nil {
			return fmt.Errorf("failed to read the revision of poddisruptionbudget %q: %w", pdb.Name, err)
		}
		value, err := encodeForStorage(res, pdb)
		if err != nil {
			return fmt.Errorf("failed to encode poddisruptionbudget %q: %w", pdb.Name, err)
		}
		_, err = q.s.store.Update(q.ctx, k, value, rev)
		if err == nil {
			return nil
		}
		if !errors.Is(err, storage.ErrConflict) || attempt == evictionAttempts {
			return storageError(res, pdb.Name, err)
		}
		obj, err := q.s.getFromStore(q.ctx, res, pdb.Namespace, pdb.Name)
		if err != nil {
			return err
		}
		pdb = obj.(*policyv1.PodDisruptionBudget)
	}
}

// checkBudget refuses an eviction the budget's status does not allow, with
// kube-apiserver's errors.
func checkBudget(pdb *policyv1.PodDisruptionBudget) error {
	budget := schema.GroupResource{Group: policyv1.GroupName, Resource: "poddisruptionbudget"}
	switch {
	case pdb.Status.ObservedGeneration < pdb.Generation:
		return budgetStillProcessing(pdb.Name)
	case pdb.Status.DisruptionsAllowed < 0:
		return apierrors.NewForbidden(budget, pdb.Name, errors.New("pdb disruptions allowed is negative"))
	case len(pdb.Status.DisruptedPods) > maxDisruptedPods:
		return apierrors.NewForbidden(budget, pdb.Name, errors.New("DisruptedPods map too big - too many evictions not confirmed by PDB controller"))
	case pdb.Status.DisruptionsAllowed == 0:
		err := apierrors.NewTooManyRequests(budgetViolatedMessage, 0)
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
			Type:    policyv1.DisruptionBudgetCause,
			Message: fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy),
		})
		return err
	}
	return nil
}

// budgetStillProcessing is kube-apiserver's createTooManyRequestsError: a
// 429 that asks to retry in 10 seconds.
func budgetStillProcessing(name string) error {
	err := apierrors.NewTooManyRequests(budgetViolatedMessage, 10)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type:    policyv1.DisruptionBudgetCause,
		Message: fmt.Sprintf("The disruption budget %s is still being processed by the server.", name),
	})
	return err
}

// addConditionAndDeletePod marks the pod DisruptionTarget (reason
// EvictionByEvictionAPI), checking opts' preconditions against the latest
// pod, then deletes it with opts; a dry run only checks the delete.
func (q *request) addConditionAndDeletePod(name string, opts *metav1.DeleteOptions, dryRun bool) error {
	if !dryRun {
		podGR := schema.GroupResource{Resource: "Pod"}
		result, err := q.update(name, "", func(cur runtime.Object) (runtime.Object, error) {
			pod := cur.(*corev1.Pod)
			if p := opts.Preconditions; p != nil {
				if uid := p.UID; uid != nil && *uid != "" && *uid != pod.UID {
					return nil, apierrors.NewConflict(podGR, name, fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *uid, pod.UID))
				}
				if rv := p.ResourceVersion; rv != nil && *rv != "" && *rv != pod.ResourceVersion {
					return nil, apierrors.NewConflict(podGR, name, fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *rv, pod.ResourceVersion))
				}
			}
			setPodCondition(pod, corev1.PodCondition{
				Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Now()),
				Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting",
			})
			return pod, nil
		}, nil)
		if err != nil {
			return err
		}
		if !resourceVersionIsUnset(opts) {
			m, _ := apimeta.Accessor(result.obj)
			opts = withResourceVersion(opts, m.GetResourceVersion())
		}
	}
	_, _, err := q.deleteOne(q.info.Namespace, name, opts, dryRun)
	return err
}
