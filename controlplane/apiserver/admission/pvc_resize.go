package admission

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/component-helpers/storage/volume"
)

// PersistentVolumeClaimResizePluginName is the name
// PersistentVolumeClaimResize reports in Steps, as kube-apiserver's plugin.
const PersistentVolumeClaimResizePluginName = "PersistentVolumeClaimResize"

// PersistentVolumeClaimResize refuses to grow a claim's
// spec.resources.requests.storage unless the claim is bound and its
// StorageClass (the same before and after) has allowVolumeExpansion: true,
// as kube-apiserver's plugin of that name, with its 403 messages. Shrinking
// is validation's to refuse.
type PersistentVolumeClaimResize struct {
	classes StorageClassLister
}

var _ ValidationInterface = &PersistentVolumeClaimResize{}

// NewPersistentVolumeClaimResize returns the plugin reading classes from classes.
func NewPersistentVolumeClaimResize(classes StorageClassLister) *PersistentVolumeClaimResize {
	return &PersistentVolumeClaimResize{classes: classes}
}

// Name implements Plugin.
func (*PersistentVolumeClaimResize) Name() string { return PersistentVolumeClaimResizePluginName }

// Validate implements ValidationInterface.
func (p *PersistentVolumeClaimResize) Validate(ctx context.Context, a *Attributes) error {
	if a.Resource.GroupResource() != corev1.Resource("persistentvolumeclaims") || a.Subresource != "" {
		return nil
	}
	pvc, ok := a.Object.(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil
	}
	old, ok := a.OldObject.(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil
	}
	oldSize := old.Spec.Resources.Requests[corev1.ResourceStorage]
	newSize := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if newSize.Cmp(oldSize) <= 0 {
		return nil
	}
	if old.Status.Phase != corev1.ClaimBound {
		return apierrors.NewForbidden(a.Resource.GroupResource(), objectNameForError(a), errors.New("Only bound persistent volume claims can be expanded"))
	}
	if !p.allowResize(ctx, pvc, old) {
		return apierrors.NewForbidden(a.Resource.GroupResource(), objectNameForError(a),
			errors.New("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"))
	}
	return nil
}

// allowResize says whether the claim's class, unchanged, allows expansion.
func (p *PersistentVolumeClaimResize) allowResize(ctx context.Context, pvc, old *corev1.PersistentVolumeClaim) bool {
	class, oldClass := volume.GetPersistentVolumeClaimClass(pvc), volume.GetPersistentVolumeClaimClass(old)
	if class == "" || oldClass == "" || class != oldClass {
		return false
	}
	classes, err := p.classes.ListStorageClasses(ctx)
	if err != nil {
		return false
	}
	for _, sc := range classes {
		if sc.Name == class {
			return sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
		}
	}
	return false
}
