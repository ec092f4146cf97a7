package apiserver

import (
	"bytes"
	"encoding/binary"
	"io"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	pbserializer "k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	restclientwatch "k8s.io/client-go/rest/watch"
)

// TestProtobufWatchFrameIsTheWatchEvent checks the frame written in place
// byte for byte against a metav1.WatchEvent marshalled the plain way, for
// objects whose lengths take one, two and three varint bytes, and that
// client-go's protobuf watch decoder reads it back.
func TestProtobufWatchFrameIsTheWatchEvent(t *testing.T) {
	pod := func(annotation int) *corev1.Pod {
		p := &corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "42"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}
		if annotation > 0 {
			p.Annotations = map[string]string{"big": strings.Repeat("x", annotation)}
		}
		return p
	}
	status := &metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version: 1 (42)"}
	cases := []struct {
		typ watch.EventType
		obj runtime.Object
	}{
		{watch.Added, pod(0)},
		{watch.Modified, pod(200)},
		{watch.Deleted, pod(20000)},
		{watch.Bookmark, &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{ResourceVersion: "42"}}},
		{watch.Error, status},
	}
	for _, tc := range cases {
		got, err := protobufWatchFrame(tc.typ, tc.obj)
		if err != nil {
			t.Fatalf("%s: %v", tc.typ, err)
		}
		var want bytes.Buffer
		if err := pbserializer.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(tc.obj, &want); err != nil {
			t.Fatal(err)
		}
		ev := metav1.WatchEvent{Type: string(tc.typ), Object: runtime.RawExtension{Raw: want.Bytes()}}
		plain, err := ev.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		plain = append(binary.BigEndian.AppendUint32(nil, uint32(len(plain))), plain...)
		if !bytes.Equal(got, plain) {
			t.Fatalf("%s (%d bytes of object): frame differs from the WatchEvent\n got %x\nwant %x", tc.typ, want.Len(), head(got), head(plain))
		}

		// client-go reads it back.
		dec := restclientwatch.NewDecoder(streaming.NewDecoder(pbserializer.LengthDelimitedFramer.NewFrameReader(io.NopCloser(bytes.NewReader(got))), pbserializer.NewRawSerializer(scheme.Scheme, scheme.Scheme)), pbserializer.NewSerializer(scheme.Scheme, scheme.Scheme))
		typ, obj, err := dec.Decode()
		if err != nil {
			t.Fatalf("%s: client-go decoder: %v", tc.typ, err)
		}
		if typ != tc.typ {
			t.Errorf("decoded type %s, want %s", typ, tc.typ)
		}
		if p, ok := tc.obj.(*corev1.Pod); ok && obj.(*corev1.Pod).Annotations["big"] != p.Annotations["big"] {
			t.Errorf("%s: decoded pod lost its annotation", tc.typ)
		}
	}
}

// TestEncodeProtobufInPlace checks that encodeProtobuf's bytes are the
// serializer's and that the object is written once, into its own buffer.
func TestEncodeProtobufInPlace(t *testing.T) {
	obj := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"k": "v"}}
	var want bytes.Buffer
	if err := pbserializer.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(obj, &want); err != nil {
		t.Fatal(err)
	}
	got, err := encodeProtobuf(obj)
	if err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("encodeProtobuf = %x, %v; want %x", got, err, want.Bytes())
	}
	w := inPlaceWriter{headroom: 8}
	if err := pbserializer.NewSerializer(scheme.Scheme, scheme.Scheme).EncodeWithAllocator(obj, &w, &w); err != nil {
		t.Fatal(err)
	}
	if w.copied != nil || w.n != want.Len() {
		t.Errorf("the serializer's write was copied (%d bytes in place of %d)", w.n, want.Len())
	}
	frame := testing.AllocsPerRun(100, func() {
		if _, err := protobufWatchFrame(watch.Modified, obj); err != nil {
			t.Fatal(err)
		}
	})
	plain := testing.AllocsPerRun(100, func() {
		var buf bytes.Buffer
		if err := pbserializer.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(obj, &buf); err != nil {
			t.Fatal(err)
		}
		ev := metav1.WatchEvent{Type: string(watch.Modified), Object: runtime.RawExtension{Raw: buf.Bytes()}}
		if _, err := ev.Marshal(); err != nil {
			t.Fatal(err)
		}
	})
	// The plain way allocates the object's bytes three times (the
	// serializer's buffer, the writer's copy, the WatchEvent's).
	t.Logf("allocations: frame %.0f, plain %.0f", frame, plain)
	if frame > plain-2 {
		t.Errorf("a watch frame took %.0f allocations, the plain way %.0f", frame, plain)
	}
}

func head(b []byte) []byte {
	if len(b) > 48 {
		return b[:48]
	}
	return b
}
