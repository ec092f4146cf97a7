package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	serializerjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	serializerprotobuf "k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
	sigsjson "sigs.k8s.io/json"
)

var (
	strictJSON = serializerjson.NewSerializerWithOptions(serializerjson.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, serializerjson.SerializerOptions{Strict: true})
	strictYAML = serializerjson.NewSerializerWithOptions(serializerjson.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, serializerjson.SerializerOptions{Yaml: true, Strict: true})
	protobuf   = serializerprotobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
)

// Media types of request bodies.
const (
	mediaJSON     = "application/json"
	mediaYAML     = "application/yaml"
	mediaProtobuf = "application/vnd.kubernetes.protobuf"
)

var acceptedBodyTypes = []string{mediaJSON, mediaYAML, mediaProtobuf}

// Field validation directives (fieldValidation query parameter).
const (
	fieldValidationStrict = "Strict"
	fieldValidationWarn   = "Warn"
	fieldValidationIgnore = "Ignore"
)

// readBody reads the request body up to the configured limit.
func (q *request) readBody() ([]byte, error) {
	limit := q.s.cfg.MaxRequestBodyBytes
	if q.r.ContentLength > limit {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", limit))
	}
	b, err := io.ReadAll(io.LimitReader(q.r.Body, limit+1))
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("failed to read the request body: %v", err))
	}
	if int64(len(b)) > limit {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", limit))
	}
	return b, nil
}

// unsupportedMediaType is kube-apiserver's 415 answer.
func unsupportedMediaType(contentType string, accepted ...string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s", strings.Join(accepted, ", ")),
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeUnexpectedServerResponse, Message: contentType}}},
	}}
}

// fieldValidation returns the request's field validation directive.
func (q *request) fieldValidation() (string, error) {
	v := q.r.URL.Query().Get("fieldValidation")
	switch v {
	case "":
		return fieldValidationWarn, nil
	case fieldValidationStrict, fieldValidationWarn, fieldValidationIgnore:
		return v, nil
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("fieldValidation parameter unsupported: %s", v))
}

// decodeBody decodes a request body of the given kind, honouring
// fieldValidation for unknown and duplicate fields. It returns the object
// and its JSON form.
func (q *request) decodeBody(body []byte, gvk schema.GroupVersionKind) (runtime.Object, []byte, error) {
	ser, err := q.bodyDecoder()
	if err != nil {
		return nil, nil, err
	}
	obj, err := q.decodeWith(ser, body, gvk)
	if err != nil {
		return nil, nil, err
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	return obj, raw, nil
}

// bodyDecoder picks the decoder for the request's Content-Type: JSON and
// YAML (strict, honouring fieldValidation) or protobuf, which client-go's
// generated clients send for built-in kinds.
func (q *request) bodyDecoder() (runtime.Decoder, error) {
	ct := q.r.Header.Get("Content-Type")
	if ct == "" {
		return strictJSON, nil
	}
	mediaType, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return nil, unsupportedMediaType(ct, acceptedBodyTypes...)
	}
	switch mediaType {
	case mediaJSON:
		return strictJSON, nil
	case mediaYAML:
		return strictYAML, nil
	case mediaProtobuf:
		return protobuf, nil
	}
	return nil, unsupportedMediaType(mediaType, acceptedBodyTypes...)
}

func (q *request) decodeWith(ser runtime.Decoder, body []byte, gvk schema.GroupVersionKind) (runtime.Object, error) {
	if q.res != nil && q.res.Custom != nil && gvk == q.res.GVK {
		return q.decodeCustom(ser, body, gvk)
	}
	validation, err := q.fieldValidation()
	if err != nil {
		return nil, err
	}
	into, err := scheme.Scheme.New(gvk)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	obj, actual, err := ser.Decode(body, &gvk, into)
	dataKind := gvk
	if actual != nil && actual.Kind != "" {
		dataKind = *actual
	}
	if err != nil && runtime.IsStrictDecodingError(err) && obj != nil {
		switch validation {
		case fieldValidationStrict:
			return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", dataKind.Kind, dataKind.Version, gvk.Kind, err))
		case fieldValidationWarn:
			for _, msg := range strictErrors(err) {
				q.w.Header().Add("Warning", fmt.Sprintf("299 - %s", strconv.Quote(msg)))
			}
		}
		err = nil
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", dataKind.Kind, dataKind.Version, gvk.Kind, err))
	}
	if actual.GroupVersion() != gvk.GroupVersion() {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", actual.GroupVersion(), gvk.GroupVersion()))
	}
	if actual.Kind != gvk.Kind {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: the kind in the data does not match the expected kind", actual.Kind, actual.Version, gvk.Kind))
	}
	if secret, ok := obj.(*corev1.Secret); ok {
		mergeStringData(secret)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, nil
}

func strictErrors(err error) []string {
	if se, ok := err.(interface{ Errors() []error }); ok {
		var out []string
		for _, e := range se.Errors() {
			out = append(out, e.Error())
		}
		return out
	}
	return []string{err.Error()}
}

// encodeForStorage returns obj's JSON as stored in etcd: with apiVersion and
// kind, without resourceVersion.
func encodeForStorage(res *resource, obj runtime.Object) ([]byte, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	rv := m.GetResourceVersion()
	m.SetResourceVersion("")
	defer m.SetResourceVersion(rv)
	if res.Stored != nil {
		obj.GetObjectKind().SetGroupVersionKind(res.GVK)
		stored, err := res.Stored.ToStored(obj)
		if err != nil {
			return nil, err
		}
		stored.GetObjectKind().SetGroupVersionKind(res.Stored.GVK)
		return json.Marshal(stored)
	}
	obj.GetObjectKind().SetGroupVersionKind(res.storageGVK())
	defer obj.GetObjectKind().SetGroupVersionKind(res.GVK)
	return json.Marshal(obj)
}

// decodeStored decodes a stored value and sets its resourceVersion.
func decodeStored(res *resource, value []byte, rev int64) (runtime.Object, error) {
	var obj runtime.Object
	if res.Stored != nil {
		var stored runtime.Object
		if res.Custom != nil {
			// As stored: its apiVersion is the version it was written at.
			stored = &unstructured.Unstructured{}
		} else {
			var err error
			if stored, err = scheme.Scheme.New(res.Stored.GVK); err != nil {
				return nil, err
			}
		}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(value, stored); err != nil {
			return nil, fmt.Errorf("failed to decode stored %s: %w", res.Resource, err)
		}
		var err error
		if obj, err = res.Stored.FromStored(stored); err != nil {
			return nil, err
		}
	} else {
		obj = res.New()
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(value, obj); err != nil {
			return nil, fmt.Errorf("failed to decode stored %s: %w", res.Resource, err)
		}
	}
	obj.GetObjectKind().SetGroupVersionKind(res.GVK)
	if res.Custom != nil {
		res.Custom.applyDefaults(obj)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	m.SetResourceVersion(strconv.FormatInt(rev, 10))
	return obj, nil
}

// acceptsJSON reports whether the Accept header allows a JSON answer.
func acceptsJSON(accept string) bool {
	if accept == "" {
		return true
	}
	for _, part := range strings.Split(accept, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case "application/json", "*/*", "application/*", "application/yaml":
			return true
		}
	}
	return false
}

// Server-side conversions a client may ask for with Accept's "as" parameter.
const (
	asTable                     = "Table"
	asPartialObjectMetadata     = "PartialObjectMetadata"
	asPartialObjectMetadataList = "PartialObjectMetadataList"
)

// wantsAs returns the meta.k8s.io conversion the Accept header asks for
// (Table, PartialObjectMetadata, PartialObjectMetadataList), or "".
func wantsAs(accept string) string {
	as, _ := negotiate(accept)
	return as
}

// wantsProtobuf reports whether the answer should be Kubernetes' protobuf.
func wantsProtobuf(accept string) bool {
	_, proto := negotiate(accept)
	return proto
}

// negotiate reads the Accept header in order and returns the conversion and
// encoding of the first media type the server can answer: JSON (optionally
// with "as"), or application/vnd.kubernetes.protobuf, plain or as
// PartialObjectMetadata(List), as client-go's metadata client asks. A Table
// has no protobuf form, so a protobuf Table entry is passed over for the
// client's next choice.
func negotiate(accept string) (as string, proto bool) {
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case mediaProtobuf:
			switch params["as"] {
			case "":
				return "", true
			case asPartialObjectMetadata, asPartialObjectMetadataList:
				if params["g"] == "meta.k8s.io" && params["v"] == "v1" {
					return params["as"], true
				}
			}
		case mediaJSON:
			if params["g"] != "meta.k8s.io" || (params["v"] != "v1" && params["v"] != "v1beta1") {
				return "", false
			}
			switch params["as"] {
			case asTable, asPartialObjectMetadata, asPartialObjectMetadataList:
				return params["as"], false
			}
			return "", false
		case mediaYAML, "*/*", "application/*":
			return "", false
		}
	}
	return "", false
}

// convertAs converts obj as the client asked (see wantsAs); obj unchanged
// when as is "".
func (q *request) convertAs(as string, obj runtime.Object) (runtime.Object, error) {
	if _, isStatus := obj.(*metav1.Status); isStatus || as == "" {
		return obj, nil
	}
	switch as {
	case asTable:
		return q.toTable(obj)
	}
	if meta.IsListType(obj) {
		items, err := meta.ExtractList(obj)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		list := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{Kind: asPartialObjectMetadataList, APIVersion: "meta.k8s.io/v1"}}
		if lm, err := meta.ListAccessor(obj); err == nil {
			list.ResourceVersion, list.Continue, list.RemainingItemCount = lm.GetResourceVersion(), lm.GetContinue(), lm.GetRemainingItemCount()
		}
		for _, it := range items {
			m, err := meta.Accessor(it)
			if err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			list.Items = append(list.Items, *meta.AsPartialObjectMetadata(m))
		}
		return list, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	pom := meta.AsPartialObjectMetadata(m)
	pom.TypeMeta = metav1.TypeMeta{Kind: asPartialObjectMetadata, APIVersion: "meta.k8s.io/v1"}
	return pom, nil
}

// wantsYAML reports whether the client prefers YAML.
func wantsYAML(accept string) bool {
	first := strings.TrimSpace(strings.Split(accept, ",")[0])
	mt, _, _ := mime.ParseMediaType(first)
	return mt == "application/yaml"
}

// respond answers obj, converting to a Table when the client asked for one.
func (q *request) respond(code int, obj runtime.Object) {
	accept := q.r.Header.Get("Accept")
	as := wantsAs(accept)
	if !acceptsJSON(accept) && as == "" {
		q.writeJSON(http.StatusNotAcceptable, toStatus(notAcceptable()))
		return
	}
	if as != "" && q.res != nil && q.info.Subresource == "" {
		converted, err := q.convertAs(as, obj)
		if err != nil {
			q.fail("", err)
			return
		}
		if wantsProtobuf(accept) {
			if b, err := encodeProtobuf(converted); err == nil {
				q.writeEncoded(code, converted, b, mediaProtobuf)
				return
			}
		}
		q.writeJSON(code, converted)
		return
	}
	if q.res != nil && wantsProtobuf(accept) {
		if _, isStatus := obj.(*metav1.Status); !isStatus {
			if b, err := encodeProtobuf(obj); err == nil {
				q.writeEncoded(code, obj, b, mediaProtobuf)
				return
			}
		}
	}
	if wantsYAML(accept) {
		b, err := yamlEncode(obj)
		if err == nil {
			q.ev.ResponseStatus = successStatus(code)
			q.w.Header().Set("Content-Type", "application/yaml")
			q.w.WriteHeader(code)
			q.w.Write(b)
			return
		}
	}
	q.writeJSON(code, obj)
}

func successStatus(code int) *metav1.Status {
	return &metav1.Status{Status: metav1.StatusSuccess, Code: int32(code)}
}

func notAcceptable() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable,
		Message: "only the following media types are accepted: application/json, application/yaml",
	}}
}

func yamlEncode(obj runtime.Object) ([]byte, error) {
	var buf bytes.Buffer
	ser := serializerjson.NewSerializerWithOptions(serializerjson.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, serializerjson.SerializerOptions{Yaml: true})
	if err := ser.Encode(obj, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// mergeStringData folds a Secret's write-only stringData into data, as
// Kubernetes' conversion does: stringData wins over data for the same key
// and is never stored.
func mergeStringData(s *corev1.Secret) {
	if len(s.StringData) == 0 {
		s.StringData = nil
		return
	}
	if s.Data == nil {
		s.Data = make(map[string][]byte, len(s.StringData))
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}
