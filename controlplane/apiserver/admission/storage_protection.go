package admission

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// StorageObjectInUseProtectionPluginName is the name kube-apiserver gives
// the plugin.
const StorageObjectInUseProtectionPluginName = "StorageObjectInUseProtection"

// The finalizers the plugin adds, which the pvc-protection and
// pv-protection controllers remove once nothing uses the object.
const (
	PVCProtectionFinalizer = "kubernetes.io/pvc-protection"
	PVProtectionFinalizer  = "kubernetes.io/pv-protection"
)

// StorageObjectInUseProtection gives every new PersistentVolumeClaim the
// kubernetes.io/pvc-protection finalizer and every new PersistentVolume
// kubernetes.io/pv-protection, as kube-apiserver's default-on plugin does,
// so that the object carries it from its first read.
type StorageObjectInUseProtection struct{}

var _ MutationInterface = StorageObjectInUseProtection{}

// NewStorageObjectInUseProtection returns the plugin.
func NewStorageObjectInUseProtection() StorageObjectInUseProtection {
	return StorageObjectInUseProtection{}
}

// Name implements Plugin.
func (StorageObjectInUseProtection) Name() string { return StorageObjectInUseProtectionPluginName }

// Handles implements Handler: creations of claims and volumes.
func (StorageObjectInUseProtection) Handles(a *Attributes) bool {
	if a.Operation != Create || a.Subresource != "" {
		return false
	}
	switch a.Object.(type) {
	case *corev1.PersistentVolumeClaim, *corev1.PersistentVolume:
		return true
	}
	return false
}

// Admit implements MutationInterface.
func (p StorageObjectInUseProtection) Admit(_ context.Context, a *Attributes) error {
	if !p.Handles(a) {
		return nil
	}
	switch o := a.Object.(type) {
	case *corev1.PersistentVolumeClaim:
		if !slices.Contains(o.Finalizers, PVCProtectionFinalizer) {
			o.Finalizers = append(o.Finalizers, PVCProtectionFinalizer)
		}
	case *corev1.PersistentVolume:
		if !slices.Contains(o.Finalizers, PVProtectionFinalizer) {
			o.Finalizers = append(o.Finalizers, PVProtectionFinalizer)
		}
	}
	return nil
}
