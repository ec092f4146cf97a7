package v1alpha1

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// TestAuditEventProtobufRoundTrip encodes an AuditEvent and a list of them
// with Kubernetes' protobuf serializer, as the API server answers the
// dashboard's audit watch, and decodes them back unchanged: metadata, the
// event's user, object reference, request object, annotations and times.
func TestAuditEventProtobufRoundTrip(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	s := protobuf.NewSerializer(scheme, scheme)
	now := metav1.NewMicroTime(time.Date(2026, 12, 5, 14, 0, 0, 123456000, time.UTC))
	ev := AuditEvent{
		TypeMeta:   metav1.TypeMeta{Kind: "AuditEvent", APIVersion: SchemeGroupVersion.String()},
		ObjectMeta: metav1.ObjectMeta{Name: "a1.ResponseComplete", ResourceVersion: "42", CreationTimestamp: metav1.NewTime(now.Time.Truncate(time.Second))},
		Event: auditv1.Event{
			TypeMeta: metav1.TypeMeta{Kind: "Event", APIVersion: auditv1.SchemeGroupVersion.String()},
			Level:    auditv1.LevelRequest, AuditID: types.UID("a1"), Stage: auditv1.StageResponseComplete,
			RequestURI: "/api/v1/namespaces/default/pods", Verb: "create",
			User:                     authnv1.UserInfo{Username: "alice", Groups: []string{"system:authenticated"}},
			SourceIPs:                []string{"127.0.0.1"},
			ObjectRef:                &auditv1.ObjectReference{Resource: "pods", Namespace: "default", Name: "p", APIVersion: "v1"},
			ResponseStatus:           &metav1.Status{Code: 201},
			RequestObject:            &runtime.Unknown{Raw: []byte(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p"}}`), ContentType: runtime.ContentTypeJSON},
			RequestReceivedTimestamp: now, StageTimestamp: now,
			Annotations: map[string]string{"authorization.k8s.io/decision": "allow", "admission.glassplane.io/steps": "[]"},
		},
	}
	var buf bytes.Buffer
	if err := s.Encode(&ev, &buf); err != nil {
		t.Fatalf("encode: %v", err)
	}
	got, _, err := s.Decode(buf.Bytes(), nil, &AuditEvent{})
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if diff := cmp.Diff(&ev, got); diff != "" {
		t.Errorf("the event after a round trip (-want +got):\n%s", diff)
	}

	// The API server's ring keeps the event encoded: written as an
	// EncodedAuditEvent it is the same bytes, and decodes to the same event.
	evBytes, err := ev.Event.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	enc := &EncodedAuditEvent{TypeMeta: ev.TypeMeta, Metadata: ev.ObjectMeta, Event: evBytes}
	var encBuf bytes.Buffer
	if err := s.Encode(enc, &encBuf); err != nil {
		t.Fatalf("encode the encoded event: %v", err)
	}
	if !bytes.Equal(encBuf.Bytes(), buf.Bytes()) {
		t.Errorf("the encoded event's protobuf differs from the event's:\n%q\n%q", encBuf.Bytes(), buf.Bytes())
	}
	decoded, err := enc.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&ev, decoded); diff != "" {
		t.Errorf("the encoded event decoded (-want +got):\n%s", diff)
	}
	if _, err := (&EncodedAuditEvent{Event: evBytes[:len(evBytes)/2]}).Decode(); err == nil {
		t.Error("a truncated encoded event decoded without error")
	}

	list := &AuditEventList{TypeMeta: metav1.TypeMeta{Kind: "AuditEventList", APIVersion: SchemeGroupVersion.String()}, ListMeta: metav1.ListMeta{ResourceVersion: "43"}, Items: []AuditEvent{ev, ev}}
	list.Items[1].Name, list.Items[1].Event.Verb = "a2.ResponseComplete", "delete"
	buf.Reset()
	if err := s.Encode(list, &buf); err != nil {
		t.Fatalf("encode the list: %v", err)
	}
	gotList, _, err := s.Decode(buf.Bytes(), nil, &AuditEventList{})
	if err != nil {
		t.Fatalf("decode the list: %v", err)
	}
	l := gotList.(*AuditEventList)
	if l.ResourceVersion != "43" || len(l.Items) != 2 || l.Items[1].Name != "a2.ResponseComplete" || l.Items[1].Event.Verb != "delete" ||
		string(l.Items[0].Event.RequestObject.Raw) != string(ev.Event.RequestObject.Raw) {
		t.Errorf("the list after a round trip: %+v", l)
	}

	// A truncated message is an error, not a panic or a half event.
	if _, _, err := s.Decode(buf.Bytes()[:len(buf.Bytes())-7], nil, &AuditEventList{}); err == nil {
		t.Error("a truncated list decoded without error")
	}
}
