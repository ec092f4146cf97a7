package controllerutil

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// NewControllerRef returns the ownerReference that makes owner the
// controller of a dependent: controller=true, blockOwnerDeletion=true.
func NewControllerRef(owner metav1.Object, gvk schema.GroupVersionKind) *metav1.OwnerReference {
	yes := true
	return &metav1.OwnerReference{
		APIVersion:         gvk.GroupVersion().String(),
		Kind:               gvk.Kind,
		Name:               owner.GetName(),
		UID:                owner.GetUID(),
		Controller:         &yes,
		BlockOwnerDeletion: &yes,
	}
}

// PatchFunc applies a strategic merge patch to the named object in
// namespace.
type PatchFunc func(ctx context.Context, namespace, name string, pt types.PatchType, patch []byte) error

// Claimer adopts orphans that match a controller's selector and releases
// the objects it controls that no longer match, as Kubernetes'
// BaseControllerRefManager does.
type Claimer struct {
	Controller     metav1.Object
	ControllerKind schema.GroupVersionKind
	Selector       labels.Selector
	Patch          PatchFunc
}

// Claim reports whether the controller owns obj after adopting or
// releasing it as needed. An object that vanished is not claimed and not
// an error.
func (c *Claimer) Claim(ctx context.Context, obj metav1.Object) (bool, error) {
	ref := metav1.GetControllerOfNoCopy(obj)
	matches := c.Selector.Matches(labels.Set(obj.GetLabels()))
	if ref != nil {
		if ref.UID != c.Controller.GetUID() {
			return false, nil
		}
		if matches {
			return true, nil
		}
		if c.Controller.GetDeletionTimestamp() != nil {
			return false, nil
		}
		err := c.release(ctx, obj)
		if apierrors.IsNotFound(err) {
			err = nil
		}
		return false, err
	}
	if c.Controller.GetDeletionTimestamp() != nil || !matches || obj.GetDeletionTimestamp() != nil || obj.GetNamespace() != c.Controller.GetNamespace() {
		return false, nil
	}
	if err := c.adopt(ctx, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

type ownerRefPatch struct {
	Metadata struct {
		OwnerReferences []any     `json:"ownerReferences"`
		UID             types.UID `json:"uid"`
	} `json:"metadata"`
}

func (c *Claimer) adopt(ctx context.Context, obj metav1.Object) error {
	var p ownerRefPatch
	p.Metadata.OwnerReferences = []any{NewControllerRef(c.Controller, c.ControllerKind)}
	p.Metadata.UID = obj.GetUID()
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := c.Patch(ctx, obj.GetNamespace(), obj.GetName(), types.StrategicMergePatchType, data); err != nil {
		return fmt.Errorf("failed to adopt %q: %w", obj.GetNamespace()+"/"+obj.GetName(), err)
	}
	return nil
}

func (c *Claimer) release(ctx context.Context, obj metav1.Object) error {
	var p ownerRefPatch
	p.Metadata.OwnerReferences = []any{map[string]any{"$patch": "delete", "uid": c.Controller.GetUID()}}
	p.Metadata.UID = obj.GetUID()
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := c.Patch(ctx, obj.GetNamespace(), obj.GetName(), types.StrategicMergePatchType, data); err != nil {
		return fmt.Errorf("failed to release %q: %w", obj.GetNamespace()+"/"+obj.GetName(), err)
	}
	return nil
}

// ClaimAll claims each of objs and returns the claimed ones; it keeps going
// past errors and returns them joined.
func ClaimAll[T metav1.Object](ctx context.Context, c *Claimer, objs []T) ([]T, error) {
	var claimed []T
	var errs []error
	for _, o := range objs {
		ok, err := c.Claim(ctx, o)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			claimed = append(claimed, o)
		}
	}
	return claimed, errors.Join(errs...)
}

// PodFromTemplate returns the pod a controller creates from template: its
// labels, annotations, finalizers and spec, generateName "<owner>-" and the
// owner as controller.
func PodFromTemplate(template *v1.PodTemplateSpec, owner metav1.Object, ref *metav1.OwnerReference) *v1.Pod {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: owner.GetName() + "-",
			Namespace:    owner.GetNamespace(),
			Labels:       copyMap(template.Labels),
			Annotations:  copyMap(template.Annotations),
			Finalizers:   append([]string(nil), template.Finalizers...),
		},
	}
	if ref != nil {
		pod.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	template.Spec.DeepCopyInto(&pod.Spec)
	return pod
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
