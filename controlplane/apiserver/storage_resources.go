package apiserver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/glassplane/glassplane/controlplane/apiserver/admission"
	"github.com/glassplane/glassplane/controlplane/localpath"
	"github.com/glassplane/glassplane/controlplane/storage"
)

// DefaultStorageClassName names the default StorageClass created at
// bootstrap: directories on the node the claim's first pod is scheduled
// to, made by the built-in local-path provisioner
// (controlplane/controllers/volume).
const DefaultStorageClassName = "standard"

// storageResources are the registry entries of persistent storage:
// core/v1 PersistentVolumes and PersistentVolumeClaims and the
// storage.k8s.io/v1 kinds, as kube-apiserver serves them.
func storageResources() []*resource {
	sk := storagev1.SchemeGroupVersion.WithKind
	return []*resource{
		{
			GVK: corev1.SchemeGroupVersion.WithKind("PersistentVolume"), Resource: "persistentvolumes", Singular: "persistentvolume", ShortNames: []string{"pv"},
			Verbs: verbsAll, StorageResource: "persistentvolumes", HasStatus: true,
			Subresources: []*subresource{statusSubresource()},
			FieldLabels: func(obj runtime.Object) fields.Set {
				return fields.Set{"name": obj.(*corev1.PersistentVolume).Name}
			},
		},
		{
			GVK: corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"), Resource: "persistentvolumeclaims", Singular: "persistentvolumeclaim", ShortNames: []string{"pvc"},
			Namespaced: true, Verbs: verbsAll, StorageResource: "persistentvolumeclaims", HasStatus: true,
			Subresources: []*subresource{statusSubresource()},
			FieldLabels: func(obj runtime.Object) fields.Set {
				return fields.Set{"name": obj.(*corev1.PersistentVolumeClaim).Name}
			},
		},
		{
			GVK: sk("StorageClass"), Resource: "storageclasses", Singular: "storageclass", ShortNames: []string{"sc"},
			Verbs: verbsAll, StorageResource: "storageclasses",
		},
		{
			GVK: sk("CSIDriver"), Resource: "csidrivers", Singular: "csidriver",
			Verbs: verbsAll, StorageResource: "csidrivers",
		},
		{
			GVK: sk("CSINode"), Resource: "csinodes", Singular: "csinode",
			Verbs: verbsAll, StorageResource: "csinodes",
		},
		{
			GVK: sk("VolumeAttributesClass"), Resource: "volumeattributesclasses", Singular: "volumeattributesclass", ShortNames: []string{"vac"},
			Verbs: verbsAll, StorageResource: "volumeattributesclasses", Validate: validateVolumeAttributesClass,
		},
		{
			GVK: sk("VolumeAttachment"), Resource: "volumeattachments", Singular: "volumeattachment",
			Verbs: verbsAll, StorageResource: "volumeattachments", HasStatus: true,
			Subresources: []*subresource{statusSubresource()},
			// The attacher reports through /status, as upstream's
			// strategy has it: a create starts with none.
			PrepareCreate: func(_ context.Context, obj runtime.Object) {
				obj.(*storagev1.VolumeAttachment).Status = storagev1.VolumeAttachmentStatus{}
			},
		},
	}
}

// bootstrapStorageClass creates the default StorageClass when no
// StorageClass of that name exists (one deleted by the user is created
// again at the next start, as an addon manager would).
func (s *Server) bootstrapStorageClass(ctx context.Context) error {
	res := s.byPath[storagev1.SchemeGroupVersion.WithResource("storageclasses")]
	reclaim := corev1.PersistentVolumeReclaimDelete
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	expand := false
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        DefaultStorageClassName,
			Annotations: map[string]string{admission.IsDefaultStorageClassAnnotation: "true"},
		},
		Provisioner:          localpath.Provisioner,
		ReclaimPolicy:        &reclaim,
		VolumeBindingMode:    &mode,
		AllowVolumeExpansion: &expand,
	}
	prepareForCreate(res, sc)
	_, err := s.createInStore(ctx, res, sc)
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create storageclass %q: %w", sc.Name, err)
	}
	if err == nil {
		s.log.Info("created storageclass", "storageclass", sc.Name, "provisioner", sc.Provisioner)
	}
	return nil
}

// ListStorageClasses implements admission.StorageClassLister: the
// DefaultStorageClass plugin reads the classes from storage (there are
// few).
func (l namespaceLister) ListStorageClasses(ctx context.Context) ([]*storagev1.StorageClass, error) {
	res := l.s.byPath[storagev1.SchemeGroupVersion.WithResource("storageclasses")]
	list, err := l.s.store.List(ctx, storage.Prefix(res.StorageResource, ""), storage.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]*storagev1.StorageClass, 0, len(list.Items))
	for _, kv := range list.Items {
		obj, err := decodeStored(res, kv.Value, kv.ModRevision)
		if err != nil {
			return nil, err
		}
		out = append(out, obj.(*storagev1.StorageClass))
	}
	return out, nil
}

var _ admission.StorageClassLister = namespaceLister{}
