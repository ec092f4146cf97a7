package apiserver

import (
	"encoding/json"
	"mime"
	"net/http"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/glassplane/glassplane/controlplane/apiserver/admission"
)

var patchTypes = []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.StrategicMergePatchType), string(types.ApplyYAMLPatchType)}

// patch serves PATCH on an object or a subresource view of it.
func (q *request) patch(v *view) error {
	q.enter(stageDecoding)
	mediaType, _, err := mime.ParseMediaType(q.r.Header.Get("Content-Type"))
	if err != nil {
		return unsupportedMediaType(q.r.Header.Get("Content-Type"), patchTypes...)
	}
	pt := types.PatchType(mediaType)
	switch pt {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType, types.ApplyYAMLPatchType:
	default:
		return unsupportedMediaType(mediaType, patchTypes...)
	}
	if pt == types.StrategicMergePatchType && q.res.Custom != nil {
		// Custom resources have no Go type to merge by, as upstream says.
		return unsupportedMediaType(mediaType, string(types.JSONPatchType), string(types.MergePatchType), string(types.ApplyYAMLPatchType))
	}
	body, err := q.readBody()
	if err != nil {
		return err
	}
	opts, err := q.writeOptions(pt)
	if err != nil {
		return err
	}
	if pt == types.ApplyYAMLPatchType {
		return q.apply(v, body, opts)
	}
	if !json.Valid(body) {
		return apierrors.NewBadRequest("error decoding patch: invalid JSON document")
	}
	var jp jsonpatch.Patch
	if pt == types.JSONPatchType {
		if jp, err = jsonpatch.DecodePatch(body); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
	}
	q.recordObject(body)
	kind := v.kind(q.res)
	result, err := q.update(q.info.Name, admission.Update, func(cur runtime.Object) (runtime.Object, error) {
		curView := v.get(q.res, cur)
		curJSON, err := json.Marshal(curView)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		patched, err := applyPatch(pt, jp, curJSON, body, kind)
		if err != nil {
			return nil, err
		}
		in, err := q.decodeWith(strictJSON, patched, kind)
		if err != nil {
			return nil, err
		}
		if err := q.checkNameAndNamespace(in); err != nil {
			return nil, err
		}
		if err := q.checkResourceVersion(in, curView); err != nil {
			return nil, err
		}
		return q.mergeTracked(v, cur, q.trackUpdate(in, opts))
	}, nil)
	if err != nil {
		return err
	}
	return q.answerWrite(v, result)
}

// applyPatch applies a patch document to the current JSON of an object.
func applyPatch(pt types.PatchType, jp jsonpatch.Patch, cur, patch []byte, kind schema.GroupVersionKind) ([]byte, error) {
	switch pt {
	case types.JSONPatchType:
		out, err := jp.Apply(cur)
		if err != nil {
			return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
		}
		return out, nil
	case types.MergePatchType:
		out, err := mergePatch(cur, patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		return out, nil
	default:
		typed, err := scheme.Scheme.New(kind)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		out, err := strategicpatch.StrategicMergePatch(cur, patch, typed)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		return out, nil
	}
}
