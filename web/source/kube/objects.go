package kube

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/glassplane/glassplane/web/source"
)

// keyValue is obj (of resource res) under its key, as JSON, with its
// resourceVersion as its ModRevision. The API does not tell the revision
// that created an object: CreateRevision is 0.
func keyValue(res *mapped, obj *unstructured.Unstructured) (*source.KeyValue, error) {
	if obj.GetKind() == "" {
		obj.SetAPIVersion(res.GVR.GroupVersion().String())
		obj.SetKind(res.Kind)
	}
	rev, err := parseRevision(obj.GetResourceVersion())
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", res.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	value, err := obj.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("failed to encode %s %s/%s: %w", res.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return &source.KeyValue{Key: res.key(obj.GetNamespace(), obj.GetName()), Value: value, ModRevision: rev}, nil
}
