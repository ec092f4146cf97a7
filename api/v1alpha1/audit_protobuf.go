package v1alpha1

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// AuditEvent and AuditEventList have Kubernetes' protobuf form, as
// go-to-protobuf would generate it from
//
//	message AuditEvent {
//	  optional k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta metadata = 1;
//	  optional k8s.io.apiserver.pkg.apis.audit.v1.Event event = 2;
//	}
//	message AuditEventList {
//	  optional k8s.io.apimachinery.pkg.apis.meta.v1.ListMeta metadata = 1;
//	  repeated AuditEvent items = 2;
//	}
//
// so the dashboard's audit watch, which carries every request the server
// sees, costs a fraction of its JSON to encode and decode. The fields'
// own messages (ObjectMeta, ListMeta, audit.k8s.io/v1 Event) marshal
// themselves; apiVersion and kind travel in the runtime.Unknown around
// the object, as for every Kubernetes protobuf object.

// Marshal implements the protobuf serializer's marshaller.
func (e *AuditEvent) Marshal() ([]byte, error) {
	return e.appendTo(nil)
}

func (e *AuditEvent) appendTo(b []byte) ([]byte, error) {
	meta, err := e.ObjectMeta.Marshal()
	if err != nil {
		return nil, fmt.Errorf("failed to marshal an AuditEvent's metadata: %w", err)
	}
	ev, err := e.Event.Marshal()
	if err != nil {
		return nil, fmt.Errorf("failed to marshal an AuditEvent's event: %w", err)
	}
	return appendAuditEvent(b, meta, ev), nil
}

// appendAuditEvent appends to b an AuditEvent of encoded metadata and event.
func appendAuditEvent(b, meta, event []byte) []byte {
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendBytes(b, meta)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	return protowire.AppendBytes(b, event)
}

// EncodedAuditEvent is an AuditEvent whose event is already protobuf
// encoded, as the API server's audit ring keeps it: the protobuf
// serializer writes it as the AuditEvent it is without decoding the event.
// Its JSON form is not an AuditEvent's: decode it (Decode) for JSON.
//
// Its fields are named, not embedded: TypeMeta's and ObjectMeta's own
// protobuf methods would be promoted and write only themselves.
type EncodedAuditEvent struct {
	TypeMeta metav1.TypeMeta
	Metadata metav1.ObjectMeta
	// Event is the audit.k8s.io/v1 Event's protobuf encoding.
	Event []byte
}

// Marshal implements the protobuf serializer's marshaller.
func (e *EncodedAuditEvent) Marshal() ([]byte, error) {
	meta, err := e.Metadata.Marshal()
	if err != nil {
		return nil, fmt.Errorf("failed to marshal an AuditEvent's metadata: %w", err)
	}
	return appendAuditEvent(make([]byte, 0, len(meta)+len(e.Event)+16), meta, e.Event), nil
}

// Decode returns the AuditEvent e encodes.
func (e *EncodedAuditEvent) Decode() (*AuditEvent, error) {
	out := &AuditEvent{TypeMeta: e.TypeMeta}
	e.Metadata.DeepCopyInto(&out.ObjectMeta)
	if err := out.Event.Unmarshal(e.Event); err != nil {
		return nil, fmt.Errorf("failed to decode audit event %s: %w", e.Metadata.Name, err)
	}
	out.Event.TypeMeta = metav1.TypeMeta{Kind: "Event", APIVersion: auditv1.SchemeGroupVersion.String()}
	return out, nil
}

// GetObjectKind implements runtime.Object.
func (e *EncodedAuditEvent) GetObjectKind() schema.ObjectKind { return &e.TypeMeta }

// DeepCopyObject implements runtime.Object; the copy shares the encoded
// event, which nobody changes.
func (e *EncodedAuditEvent) DeepCopyObject() runtime.Object {
	out := &EncodedAuditEvent{TypeMeta: e.TypeMeta, Event: e.Event}
	e.Metadata.DeepCopyInto(&out.Metadata)
	return out
}

// Unmarshal implements the protobuf serializer's unmarshaler: it decodes
// data into e, which Reset has cleared. The event's apiVersion and kind,
// which its protobuf form does not carry, are set as its JSON form has
// them.
func (e *AuditEvent) Unmarshal(data []byte) error {
	err := eachField(data, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			return e.ObjectMeta.Unmarshal(v)
		case 2:
			return e.Event.Unmarshal(v)
		}
		return nil
	})
	e.Event.TypeMeta = metav1.TypeMeta{Kind: "Event", APIVersion: auditv1.SchemeGroupVersion.String()}
	return err
}

// Reset clears e, as the protobuf serializer asks before Unmarshal.
func (e *AuditEvent) Reset() { *e = AuditEvent{} }

// Marshal implements the protobuf serializer's marshaller.
func (l *AuditEventList) Marshal() ([]byte, error) {
	meta, err := l.ListMeta.Marshal()
	if err != nil {
		return nil, fmt.Errorf("failed to marshal an AuditEventList's metadata: %w", err)
	}
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	b = protowire.AppendBytes(b, meta)
	for i := range l.Items {
		item, err := l.Items[i].appendTo(nil)
		if err != nil {
			return nil, err
		}
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendBytes(b, item)
	}
	return b, nil
}

// Unmarshal implements the protobuf serializer's unmarshaler.
func (l *AuditEventList) Unmarshal(data []byte) error {
	return eachField(data, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			return l.ListMeta.Unmarshal(v)
		case 2:
			l.Items = append(l.Items, AuditEvent{})
			return l.Items[len(l.Items)-1].Unmarshal(v)
		}
		return nil
	})
}

// Reset clears l, as the protobuf serializer asks before Unmarshal.
func (l *AuditEventList) Reset() { *l = AuditEventList{} }

// eachField calls f with each length-delimited field of a message; fields
// of other wire types are skipped, as a newer server's would be.
func eachField(data []byte, f func(protowire.Number, []byte) error) error {
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return fmt.Errorf("bad protobuf tag: %w", protowire.ParseError(n))
		}
		data = data[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, data)
			if n < 0 {
				return fmt.Errorf("bad protobuf field %d: %w", num, protowire.ParseError(n))
			}
			data = data[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(data)
		if n < 0 {
			return fmt.Errorf("bad protobuf field %d: %w", num, protowire.ParseError(n))
		}
		if err := f(num, v); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}
