package apiserver

import (
	"bytes"
	"encoding/binary"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// encodeProtobuf encodes obj as kube-apiserver does: the "k8s\x00" magic,
// then a runtime.Unknown carrying the object's apiVersion and kind and its
// protobuf bytes. Objects without a protobuf form fail; callers answer them
// in JSON instead.
func encodeProtobuf(obj runtime.Object) ([]byte, error) {
	var buf bytes.Buffer
	if err := protobuf.Encode(obj, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// protobufWatchFrame encodes one watch event for a protobuf watch stream:
// a metav1.WatchEvent whose object holds encodeProtobuf's bytes, behind its
// length as a 4-byte big-endian integer (client-go's LengthDelimitedFramer).
func protobufWatchFrame(typ watch.EventType, obj runtime.Object) ([]byte, error) {
	raw, err := encodeProtobuf(obj)
	if err != nil {
		return nil, err
	}
	ev := metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: raw}}
	n := ev.Size()
	b := make([]byte, 4+n)
	binary.BigEndian.PutUint32(b, uint32(n))
	if _, err := ev.MarshalToSizedBuffer(b[4:]); err != nil {
		return nil, err
	}
	return b, nil
}
