package apiserver

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"unsafe"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// encodeProtobuf encodes obj as kube-apiserver does: the "k8s\x00" magic,
// then a runtime.Unknown carrying the object's apiVersion and kind and its
// protobuf bytes. Objects without a protobuf form fail; callers answer them
// in JSON instead.
func encodeProtobuf(obj runtime.Object) ([]byte, error) {
	buf, start, err := encodeProtobufAfter(obj, 0)
	if err != nil {
		return nil, err
	}
	return buf[start:], nil
}

// protobufWatchFrame encodes one watch event for a protobuf watch stream:
// a metav1.WatchEvent whose object holds encodeProtobuf's bytes, behind its
// length as a 4-byte big-endian integer (client-go's LengthDelimitedFramer).
// The object is encoded once, into the frame's own buffer, and the
// WatchEvent's few header bytes are written in front of it: a frame is one
// allocation, not the object's bytes copied into an envelope and then into
// a WatchEvent.
func protobufWatchFrame(typ watch.EventType, obj runtime.Object) ([]byte, error) {
	// The header: the frame's length, the WatchEvent's type field (1), its
	// object field (2, a runtime.RawExtension) and the RawExtension's raw
	// field (1), each length a varint of at most ten bytes.
	headroom := 4 + 1 + binary.MaxVarintLen64 + len(typ) + 1 + binary.MaxVarintLen64 + 1 + binary.MaxVarintLen64
	buf, start, err := encodeProtobufAfter(obj, headroom)
	if err != nil {
		return nil, err
	}
	raw := len(buf) - start
	ext := 1 + varintSize(raw) + raw
	event := 1 + varintSize(len(typ)) + len(typ) + 1 + varintSize(ext) + ext
	header := 4 + event - raw
	if header > start {
		return nil, fmt.Errorf("a watch frame's header needs %d bytes, %d kept", header, start)
	}
	h := buf[start-header : start]
	binary.BigEndian.PutUint32(h, uint32(event))
	h = h[:4]
	h = append(h, 0x0a)
	h = binary.AppendUvarint(h, uint64(len(typ)))
	h = append(h, typ...)
	h = append(h, 0x12)
	h = binary.AppendUvarint(h, uint64(ext))
	h = append(h, 0x0a)
	binary.AppendUvarint(h, uint64(raw))
	return buf[start-header:], nil
}

// encodeProtobufAfter encodes obj as encodeProtobuf does into a buffer that
// keeps headroom bytes free in front of it, and returns the buffer and
// where the encoding starts in it (headroom, unless the serializer wrote
// from memory of its own: then the encoding was copied, with the same
// room).
func encodeProtobufAfter(obj runtime.Object, headroom int) ([]byte, int, error) {
	w := inPlaceWriter{headroom: headroom}
	if err := protobuf.EncodeWithAllocator(obj, &w, &w); err != nil {
		return nil, 0, err
	}
	if w.copied != nil {
		return w.copied, headroom, nil
	}
	return w.buf[:headroom+w.n], headroom, nil
}

// inPlaceWriter is the protobuf serializer's allocator and writer for
// encodeProtobufAfter: it allocates the buffer with room in front, and a
// write of that buffer's bytes (the serializer writes what it encoded
// into its allocation, once) keeps them where they are. Any other write
// is appended to a copy.
type inPlaceWriter struct {
	headroom int
	buf      []byte
	n        int    // bytes written in place, after the headroom
	copied   []byte // the writes, when they were not all in place
}

func (w *inPlaceWriter) Allocate(n uint64) []byte {
	w.buf = make([]byte, w.headroom+int(n))
	return w.buf[w.headroom:]
}

func (w *inPlaceWriter) Write(p []byte) (int, error) {
	if w.copied == nil && w.n == 0 && len(p) > 0 && len(w.buf) >= w.headroom+len(p) &&
		unsafe.SliceData(p) == unsafe.SliceData(w.buf[w.headroom:]) {
		w.n = len(p)
		return len(p), nil
	}
	if w.copied == nil {
		w.copied = make([]byte, w.headroom, w.headroom+w.n+len(p))
		w.copied = append(w.copied, w.buf[w.headroom:w.headroom+w.n]...)
	}
	w.copied = append(w.copied, p...)
	return len(p), nil
}

// varintSize is the length of v as a protobuf varint.
func varintSize(v int) int {
	return (bits.Len64(uint64(v)|1) + 6) / 7
}
