package apiserver

import (
	"context"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/glassplane/glassplane/controlplane/apiserver/admission"
)

// prepareForCreate does what Kubernetes' registry strategies and
// BeforeCreate do to a new object: server-owned metadata (uid,
// creationTimestamp, generation) and the initial status.
func prepareForCreate(res *resource, obj runtime.Object) {
	prepareForCreateIn(context.Background(), res, obj)
}

// prepareForCreateIn is prepareForCreate for a request's create: ctx
// carries the requesting user, which a resource's PrepareCreate may record
// (a CertificateSigningRequest's spec.username).
func prepareForCreateIn(ctx context.Context, res *resource, obj runtime.Object) {
	m, _ := meta.Accessor(obj)
	m.SetUID(uuid.NewUUID())
	m.SetCreationTimestamp(metav1.Now())
	m.SetResourceVersion("")
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetGeneration(0)
	if res.TracksGeneration {
		m.SetGeneration(1)
	}
	if res.PrepareCreate != nil {
		res.PrepareCreate(ctx, obj)
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		o.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: admission.ComputePodQOS(o)}
	case *corev1.Namespace:
		o.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
		if !containsFinalizer(o.Spec.Finalizers, corev1.FinalizerKubernetes) {
			o.Spec.Finalizers = append(o.Spec.Finalizers, corev1.FinalizerKubernetes)
		}
	case *corev1.Service:
		o.Status = corev1.ServiceStatus{}
	case *appsv1.Deployment:
		o.Status = appsv1.DeploymentStatus{}
	case *appsv1.ReplicaSet:
		o.Status = appsv1.ReplicaSetStatus{}
	case *appsv1.DaemonSet:
		o.Status = appsv1.DaemonSetStatus{}
	case *appsv1.StatefulSet:
		o.Status = appsv1.StatefulSetStatus{}
	case *batchv1.Job:
		o.Status = batchv1.JobStatus{}
	case *batchv1.CronJob:
		o.Status = batchv1.CronJobStatus{}
	case *corev1.ReplicationController:
		o.Status = corev1.ReplicationControllerStatus{}
	case *policyv1.PodDisruptionBudget:
		o.Status = policyv1.PodDisruptionBudgetStatus{}
	case *corev1.PersistentVolume:
		now := metav1.Now()
		o.Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumePending, LastPhaseTransitionTime: &now}
	case *corev1.PersistentVolumeClaim:
		o.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}
	}
}

func containsFinalizer(list []corev1.FinalizerName, f corev1.FinalizerName) bool {
	for _, x := range list {
		if x == f {
			return true
		}
	}
	return false
}

// preserveMetadata restores what a client may not change on update.
func preserveMetadata(old, next runtime.Object) {
	om, _ := meta.Accessor(old)
	nm, _ := meta.Accessor(next)
	nm.SetUID(om.GetUID())
	nm.SetCreationTimestamp(om.GetCreationTimestamp())
	nm.SetDeletionTimestamp(om.GetDeletionTimestamp())
	nm.SetDeletionGracePeriodSeconds(om.GetDeletionGracePeriodSeconds())
	nm.SetGeneration(om.GetGeneration())
	nm.SetNamespace(om.GetNamespace())
	nm.SetName(om.GetName())
	nm.SetGenerateName(om.GetGenerateName())
}

// prepareForUpdate does what the main resource's update strategy does:
// status changes are dropped, and generation grows with spec changes.
func prepareForUpdate(res *resource, old, next runtime.Object) {
	preserveMetadata(old, next)
	if res.HasStatus {
		copyField(old, next, "Status")
	}
	if res.PrepareUpdate != nil {
		res.PrepareUpdate(context.Background(), old, next)
	}
	if ns, ok := next.(*corev1.Namespace); ok {
		// spec.finalizers changes only through /finalize.
		ns.Spec.Finalizers = old.(*corev1.Namespace).Spec.Finalizers
	}
	if res.TracksGeneration && !equality.Semantic.DeepEqual(generational(res, old), generational(res, next)) {
		nm, _ := meta.Accessor(next)
		nm.SetGeneration(nm.GetGeneration() + 1)
	}
}

// generational returns the part of obj whose changes bump its generation:
// its spec, or what the resource's Generational picks.
func generational(res *resource, obj runtime.Object) any {
	if res.Generational != nil {
		return res.Generational(obj)
	}
	return structField(obj, "Spec")
}

// endpointSliceContent is what bumps an EndpointSlice's generation, as
// upstream's strategy has it: anything but its metadata, and its labels.
func endpointSliceContent(obj runtime.Object) any {
	s := obj.(*discoveryv1.EndpointSlice)
	return []any{s.AddressType, s.Endpoints, s.Ports, s.Labels}
}

// prepareForStatusUpdate does what the status strategies do: only status
// (and labels and annotations) change.
func prepareForStatusUpdate(old, next runtime.Object) {
	preserveMetadata(old, next)
	copyField(old, next, "Spec")
	om, _ := meta.Accessor(old)
	nm, _ := meta.Accessor(next)
	nm.SetOwnerReferences(om.GetOwnerReferences())
	nm.SetFinalizers(om.GetFinalizers())
}

// structField returns obj's named top-level struct field, or nil.
func structField(obj runtime.Object, name string) any {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	f := v.Elem().FieldByName(name)
	if !f.IsValid() {
		return nil
	}
	return f.Interface()
}

// copyField sets next's named field to old's.
func copyField(old, next runtime.Object, name string) {
	ov := reflect.ValueOf(old).Elem().FieldByName(name)
	nv := reflect.ValueOf(next).Elem().FieldByName(name)
	if ov.IsValid() && nv.IsValid() && nv.CanSet() {
		nv.Set(ov)
	}
}

// shouldDeleteOnUpdate reports whether an update leaves an object that is
// being deleted with nothing left to wait for, as the generic registry's
// shouldDeleteDuringUpdate does.
func shouldDeleteOnUpdate(obj runtime.Object) bool {
	m, _ := meta.Accessor(obj)
	if m.GetDeletionTimestamp() == nil || len(m.GetFinalizers()) > 0 {
		return false
	}
	if ns, ok := obj.(*corev1.Namespace); ok && len(ns.Spec.Finalizers) > 0 {
		return false
	}
	g := m.GetDeletionGracePeriodSeconds()
	return g == nil || *g == 0
}

// gracePeriod returns how long a delete of obj waits: pods bound to a node
// wait their grace period, everything else goes at once.
func gracePeriod(obj runtime.Object, requested *int64) int64 {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return 0
	}
	if requested != nil {
		if *requested < 0 {
			return 1
		}
		if *requested == 0 {
			return 0
		}
	}
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return 0
	}
	if requested != nil {
		return *requested
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return corev1.DefaultTerminationGracePeriodSeconds
}

// markDeleting sets deletionTimestamp and deletionGracePeriodSeconds for a
// delete that must wait (finalizers, graceful pod termination, namespace
// content). It reports whether obj changed.
func markDeleting(res *resource, obj runtime.Object, grace int64) bool {
	m, _ := meta.Accessor(obj)
	now := time.Now()
	changed := false
	if dt := m.GetDeletionTimestamp(); dt == nil {
		t := metav1.NewTime(now.Add(time.Duration(grace) * time.Second))
		m.SetDeletionTimestamp(&t)
		m.SetDeletionGracePeriodSeconds(&grace)
		if res.TracksGeneration {
			m.SetGeneration(m.GetGeneration() + 1)
		}
		changed = true
	} else if cur := m.GetDeletionGracePeriodSeconds(); cur == nil || grace < *cur {
		t := metav1.NewTime(now.Add(time.Duration(grace) * time.Second))
		if t.Before(dt) {
			m.SetDeletionTimestamp(&t)
		}
		m.SetDeletionGracePeriodSeconds(&grace)
		changed = true
	}
	if ns, ok := obj.(*corev1.Namespace); ok && ns.Status.Phase != corev1.NamespaceTerminating {
		ns.Status.Phase = corev1.NamespaceTerminating
		changed = true
	}
	return changed
}

// mustWait reports whether a delete of obj with the given grace period
// leaves the object in place for now.
func mustWait(obj runtime.Object, grace int64) bool {
	m, _ := meta.Accessor(obj)
	if len(m.GetFinalizers()) > 0 || grace > 0 {
		return true
	}
	ns, ok := obj.(*corev1.Namespace)
	return ok && len(ns.Spec.Finalizers) > 0
}
