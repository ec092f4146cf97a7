package apiserver

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-helpers/storage/volume"

	"github.com/glassplane/glassplane/controlplane/apiserver/admission"
)

// The storage kinds' columns, as kube-apiserver's printers give them.
var (
	persistentVolumePrinter = printer{
		columns: []metav1.TableColumnDefinition{nameCol,
			col("Capacity", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["capacity"], 0),
			col("Access Modes", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["accessModes"], 0),
			col("Reclaim Policy", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["persistentVolumeReclaimPolicy"], 0),
			col("Status", "string", corev1.PersistentVolumeStatus{}.SwaggerDoc()["phase"], 0),
			col("Claim", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["claimRef"], 0),
			col("StorageClass", "string", "StorageClass of the pv", 0),
			col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv", 0),
			col("Reason", "string", corev1.PersistentVolumeStatus{}.SwaggerDoc()["reason"], 0),
			ageCol,
			col("VolumeMode", "string", corev1.PersistentVolumeSpec{}.SwaggerDoc()["volumeMode"], 1),
		},
		cells: func(obj runtime.Object) []any {
			pv := obj.(*corev1.PersistentVolume)
			claim := ""
			if ref := pv.Spec.ClaimRef; ref != nil {
				claim = ref.Namespace + "/" + ref.Name
			}
			size := pv.Spec.Capacity[corev1.ResourceStorage]
			phase := string(pv.Status.Phase)
			if pv.DeletionTimestamp != nil {
				phase = "Terminating"
			}
			return []any{pv.Name, size.String(), accessModes(pv.Spec.AccessModes), string(pv.Spec.PersistentVolumeReclaimPolicy),
				phase, claim, volume.GetPersistentVolumeClass(pv), unsetOr(pv.Spec.VolumeAttributesClassName),
				pv.Status.Reason, age(pv.CreationTimestamp), volumeMode(pv.Spec.VolumeMode)}
		},
	}
	persistentVolumeClaimPrinter = printer{
		columns: []metav1.TableColumnDefinition{nameCol,
			col("Status", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["phase"], 0),
			col("Volume", "string", corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeName"], 0),
			col("Capacity", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["capacity"], 0),
			col("Access Modes", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["accessModes"], 0),
			col("StorageClass", "string", "StorageClass of the pvc", 0),
			col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc", 0),
			ageCol,
			col("VolumeMode", "string", corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeMode"], 1),
		},
		cells: func(obj runtime.Object) []any {
			pvc := obj.(*corev1.PersistentVolumeClaim)
			phase := string(pvc.Status.Phase)
			if pvc.DeletionTimestamp != nil {
				phase = "Terminating"
			}
			capacity, modes := "", ""
			if pvc.Spec.VolumeName != "" {
				modes = accessModes(pvc.Status.AccessModes)
				size := pvc.Status.Capacity[corev1.ResourceStorage]
				capacity = size.String()
			}
			return []any{pvc.Name, phase, pvc.Spec.VolumeName, capacity, modes, volume.GetPersistentVolumeClaimClass(pvc),
				unsetOr(pvc.Status.CurrentVolumeAttributesClassName), age(pvc.CreationTimestamp), volumeMode(pvc.Spec.VolumeMode)}
		},
	}
	storageClassPrinter = printer{
		columns: []metav1.TableColumnDefinition{nameCol,
			col("Provisioner", "string", "Indicates the type of the provisioner.", 0),
			col("ReclaimPolicy", "string", "Indicates the type of the reclaim policy.", 0),
			col("VolumeBindingMode", "string", "Indicates the mode of the volume binding.", 0),
			col("AllowVolumeExpansion", "string", "Indicates whether the storage class allow volume expand.", 0),
			ageCol,
		},
		cells: func(obj runtime.Object) []any {
			sc := obj.(*storagev1.StorageClass)
			name := sc.Name
			if admission.IsDefaultStorageClass(sc) {
				name += " (default)"
			}
			reclaim := string(corev1.PersistentVolumeReclaimDelete)
			if sc.ReclaimPolicy != nil {
				reclaim = string(*sc.ReclaimPolicy)
			}
			mode := string(storagev1.VolumeBindingImmediate)
			if sc.VolumeBindingMode != nil {
				mode = string(*sc.VolumeBindingMode)
			}
			expand := sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
			return []any{name, sc.Provisioner, reclaim, mode, expand, age(sc.CreationTimestamp)}
		},
	}
	csiDriverPrinter = printer{
		columns: []metav1.TableColumnDefinition{nameCol,
			col("AttachRequired", "boolean", storagev1.CSIDriverSpec{}.SwaggerDoc()["attachRequired"], 0),
			col("PodInfoOnMount", "boolean", storagev1.CSIDriverSpec{}.SwaggerDoc()["podInfoOnMount"], 0),
			col("StorageCapacity", "boolean", storagev1.CSIDriverSpec{}.SwaggerDoc()["storageCapacity"], 0),
			col("TokenRequests", "string", storagev1.CSIDriverSpec{}.SwaggerDoc()["tokenRequests"], 0),
			col("RequiresRepublish", "boolean", storagev1.CSIDriverSpec{}.SwaggerDoc()["requiresRepublish"], 0),
			col("Modes", "string", storagev1.CSIDriverSpec{}.SwaggerDoc()["volumeLifecycleModes"], 0),
			ageCol,
		},
		cells: func(obj runtime.Object) []any {
			d := obj.(*storagev1.CSIDriver)
			flag := func(b *bool) bool { return b != nil && *b }
			var audiences []string
			for _, t := range d.Spec.TokenRequests {
				audiences = append(audiences, t.Audience)
			}
			tokens := "<unset>"
			if len(audiences) > 0 {
				tokens = strings.Join(audiences, ",")
			}
			var modes []string
			for _, m := range d.Spec.VolumeLifecycleModes {
				modes = append(modes, string(m))
			}
			return []any{d.Name, flag(d.Spec.AttachRequired), flag(d.Spec.PodInfoOnMount), flag(d.Spec.StorageCapacity), tokens,
				flag(d.Spec.RequiresRepublish), orNone(strings.Join(modes, ",")), age(d.CreationTimestamp)}
		},
	}
	csiNodePrinter = printer{
		columns: []metav1.TableColumnDefinition{nameCol,
			col("Drivers", "integer", "Drivers indicates the number of CSI drivers registered on the node", 0),
			ageCol,
		},
		cells: func(obj runtime.Object) []any {
			n := obj.(*storagev1.CSINode)
			return []any{n.Name, int64(len(n.Spec.Drivers)), age(n.CreationTimestamp)}
		},
	}
	volumeAttachmentPrinter = printer{
		columns: []metav1.TableColumnDefinition{nameCol,
			col("Attacher", "string", storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["attacher"], 0),
			col("PV", "string", storagev1.VolumeAttachmentSource{}.SwaggerDoc()["persistentVolumeName"], 0),
			col("Node", "string", storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["nodeName"], 0),
			col("Attached", "boolean", storagev1.VolumeAttachmentStatus{}.SwaggerDoc()["attached"], 0),
			ageCol,
		},
		cells: func(obj runtime.Object) []any {
			va := obj.(*storagev1.VolumeAttachment)
			pv := ""
			if va.Spec.Source.PersistentVolumeName != nil {
				pv = *va.Spec.Source.PersistentVolumeName
			}
			return []any{va.Name, va.Spec.Attacher, pv, va.Spec.NodeName, va.Status.Attached, age(va.CreationTimestamp)}
		},
	}
)

// accessModes is kubectl's short form of access modes (RWO,ROX,RWX,RWOP),
// as upstream's GetAccessModesAsString.
func accessModes(modes []corev1.PersistentVolumeAccessMode) string {
	has := func(m corev1.PersistentVolumeAccessMode) bool {
		for _, x := range modes {
			if x == m {
				return true
			}
		}
		return false
	}
	var out []string
	for _, m := range []struct {
		mode  corev1.PersistentVolumeAccessMode
		short string
	}{{corev1.ReadWriteOnce, "RWO"}, {corev1.ReadOnlyMany, "ROX"}, {corev1.ReadWriteMany, "RWX"}, {corev1.ReadWriteOncePod, "RWOP"}} {
		if has(m.mode) {
			out = append(out, m.short)
		}
	}
	return strings.Join(out, ",")
}

func unsetOr(s *string) string {
	if s == nil {
		return "<unset>"
	}
	return *s
}

func volumeMode(m *corev1.PersistentVolumeMode) string {
	if m == nil {
		return "<unset>"
	}
	return string(*m)
}
