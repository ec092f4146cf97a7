package framework

import (
	"bytes"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// RawArgs are a plugin's arguments as JSON, as they appear under
// pluginConfig[].args of a KubeSchedulerConfiguration. Each plugin decodes
// them into its own struct with DecodeArgs.
type RawArgs struct {
	metav1.TypeMeta
	Raw []byte
}

var _ runtime.Object = &RawArgs{}

// DeepCopyObject implements runtime.Object.
func (r *RawArgs) DeepCopyObject() runtime.Object {
	return &RawArgs{TypeMeta: r.TypeMeta, Raw: append([]byte(nil), r.Raw...)}
}

// DecodeArgs decodes args into into, refusing unknown fields. Nil args (or
// a nil *RawArgs) leave into untouched, so it keeps its defaults.
func DecodeArgs(args runtime.Object, into any) error {
	if args == nil {
		return nil
	}
	raw, ok := args.(*RawArgs)
	if !ok {
		return fmt.Errorf("failed to decode plugin args: want *framework.RawArgs, got %T", args)
	}
	if raw == nil || len(raw.Raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw.Raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("failed to decode plugin args: %w", err)
	}
	return nil
}
