package admission

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// DefaultStorageClassPluginName is the name DefaultStorageClass reports in
// Steps, as kube-apiserver's plugin.
const DefaultStorageClassPluginName = "DefaultStorageClass"

// IsDefaultStorageClassAnnotation marks the default StorageClass; the beta
// spelling is still honoured, as upstream.
const (
	IsDefaultStorageClassAnnotation     = "storageclass.kubernetes.io/is-default-class"
	betaIsDefaultStorageClassAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
)

// StorageClassLister lists the StorageClasses for DefaultStorageClass.
type StorageClassLister interface {
	ListStorageClasses(ctx context.Context) ([]*storagev1.StorageClass, error)
}

// DefaultStorageClass gives a new PersistentVolumeClaim without
// spec.storageClassName the cluster's default StorageClass, as
// kube-apiserver's plugin of that name: the class annotated
// storageclass.kubernetes.io/is-default-class "true", the newest one when
// several are. A claim that names a class, even "", keeps it.
type DefaultStorageClass struct {
	classes StorageClassLister
}

var (
	_ MutationInterface = &DefaultStorageClass{}
	_ Handler           = &DefaultStorageClass{}
)

// NewDefaultStorageClass returns the plugin reading classes from classes.
func NewDefaultStorageClass(classes StorageClassLister) *DefaultStorageClass {
	return &DefaultStorageClass{classes: classes}
}

// Name implements Plugin.
func (*DefaultStorageClass) Name() string { return DefaultStorageClassPluginName }

// Handles implements Handler: creates of claims without a class.
func (*DefaultStorageClass) Handles(a *Attributes) bool {
	pvc, ok := a.Object.(*corev1.PersistentVolumeClaim)
	return ok && a.Operation == Create && a.Subresource == "" && pvc.Spec.StorageClassName == nil
}

// Admit implements MutationInterface.
func (d *DefaultStorageClass) Admit(ctx context.Context, a *Attributes) error {
	if !d.Handles(a) {
		return nil
	}
	pvc := a.Object.(*corev1.PersistentVolumeClaim)
	classes, err := d.classes.ListStorageClasses(ctx)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("failed to list storage classes: %w", err))
	}
	if def := DefaultClass(classes); def != nil {
		name := def.Name
		pvc.Spec.StorageClassName = &name
	}
	return nil
}

// DefaultClass returns the default StorageClass among classes, or nil: the
// newest of those marked default, by name when created at the same time,
// as upstream's GetDefaultClass.
func DefaultClass(classes []*storagev1.StorageClass) *storagev1.StorageClass {
	var def *storagev1.StorageClass
	for _, c := range classes {
		if !IsDefaultStorageClass(c) {
			continue
		}
		if def == nil || c.CreationTimestamp.After(def.CreationTimestamp.Time) ||
			c.CreationTimestamp.Equal(&def.CreationTimestamp) && c.Name < def.Name {
			def = c
		}
	}
	return def
}

// IsDefaultStorageClass reports whether c is annotated as a default class.
func IsDefaultStorageClass(c *storagev1.StorageClass) bool {
	return c.Annotations[IsDefaultStorageClassAnnotation] == "true" ||
		c.Annotations[betaIsDefaultStorageClassAnnotation] == "true"
}
