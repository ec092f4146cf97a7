package admission

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// defaultStorage fills in the defaults of the storage kinds, as
// k8s.io/kubernetes' pkg/apis/core/v1 and pkg/apis/storage/v1 defaulters
// do; other kinds are left alone.
func defaultStorage(obj any) {
	switch o := obj.(type) {
	case *corev1.PersistentVolume:
		if o.Spec.PersistentVolumeReclaimPolicy == "" {
			o.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
		}
		if o.Spec.VolumeMode == nil {
			o.Spec.VolumeMode = ptrTo(corev1.PersistentVolumeFilesystem)
		}
		if o.Spec.HostPath != nil && o.Spec.HostPath.Type == nil {
			o.Spec.HostPath.Type = ptrTo(corev1.HostPathUnset)
		}
		if o.Status.Phase == "" {
			o.Status.Phase = corev1.VolumePending
		}
	case *corev1.PersistentVolumeClaim:
		if o.Spec.VolumeMode == nil {
			o.Spec.VolumeMode = ptrTo(corev1.PersistentVolumeFilesystem)
		}
		if o.Status.Phase == "" {
			o.Status.Phase = corev1.ClaimPending
		}
	case *storagev1.StorageClass:
		if o.ReclaimPolicy == nil {
			o.ReclaimPolicy = ptrTo(corev1.PersistentVolumeReclaimDelete)
		}
		if o.VolumeBindingMode == nil {
			o.VolumeBindingMode = ptrTo(storagev1.VolumeBindingImmediate)
		}
	case *storagev1.CSIDriver:
		if o.Spec.AttachRequired == nil {
			o.Spec.AttachRequired = ptrTo(true)
		}
		if o.Spec.PodInfoOnMount == nil {
			o.Spec.PodInfoOnMount = ptrTo(false)
		}
		if o.Spec.StorageCapacity == nil {
			o.Spec.StorageCapacity = ptrTo(false)
		}
		if o.Spec.FSGroupPolicy == nil {
			o.Spec.FSGroupPolicy = ptrTo(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy)
		}
		if o.Spec.RequiresRepublish == nil {
			o.Spec.RequiresRepublish = ptrTo(false)
		}
		if len(o.Spec.VolumeLifecycleModes) == 0 {
			o.Spec.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
		}
		if o.Spec.SELinuxMount == nil {
			o.Spec.SELinuxMount = ptrTo(false)
		}
	}
}
