package admission

import (
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The storage kinds' validation follows kube-apiserver's
// pkg/apis/core/validation (PersistentVolume, PersistentVolumeClaim) and
// pkg/apis/storage/validation (StorageClass, CSIDriver, CSINode,
// VolumeAttachment), with their field paths and messages.

var (
	supportedAccessModes = []string{string(corev1.ReadOnlyMany), string(corev1.ReadWriteMany), string(corev1.ReadWriteOnce), string(corev1.ReadWriteOncePod)}
	supportedPVReclaim   = []string{string(corev1.PersistentVolumeReclaimDelete), string(corev1.PersistentVolumeReclaimRecycle), string(corev1.PersistentVolumeReclaimRetain)}
	supportedSCReclaim   = []string{string(corev1.PersistentVolumeReclaimDelete), string(corev1.PersistentVolumeReclaimRetain)}
	supportedVolumeModes = []string{string(corev1.PersistentVolumeBlock), string(corev1.PersistentVolumeFilesystem)}
	supportedBindingMode = []string{string(storagev1.VolumeBindingImmediate), string(storagev1.VolumeBindingWaitForFirstConsumer)}
)

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// validateAccessModes checks a PV's or PVC's spec.accessModes; required is
// the detail of the Required error when the list is empty.
func validateAccessModes(modes []corev1.PersistentVolumeAccessMode, required string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(modes) == 0 {
		errs = append(errs, field.Required(fld, required))
	}
	rwop, other := false, false
	for _, m := range modes {
		if !contains(supportedAccessModes, string(m)) {
			errs = append(errs, field.NotSupported(fld, m, supportedAccessModes))
			continue
		}
		if m == corev1.ReadWriteOncePod {
			rwop = true
		} else {
			other = true
		}
	}
	if rwop && other {
		errs = append(errs, field.Forbidden(fld, "may not use ReadWriteOncePod with other access modes"))
	}
	return errs
}

func validateClassName(name string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(name, false) {
		errs = append(errs, field.Invalid(fld, name, msg))
	}
	return errs
}

func validatePositiveQuantity(q resource.Quantity, fld *field.Path) field.ErrorList {
	if q.Cmp(resource.Quantity{}) <= 0 {
		return field.ErrorList{field.Invalid(fld, q.String(), "must be greater than zero")}
	}
	return nil
}

func validatePathNoBacksteps(p string, fld *field.Path) field.ErrorList {
	for _, item := range strings.Split(filepath.ToSlash(p), "/") {
		if item == ".." {
			return field.ErrorList{field.Invalid(fld, p, "must not contain '..'")}
		}
	}
	return nil
}

// validatePersistentVolume is ValidatePersistentVolume.
func validatePersistentVolume(pv *corev1.PersistentVolume, old runtime.Object) field.ErrorList {
	errs := validateMeta(&pv.ObjectMeta, old, false, apimachineryvalidation.NameIsDNSSubdomain)
	spec := &pv.Spec
	fld := field.NewPath("spec")
	errs = append(errs, validateAccessModes(spec.AccessModes, "", fld.Child("accessModes"))...)
	if len(spec.Capacity) == 0 {
		errs = append(errs, field.Required(fld.Child("capacity"), ""))
	}
	if _, ok := spec.Capacity[corev1.ResourceStorage]; !ok || len(spec.Capacity) > 1 {
		errs = append(errs, field.NotSupported(fld.Child("capacity"), spec.Capacity, []corev1.ResourceName{corev1.ResourceStorage}))
	}
	names := make([]string, 0, len(spec.Capacity))
	for r := range spec.Capacity {
		names = append(names, string(r))
	}
	sort.Strings(names)
	for _, r := range names {
		q := spec.Capacity[corev1.ResourceName(r)]
		if q.Value() < 0 {
			errs = append(errs, field.Invalid(fld.Child("capacity").Key(r), q.Value(), "must be a valid resource quantity"))
		}
		errs = append(errs, validatePositiveQuantity(q, fld.Child("capacity").Key(r))...)
	}
	if p := spec.PersistentVolumeReclaimPolicy; p != "" && !contains(supportedPVReclaim, string(p)) {
		errs = append(errs, field.NotSupported(fld.Child("persistentVolumeReclaimPolicy"), p, supportedPVReclaim))
	}
	affinity := false
	if spec.NodeAffinity != nil {
		affinity = true
		if spec.NodeAffinity.Required == nil {
			errs = append(errs, field.Required(fld.Child("nodeAffinity", "required"), "must specify required node constraints"))
		} else {
			errs = append(errs, validateNodeSelector(spec.NodeAffinity.Required, fld.Child("nodeAffinity", "required"))...)
		}
	}
	errs = append(errs, validatePersistentVolumeSource(&spec.PersistentVolumeSource, affinity, fld)...)
	if spec.HostPath != nil && path.Clean(spec.HostPath.Path) == "/" && spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRecycle {
		errs = append(errs, field.Forbidden(fld.Child("persistentVolumeReclaimPolicy"), "may not be 'recycle' for a hostPath mount of '/'"))
	}
	if spec.StorageClassName != "" {
		errs = append(errs, validateClassName(spec.StorageClassName, fld.Child("storageClassName"))...)
	}
	if spec.VolumeMode != nil && !contains(supportedVolumeModes, string(*spec.VolumeMode)) {
		errs = append(errs, field.NotSupported(fld.Child("volumeMode"), *spec.VolumeMode, supportedVolumeModes))
	}
	return errs
}

// validateNodeSelector is ValidateNodeSelector for a volume's node affinity.
func validateNodeSelector(sel *corev1.NodeSelector, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	terms := fld.Child("nodeSelectorTerms")
	if len(sel.NodeSelectorTerms) == 0 {
		return append(errs, field.Required(terms, "must have at least one node selector term"))
	}
	for i, term := range sel.NodeSelectorTerms {
		for j, r := range term.MatchExpressions {
			errs = append(errs, validateNodeSelectorRequirement(r, terms.Index(i).Child("matchExpressions").Index(j))...)
		}
	}
	return errs
}

// validatePersistentVolumeSource checks that exactly one volume type is
// given, and the ones Glassplane's nodes can mount (hostPath, local) or
// that are common in manifests (nfs, csi) in detail.
func validatePersistentVolumeSource(src *corev1.PersistentVolumeSource, affinity bool, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	types := []struct {
		name string
		set  bool
	}{
		{"hostPath", src.HostPath != nil}, {"gcePersistentDisk", src.GCEPersistentDisk != nil},
		{"awsElasticBlockStore", src.AWSElasticBlockStore != nil}, {"glusterfs", src.Glusterfs != nil},
		{"flocker", src.Flocker != nil}, {"nfs", src.NFS != nil}, {"rbd", src.RBD != nil},
		{"quobyte", src.Quobyte != nil}, {"cephFS", src.CephFS != nil}, {"iscsi", src.ISCSI != nil},
		{"cinder", src.Cinder != nil}, {"fc", src.FC != nil}, {"flexVolume", src.FlexVolume != nil},
		{"azureFile", src.AzureFile != nil}, {"vsphereVolume", src.VsphereVolume != nil},
		{"azureDisk", src.AzureDisk != nil}, {"photonPersistentDisk", src.PhotonPersistentDisk != nil},
		{"portworxVolume", src.PortworxVolume != nil}, {"scaleIO", src.ScaleIO != nil},
		{"local", src.Local != nil}, {"storageos", src.StorageOS != nil}, {"csi", src.CSI != nil},
	}
	n := 0
	for _, t := range types {
		if !t.set {
			continue
		}
		if n > 0 {
			errs = append(errs, field.Forbidden(fld.Child(t.name), "may not specify more than 1 volume type"))
			continue
		}
		n++
		switch t.name {
		case "hostPath":
			if src.HostPath.Path == "" {
				errs = append(errs, field.Required(fld.Child("hostPath", "path"), ""))
			} else {
				errs = append(errs, validatePathNoBacksteps(src.HostPath.Path, fld.Child("hostPath", "path"))...)
			}
		case "local":
			if src.Local.Path == "" {
				errs = append(errs, field.Required(fld.Child("local", "path"), ""))
			} else {
				errs = append(errs, validatePathNoBacksteps(src.Local.Path, fld.Child("local", "path"))...)
			}
			if !affinity {
				errs = append(errs, field.Required(fld.Child("nodeAffinity"), "Local volume requires node affinity"))
			}
		case "nfs":
			if src.NFS.Server == "" {
				errs = append(errs, field.Required(fld.Child("nfs", "server"), ""))
			}
			if src.NFS.Path == "" {
				errs = append(errs, field.Required(fld.Child("nfs", "path"), ""))
			} else if !path.IsAbs(src.NFS.Path) {
				errs = append(errs, field.Invalid(fld.Child("nfs", "path"), src.NFS.Path, "must be an absolute path"))
			}
		case "csi":
			if src.CSI.Driver == "" {
				errs = append(errs, field.Required(fld.Child("csi", "driver"), ""))
			}
			if src.CSI.VolumeHandle == "" {
				errs = append(errs, field.Required(fld.Child("csi", "volumeHandle"), ""))
			}
		}
	}
	if n == 0 {
		errs = append(errs, field.Required(fld, "must specify a volume type"))
	}
	return errs
}

// validatePersistentVolumeUpdate is ValidatePersistentVolumeUpdate: the
// volume source and mode may not change, nor a node affinity once set.
func validatePersistentVolumeUpdate(pv, old *corev1.PersistentVolume) field.ErrorList {
	errs := validatePersistentVolume(pv, old)
	if !equality.Semantic.DeepEqual(pv.Spec.PersistentVolumeSource, old.Spec.PersistentVolumeSource) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "persistentvolumesource"), "spec.persistentvolumesource is immutable after creation"))
	}
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(pv.Spec.VolumeMode, old.Spec.VolumeMode, field.NewPath("volumeMode"))...)
	if old.Spec.NodeAffinity != nil && !equality.Semantic.DeepEqual(pv.Spec.NodeAffinity, old.Spec.NodeAffinity) {
		errs = append(errs, field.Invalid(field.NewPath("nodeAffinity"), pv.Spec.NodeAffinity, "field is immutable"))
	}
	return errs
}

// validatePersistentVolumeClaim is ValidatePersistentVolumeClaim.
func validatePersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim, old runtime.Object) field.ErrorList {
	errs := validateMeta(&pvc.ObjectMeta, old, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(errs, validatePersistentVolumeClaimSpec(&pvc.Spec, field.NewPath("spec"))...)
}

// validatePersistentVolumeClaimSpec is ValidatePersistentVolumeClaimSpec
// (also for a StatefulSet's volumeClaimTemplates).
func validatePersistentVolumeClaimSpec(spec *corev1.PersistentVolumeClaimSpec, fld *field.Path) field.ErrorList {
	errs := validateAccessModes(spec.AccessModes, "at least 1 access mode is required", fld.Child("accessModes"))
	if spec.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, fld.Child("selector"))...)
	}
	storagePath := fld.Child("resources").Key(string(corev1.ResourceStorage))
	if q, ok := spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		errs = append(errs, field.Required(storagePath, ""))
	} else if perrs := validatePositiveQuantity(q, storagePath); len(perrs) > 0 {
		errs = append(errs, perrs...)
	}
	if spec.StorageClassName != nil && *spec.StorageClassName != "" {
		errs = append(errs, validateClassName(*spec.StorageClassName, fld.Child("storageClassName"))...)
	}
	if spec.VolumeMode != nil && !contains(supportedVolumeModes, string(*spec.VolumeMode)) {
		errs = append(errs, field.NotSupported(fld.Child("volumeMode"), *spec.VolumeMode, supportedVolumeModes))
	}
	if ds := spec.DataSource; ds != nil {
		if ds.Name == "" {
			errs = append(errs, field.Required(fld.Child("dataSource", "name"), ""))
		}
		if ds.Kind == "" {
			errs = append(errs, field.Required(fld.Child("dataSource", "kind"), ""))
		}
		if (ds.APIGroup == nil || *ds.APIGroup == "") && ds.Kind != "PersistentVolumeClaim" {
			errs = append(errs, field.Invalid(fld.Child("dataSource"), ds.Kind, "must be 'PersistentVolumeClaim' when referencing the default apiGroup"))
		}
	}
	return errs
}

// validatePersistentVolumeClaimUpdate is ValidatePersistentVolumeClaimUpdate:
// the spec is immutable except spec.volumeName once, a first
// storageClassName, and, for a bound claim, resources.requests.storage
// (which may not go below status.capacity: upstream's
// RecoverVolumeExpansionFailure, GA) and volumeAttributesClassName.
// Growing the request is PersistentVolumeClaimResize's to allow.
func validatePersistentVolumeClaimUpdate(pvc, old *corev1.PersistentVolumeClaim) field.ErrorList {
	errs := validatePersistentVolumeClaim(pvc, old)
	next, prev := pvc.Spec.DeepCopy(), old.Spec.DeepCopy()
	if prev.VolumeName == "" {
		prev.VolumeName = next.VolumeName
	}
	if next.StorageClassName != nil && prev.StorageClassName == nil {
		prev.StorageClassName = next.StorageClassName
	}
	if pvc.Status.Phase == corev1.ClaimBound {
		if next.Resources.Requests != nil {
			next.Resources.Requests[corev1.ResourceStorage] = old.Spec.Resources.Requests[corev1.ResourceStorage]
		}
		next.VolumeAttributesClassName = prev.VolumeAttributesClassName
	}
	if !equality.Semantic.DeepEqual(next, prev) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"))
	}
	newSize, oldSize := pvc.Spec.Resources.Requests[corev1.ResourceStorage], old.Spec.Resources.Requests[corev1.ResourceStorage]
	if newSize.Cmp(oldSize) < 0 {
		if status := old.Status.Capacity[corev1.ResourceStorage]; newSize.Cmp(status) <= 0 {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"), "field can not be less than status.capacity"))
		}
	}
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(pvc.Spec.VolumeMode, old.Spec.VolumeMode, field.NewPath("volumeMode"))...)
	return errs
}

// validatePersistentVolumeClaimStatusUpdate checks the claim's status
// capacity and allocated resources are not negative.
func validatePersistentVolumeClaimStatusUpdate(pvc, old *corev1.PersistentVolumeClaim) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&pvc.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	if len(pvc.ResourceVersion) == 0 {
		errs = append(errs, field.Required(field.NewPath("resourceVersion"), ""))
	}
	capPath := field.NewPath("status", "capacity")
	for r, q := range pvc.Status.Capacity {
		errs = append(errs, validateResourceQuantity(r, q, capPath.Key(string(r)))...)
	}
	return errs
}

// validateStorageClass is ValidateStorageClass.
func validateStorageClass(sc *storagev1.StorageClass) field.ErrorList {
	errs := validateMeta(&sc.ObjectMeta, nil, false, apimachineryvalidation.NameIsDNSSubdomain)
	if sc.Provisioner == "" {
		errs = append(errs, field.Required(field.NewPath("provisioner"), ""))
	} else {
		for _, msg := range validation.IsQualifiedName(strings.ToLower(sc.Provisioner)) {
			errs = append(errs, field.Invalid(field.NewPath("provisioner"), sc.Provisioner, msg))
		}
	}
	for k := range sc.Parameters {
		if k == "" {
			errs = append(errs, field.Invalid(field.NewPath("parameters"), k, "field can not be empty."))
		}
	}
	if p := sc.ReclaimPolicy; p != nil && *p != "" && !contains(supportedSCReclaim, string(*p)) {
		errs = append(errs, field.NotSupported(field.NewPath("reclaimPolicy"), p, supportedSCReclaim))
	}
	if m := sc.VolumeBindingMode; m == nil {
		errs = append(errs, field.Required(field.NewPath("volumeBindingMode"), ""))
	} else if !contains(supportedBindingMode, string(*m)) {
		errs = append(errs, field.NotSupported(field.NewPath("volumeBindingMode"), m, supportedBindingMode))
	}
	return errs
}

// validateStorageClassUpdate is ValidateStorageClassUpdate: parameters,
// provisioner, reclaimPolicy and volumeBindingMode are immutable.
func validateStorageClassUpdate(sc, old *storagev1.StorageClass) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&sc.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(sc.Parameters, old.Parameters, field.NewPath("parameters"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(sc.Provisioner, old.Provisioner, field.NewPath("provisioner"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(sc.ReclaimPolicy, old.ReclaimPolicy, field.NewPath("reclaimPolicy"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(sc.VolumeBindingMode, old.VolumeBindingMode, field.NewPath("volumeBindingMode"))...)
	return errs
}

// validateCSIDriver checks the name as a CSI driver name.
func validateCSIDriver(d *storagev1.CSIDriver, old *storagev1.CSIDriver) field.ErrorList {
	var errs field.ErrorList
	if old != nil {
		errs = apimachineryvalidation.ValidateObjectMetaUpdate(&d.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(d.Spec.AttachRequired, old.Spec.AttachRequired, field.NewPath("spec", "attachRequired"))...)
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(d.Spec.VolumeLifecycleModes, old.Spec.VolumeLifecycleModes, field.NewPath("spec", "volumeLifecycleModes"))...)
	}
	errs = append(errs, apimachineryvalidation.ValidateObjectMeta(&d.ObjectMeta, false, csiDriverName, field.NewPath("metadata"))...)
	return append(errs, validateCSIDriverSpec(&d.Spec, field.NewPath("spec"))...)
}

// validateCSIDriverSpec is upstream's check of the values of a CSIDriver's
// spec: the defaulted booleans set (unless a client cleared them), the
// known policy and modes, unique token audiences with sane lifetimes, and
// the least allocatable update period. (Upstream names attachRequired's
// path spec.attachedRequired in its error; so does this.)
func validateCSIDriverSpec(spec *storagev1.CSIDriverSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		path string
		set  bool
	}{
		{"attachedRequired", spec.AttachRequired != nil},
		{"podInfoOnMount", spec.PodInfoOnMount != nil},
		{"storageCapacity", spec.StorageCapacity != nil},
	} {
		if !f.set {
			errs = append(errs, field.Required(p.Child(f.path), ""))
		}
	}
	if spec.FSGroupPolicy != nil {
		policies := []string{string(storagev1.FileFSGroupPolicy), string(storagev1.NoneFSGroupPolicy), string(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy)}
		if !slices.Contains(policies, string(*spec.FSGroupPolicy)) {
			errs = append(errs, field.NotSupported(p.Child("fsGroupPolicy"), *spec.FSGroupPolicy, policies))
		}
	}
	modes := []string{string(storagev1.VolumeLifecyclePersistent), string(storagev1.VolumeLifecycleEphemeral)}
	for _, m := range spec.VolumeLifecycleModes {
		if !slices.Contains(modes, string(m)) {
			errs = append(errs, field.NotSupported(p.Child("volumeLifecycleModes"), m, modes))
		}
	}
	audiences := map[string]bool{}
	for i, tr := range spec.TokenRequests {
		path := p.Child("tokenRequests").Index(i)
		if audiences[tr.Audience] {
			errs = append(errs, field.Duplicate(path.Child("audience"), tr.Audience))
			continue
		}
		audiences[tr.Audience] = true
		if tr.ExpirationSeconds == nil {
			continue
		}
		if secs := *tr.ExpirationSeconds; secs < 600 {
			errs = append(errs, field.Invalid(path.Child("expirationSeconds"), secs, "may not specify a duration less than 10 minutes"))
		} else if secs > 1<<32 {
			errs = append(errs, field.Invalid(path.Child("expirationSeconds"), secs, "may not specify a duration larger than 2^32 seconds"))
		}
	}
	if period := spec.NodeAllocatableUpdatePeriodSeconds; period != nil && *period < 10 {
		errs = append(errs, field.Invalid(p.Child("nodeAllocatableUpdatePeriodSeconds"), *period, "must be greater than or equal to 10 seconds"))
	}
	return errs
}

// csiDriverName is ValidateCSIDriverName's rule as a name function.
func csiDriverName(name string, _ bool) []string {
	var msgs []string
	if len(name) > 63 {
		msgs = append(msgs, validation.MaxLenError(63))
	}
	msgs = append(msgs, validation.IsDNS1123Subdomain(strings.ToLower(name))...)
	return msgs
}

// validateCSINode checks the name as a node name and each driver's.
func validateCSINode(n *storagev1.CSINode, old *storagev1.CSINode) field.ErrorList {
	var errs field.ErrorList
	if old != nil {
		errs = apimachineryvalidation.ValidateObjectMetaUpdate(&n.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	}
	errs = append(errs, apimachineryvalidation.ValidateObjectMeta(&n.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	seen := map[string]bool{}
	for i, d := range n.Spec.Drivers {
		p := field.NewPath("spec", "drivers").Index(i)
		if d.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else if seen[d.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), d.Name))
		}
		seen[d.Name] = true
		if d.NodeID == "" {
			errs = append(errs, field.Required(p.Child("nodeID"), ""))
		}
	}
	return errs
}

// validateVolumeAttachment is ValidateVolumeAttachment; on update the spec
// is immutable.
func validateVolumeAttachment(va *storagev1.VolumeAttachment, old *storagev1.VolumeAttachment) field.ErrorList {
	var errs field.ErrorList
	if old != nil {
		errs = apimachineryvalidation.ValidateObjectMetaUpdate(&va.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
		if !equality.Semantic.DeepEqual(va.Spec, old.Spec) {
			errs = append(errs, field.Invalid(field.NewPath("spec"), va.Spec, "field is immutable"))
		}
	}
	errs = append(errs, apimachineryvalidation.ValidateObjectMeta(&va.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	spec := field.NewPath("spec")
	if va.Spec.Attacher == "" {
		errs = append(errs, field.Required(spec.Child("attacher"), ""))
	}
	src := va.Spec.Source
	switch {
	case src.InlineVolumeSpec == nil && src.PersistentVolumeName == nil:
		errs = append(errs, field.Required(spec.Child("source"), "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
	case src.InlineVolumeSpec != nil && src.PersistentVolumeName != nil:
		errs = append(errs, field.Forbidden(spec.Child("source"), "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
	case src.PersistentVolumeName != nil && *src.PersistentVolumeName == "":
		errs = append(errs, field.Required(spec.Child("source", "persistentVolumeName"), "must specify non empty persistentVolumeName"))
	}
	for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(va.Spec.NodeName, false) {
		errs = append(errs, field.Invalid(spec.Child("nodeName"), va.Spec.NodeName, msg))
	}
	return errs
}

// validateStorageKind validates a storage kind on create (old == nil) or
// update.
func validateStorageKind(obj, old runtime.Object) field.ErrorList {
	switch o := obj.(type) {
	case *corev1.PersistentVolume:
		if prev, ok := old.(*corev1.PersistentVolume); ok {
			return validatePersistentVolumeUpdate(o, prev)
		}
		return validatePersistentVolume(o, nil)
	case *corev1.PersistentVolumeClaim:
		if prev, ok := old.(*corev1.PersistentVolumeClaim); ok {
			return validatePersistentVolumeClaimUpdate(o, prev)
		}
		return validatePersistentVolumeClaim(o, nil)
	case *storagev1.StorageClass:
		if prev, ok := old.(*storagev1.StorageClass); ok {
			return validateStorageClassUpdate(o, prev)
		}
		return validateStorageClass(o)
	case *storagev1.CSIDriver:
		prev, _ := old.(*storagev1.CSIDriver)
		return validateCSIDriver(o, prev)
	case *storagev1.CSINode:
		prev, _ := old.(*storagev1.CSINode)
		return validateCSINode(o, prev)
	case *storagev1.VolumeAttachment:
		prev, _ := old.(*storagev1.VolumeAttachment)
		return validateVolumeAttachment(o, prev)
	}
	return nil
}
