package apiserver

import (
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/yaml"

	"github.com/glassplane/glassplane/controlplane/apiserver/admission"
)

// apply serves a server-side apply: PATCH with application/apply-patch+yaml,
// as kube-apiserver's applyPatcher. The field manager merges the applied
// configuration into the live object (or an empty one, creating the object
// when it does not exist) and records what opts.manager now owns; a field
// another manager owns is a 409 conflict unless force is set.
func (q *request) apply(v *view, body []byte, opts *writeOptions) error {
	patchJSON, err := yaml.YAMLToJSON(body)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("error encoding patch: %v", err))
	}
	q.recordObject(patchJSON)
	validation, err := q.fieldValidation()
	if err != nil {
		return err
	}
	patch := &unstructured.Unstructured{Object: map[string]any{}}
	if err := yaml.Unmarshal(body, &patch.Object); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
	}
	if patch.Object == nil {
		patch.Object = map[string]any{}
	}
	// Duplicate fields are refused (Strict) or warned of (Warn) once the
	// apply itself succeeded, as kube-apiserver orders the two.
	var strictErr error
	if validation != fieldValidationIgnore {
		strictErr = yaml.UnmarshalStrict(body, &map[string]any{})
	}
	applyTo := func(fm *managedfields.FieldManager, live runtime.Object) (runtime.Object, error) {
		obj, err := fm.Apply(live, patch.DeepCopy(), opts.manager, opts.force)
		if err != nil {
			return nil, applyError(err)
		}
		if strictErr != nil && validation == fieldValidationStrict {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("error strict decoding patch: %v", strictErr))
		}
		if err := q.checkNameAndNamespace(obj); err != nil {
			return nil, err
		}
		return obj, nil
	}
	var create func() (runtime.Object, error)
	if v.main {
		create = func() (runtime.Object, error) {
			fm, err := fieldManager(q.res, "", q.res.GVK)
			if err != nil {
				return nil, err
			}
			empty, err := newObject(q.res, q.res.GVK)
			if err != nil {
				return nil, err
			}
			obj, err := applyTo(fm, empty)
			if err != nil {
				return nil, err
			}
			if m, _ := meta.Accessor(obj); m.GetUID() != "" {
				return nil, apierrors.NewConflict(q.res.GroupResource(), q.info.Name, fmt.Errorf("uid mismatch: the provided object specified uid %s, and no existing object was found", m.GetUID()))
			}
			return obj, nil
		}
	}
	result, err := q.update(q.info.Name, admission.Update, func(cur runtime.Object) (runtime.Object, error) {
		return q.mergeTracked(v, cur, func(fm *managedfields.FieldManager, live runtime.Object) (runtime.Object, error) {
			obj, err := applyTo(fm, live)
			if err != nil {
				return nil, err
			}
			if err := q.checkResourceVersion(obj, live); err != nil {
				return nil, err
			}
			return obj, nil
		})
	}, create)
	if err != nil {
		return err
	}
	if strictErr != nil && validation == fieldValidationWarn {
		q.w.Header().Add("Warning", fmt.Sprintf("299 - %s", strconv.Quote(strictErr.Error())))
	}
	return q.answerWrite(v, result)
}
