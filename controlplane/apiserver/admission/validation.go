package admission

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// ValidationPluginName is the name Validation reports in Steps.
const ValidationPluginName = "Validation"

// Validation checks objects with Kubernetes' validation rules
// (pkg/apis/*/validation) and refuses invalid ones with a 422 Invalid whose
// causes carry Kubernetes' field paths and messages.
type Validation struct{}

var _ ValidationInterface = &Validation{}

// NewValidation returns the validation plugin.
func NewValidation() *Validation { return &Validation{} }

// Name implements Plugin.
func (*Validation) Name() string { return ValidationPluginName }

// Validate implements ValidationInterface.
func (*Validation) Validate(ctx context.Context, a *Attributes) error {
	if a.Object == nil || (a.Operation != Create && a.Operation != Update) {
		return nil
	}
	var errs field.ErrorList
	switch {
	case a.Validate != nil:
		errs = a.Validate(ctx)
	case a.Subresource == "":
		if a.Operation == Create {
			errs = Validate(a.Object, nil)
		} else {
			errs = Validate(a.Object, a.OldObject)
		}
	case a.Subresource == "status" && a.OldObject != nil:
		errs = validateStatusUpdate(a.Object, a.OldObject)
	case a.Subresource == "resize" && a.OldObject != nil:
		pod, ok := a.Object.(*corev1.Pod)
		prev, okOld := a.OldObject.(*corev1.Pod)
		if ok && okOld {
			errs = validatePodResize(pod, prev)
		}
	case a.Subresource == "finalize" && a.OldObject != nil:
		errs = validateNamespaceFinalize(a.Object, a.OldObject)
	default:
		errs = validateSubresource(a.Object)
	}
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(kindOf(a), nameOf(a), errs)
}

func nameOf(a *Attributes) string {
	if m, err := meta.Accessor(a.Object); err == nil && m.GetName() != "" {
		return m.GetName()
	}
	return a.Name
}

// kindOf names the kind that was validated for the Invalid error: the
// object's own kind by its Go type (Binding for pods/binding), falling back
// to the request's kind.
func kindOf(a *Attributes) schema.GroupKind {
	if kinds, _, err := clientgoscheme.Scheme.ObjectKinds(a.Object); err == nil && len(kinds) > 0 {
		return kinds[0].GroupKind()
	}
	if a.Kind.Kind != "" {
		return a.Kind.GroupKind()
	}
	return a.Object.GetObjectKind().GroupVersionKind().GroupKind()
}

// Validate validates obj as Kubernetes does on create (old == nil) or on
// update of the main resource (old is the stored object). Kinds without
// specific rules get object-meta validation only, as DNS subdomain names.
func Validate(obj, old runtime.Object) field.ErrorList {
	if errs, ok := validateAutoscaling(obj, old); ok {
		return errs
	}
	if errs, ok := validateAdmissionRegistration(obj, old); ok {
		return errs
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		if prev, ok := old.(*corev1.Pod); ok {
			return validatePodUpdate(o, prev)
		}
		return validatePod(o)
	case *corev1.PodTemplate:
		errs := validateMeta(&o.ObjectMeta, old, true, apimachineryvalidation.NameIsDNSSubdomain)
		return append(errs, validatePodTemplateSpec(&o.Template, field.NewPath("template"))...)
	case *appsv1.Deployment:
		prev, _ := old.(*appsv1.Deployment)
		return validateDeployment(o, prev)
	case *appsv1.ReplicaSet:
		prev, _ := old.(*appsv1.ReplicaSet)
		return validateReplicaSet(o, prev)
	case *appsv1.DaemonSet:
		prev, _ := old.(*appsv1.DaemonSet)
		return validateDaemonSet(o, prev)
	case *appsv1.StatefulSet:
		prev, _ := old.(*appsv1.StatefulSet)
		return validateStatefulSet(o, prev)
	case *batchv1.Job:
		prev, _ := old.(*batchv1.Job)
		return validateJob(o, prev)
	case *batchv1.CronJob:
		prev, _ := old.(*batchv1.CronJob)
		return validateCronJob(o, prev)
	case *corev1.ReplicationController:
		prev, _ := old.(*corev1.ReplicationController)
		return validateReplicationController(o, prev)
	case *policyv1.PodDisruptionBudget:
		prev, _ := old.(*policyv1.PodDisruptionBudget)
		return validatePodDisruptionBudget(o, prev)
	case *corev1.Service:
		prev, _ := old.(*corev1.Service)
		return validateService(o, prev)
	case *corev1.ConfigMap:
		prev, _ := old.(*corev1.ConfigMap)
		return validateConfigMap(o, prev)
	case *corev1.Secret:
		prev, _ := old.(*corev1.Secret)
		return validateSecret(o, prev)
	case *corev1.Namespace:
		return validateNamespace(o, old)
	case *corev1.Node:
		prev, _ := old.(*corev1.Node)
		return validateNode(o, prev)
	case *corev1.ServiceAccount:
		return validateMeta(&o.ObjectMeta, old, true, apimachineryvalidation.ValidateServiceAccountName)
	case *corev1.Endpoints:
		errs := validateMeta(&o.ObjectMeta, old, true, apimachineryvalidation.NameIsDNSSubdomain)
		return append(errs, validateEndpointSubsets(o.Subsets, field.NewPath("subsets"))...)
	case *corev1.Event:
		return validateEvent(o, old)
	case *coordinationv1.Lease:
		errs := validateMeta(&o.ObjectMeta, old, true, apimachineryvalidation.NameIsDNSSubdomain)
		return append(errs, validateLeaseSpec(&o.Spec, field.NewPath("spec"))...)
	case *corev1.Binding:
		return validatePodBinding(o)
	case *corev1.PersistentVolume, *corev1.PersistentVolumeClaim, *storagev1.StorageClass, *storagev1.CSIDriver, *storagev1.CSINode, *storagev1.VolumeAttachment:
		return validateStorageKind(obj, old)
	case *rbacv1.Role, *rbacv1.RoleBinding, *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding:
		return validateGenericMeta(obj, old, path.ValidatePathSegmentName)
	case *corev1.ResourceQuota, *corev1.LimitRange, *networkingv1.Ingress, *networkingv1.IngressClass, *networkingv1.NetworkPolicy, *eventsv1.Event:
		return validatePolicyKind(obj, old)
	}
	return validateGenericMeta(obj, old, apimachineryvalidation.NameIsDNSSubdomain)
}

// validateMeta validates object meta on create, and on update also the
// rules about what metadata may not change.
func validateMeta(m *metav1.ObjectMeta, old runtime.Object, namespaced bool, nameFn apimachineryvalidation.ValidateNameFunc) field.ErrorList {
	fld := field.NewPath("metadata")
	var errs field.ErrorList
	if old != nil {
		if oldMeta, err := meta.Accessor(old); err == nil {
			errs = append(errs, apimachineryvalidation.ValidateObjectMetaAccessorUpdate(m, oldMeta, fld)...)
		}
	}
	errs = append(errs, apimachineryvalidation.ValidateObjectMeta(m, namespaced, nameFn, fld)...)
	for i, f := range m.Finalizers {
		errs = append(errs, validateKubeFinalizerName(f, fld.Child("finalizers").Index(i))...)
	}
	return errs
}

// validateGenericMeta validates the metadata of a kind without specific
// rules; it is namespaced when it carries a namespace.
func validateGenericMeta(obj, old runtime.Object, nameFn apimachineryvalidation.ValidateNameFunc) field.ErrorList {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	fld := field.NewPath("metadata")
	var errs field.ErrorList
	if old != nil {
		if oldMeta, err := meta.Accessor(old); err == nil {
			errs = append(errs, apimachineryvalidation.ValidateObjectMetaAccessorUpdate(m, oldMeta, fld)...)
		}
	}
	return append(errs, apimachineryvalidation.ValidateObjectMetaAccessor(m, m.GetNamespace() != "", nameFn, fld)...)
}

// validateStatusUpdate validates a write to a status subresource.
func validateStatusUpdate(obj, old runtime.Object) field.ErrorList {
	if errs, ok := validateAutoscalingStatus(obj, old); ok {
		return errs
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		if prev, ok := old.(*corev1.Pod); ok {
			return validatePodStatusUpdate(o, prev)
		}
	case *corev1.Node:
		if prev, ok := old.(*corev1.Node); ok {
			return validateNode(o, prev)
		}
	case *corev1.Namespace:
		if prev, ok := old.(*corev1.Namespace); ok {
			return validateNamespaceStatusUpdate(o, prev)
		}
	case *appsv1.Deployment:
		if prev, ok := old.(*appsv1.Deployment); ok {
			return validateDeploymentStatusUpdate(o, prev)
		}
	case *appsv1.ReplicaSet:
		if prev, ok := old.(*appsv1.ReplicaSet); ok {
			return validateReplicaSetStatusUpdate(o, prev)
		}
	case *appsv1.StatefulSet:
		if prev, ok := old.(*appsv1.StatefulSet); ok {
			return validateStatefulSetStatusUpdate(o, prev)
		}
	case *policyv1.PodDisruptionBudget:
		if prev, ok := old.(*policyv1.PodDisruptionBudget); ok {
			return validatePodDisruptionBudgetStatusUpdate(o, prev)
		}
	case *corev1.ResourceQuota, *networkingv1.Ingress:
		return validatePolicyKindStatus(obj, old)
	case *corev1.PersistentVolumeClaim:
		if prev, ok := old.(*corev1.PersistentVolumeClaim); ok {
			return validatePersistentVolumeClaimStatusUpdate(o, prev)
		}
	case *corev1.ReplicationController:
		if prev, ok := old.(*corev1.ReplicationController); ok {
			return validateReplicationControllerStatusUpdate(o, prev)
		}
	}
	return validateMetaUpdateOnly(obj, old)
}

func validateMetaUpdateOnly(obj, old runtime.Object) field.ErrorList {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	oldMeta, err := meta.Accessor(old)
	if err != nil {
		return nil
	}
	return apimachineryvalidation.ValidateObjectMetaAccessorUpdate(m, oldMeta, field.NewPath("metadata"))
}

// validateNamespaceFinalize is ValidateNamespaceFinalizeUpdate.
func validateNamespaceFinalize(obj, old runtime.Object) field.ErrorList {
	errs := validateMetaUpdateOnly(obj, old)
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return errs
	}
	for i, f := range ns.Spec.Finalizers {
		p := field.NewPath("spec", "finalizers").Index(i)
		errs = append(errs, apimachineryvalidation.ValidateFinalizerName(string(f), p)...)
		errs = append(errs, validateKubeFinalizerName(string(f), p)...)
	}
	return errs
}

// validateSubresource validates the body of other subresource writes
// (pods/binding).
func validateSubresource(obj runtime.Object) field.ErrorList {
	if b, ok := obj.(*corev1.Binding); ok {
		return validatePodBinding(b)
	}
	return nil
}

// validatePodBinding is ValidatePodBinding: the target must name a Node.
func validatePodBinding(b *corev1.Binding) field.ErrorList {
	var errs field.ErrorList
	if b.Target.Kind != "" && b.Target.Kind != "Node" {
		errs = append(errs, field.NotSupported(field.NewPath("target", "kind"), b.Target.Kind, []string{"Node", "<empty>"}))
	}
	if b.Target.Name == "" {
		errs = append(errs, field.Required(field.NewPath("target", "name"), ""))
	}
	return errs
}
