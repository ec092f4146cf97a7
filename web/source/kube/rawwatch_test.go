package kube

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

var (
	rawPods       = &mapped{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod", Namespaced: true, Storage: "pods"}
	rawConfigMaps = &mapped{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true, Storage: "configmaps"}
	rawWidgets    = &mapped{GVR: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, Kind: "Widget", Storage: "example.com/widgets"}
)

func TestResourcePath(t *testing.T) {
	for _, tc := range []struct {
		t    target
		want string
	}{
		{target{res: rawPods}, "/api/v1/pods"},
		{target{res: rawPods, namespace: "kube-system"}, "/api/v1/namespaces/kube-system/pods"},
		{target{res: rawWidgets}, "/apis/example.com/v1/widgets"},
	} {
		if got := resourcePath(tc.t); got != tc.want {
			t.Errorf("resourcePath(%s in %q) = %s, want %s", tc.t.res.GVR, tc.t.namespace, got, tc.want)
		}
	}
}

// TestRawDecoder reads a watch stream as a server writes one: each event
// is placed by its key and revision and keeps the object's bytes.
func TestRawDecoder(t *testing.T) {
	pod := `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web","namespace":"default","resourceVersion":"12","managedFields":[{"manager":"kubectl"}]},"spec":{"nodeName":"n1"}}`
	stream := `{"type":"ADDED","object":` + pod + "}\n" +
		`{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"15"}}}` + "\n" +
		`{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web","namespace":"default","resourceVersion":"16"}}}` + "\n" +
		`{"type":"DELETED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web","namespace":"default","resourceVersion":"17"}}}` + "\n" +
		`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 5 (17)","reason":"Expired","code":410}}` + "\n"
	d := newRawDecoder(strings.NewReader(stream), rawPods)
	var got []string
	for {
		typ, c, err := d.next()
		if err != nil {
			if !compacted(err) {
				t.Fatalf("the stream ended with %v, want the 410 it sent", err)
			}
			break
		}
		got = append(got, fmt.Sprintf("%s %s %s created=%v at %d", typ, c.Type, c.Key, c.Created, c.modRevision))
		if typ == watch.Added && string(c.Value) != pod {
			t.Errorf("value %s, want the bytes sent: %s", c.Value, pod)
		}
	}
	want := []string{
		"ADDED PUT /registry/pods/default/web created=true at 12",
		"BOOKMARK   created=false at 15",
		"MODIFIED PUT /registry/pods/default/web created=false at 16",
		"DELETED DELETE /registry/pods/default/web created=false at 17",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestRawDecoderBadStreams: what a stream may end with or carry that is
// not an object.
func TestRawDecoderBadStreams(t *testing.T) {
	for _, tc := range []struct {
		name, stream string
		wantErr      string // "" is io.EOF
	}{
		{"empty", "", ""},
		{"cut inside a frame", `{"type":"ADDED","object":{"kind":"Pod","apiVe`, ""},
		{"unknown type", `{"type":"RENAMED","object":{}}`, `sent an event of type "RENAMED"`},
		{"object not an object", `{"type":"ADDED","object":[1,2]}`, "not one"},
		{"revision not a number", `{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"x1"}}}`, `resourceVersion "x1" is not an etcd revision`},
		{"error not a status", `{"type":"ERROR","object":"gone"}`, "not a Status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := newRawDecoder(strings.NewReader(tc.stream), rawPods).next()
			switch {
			case tc.wantErr == "" && err != io.EOF:
				t.Errorf("err = %v, want io.EOF", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("err = %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}

// TestRawDecoderAddsKind: an object sent without kind and apiVersion gets
// them, as a list's items do.
func TestRawDecoderAddsKind(t *testing.T) {
	stream := `{"type":"ADDED","object":{"metadata":{"name":"c","namespace":"ns","resourceVersion":"3"},"data":{"v":"1"}}}`
	_, c, err := newRawDecoder(strings.NewReader(stream), rawConfigMaps).next()
	if err != nil {
		t.Fatal(err)
	}
	var cm v1.ConfigMap
	if err := json.Unmarshal(c.Value, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Kind != "ConfigMap" || cm.APIVersion != "v1" || cm.Data["v"] != "1" || c.Key != "/registry/configmaps/ns/c" {
		t.Errorf("got %s at %s", c.Value, c.Key)
	}
}

// BenchmarkWatchDecode compares the store's decoding of a watch of 1,000
// pods (each as large as a scheduled pod with managedFields) with what it
// did before: client-go's decoding into unstructured, then encoding the
// object again.
func BenchmarkWatchDecode(b *testing.B) {
	var buf bytes.Buffer
	for i := range 1000 {
		p := watchBenchPod(i)
		obj, _ := json.Marshal(p)
		fmt.Fprintf(&buf, `{"type":"MODIFIED","object":%s}`+"\n", obj)
	}
	stream := buf.Bytes()
	b.Run("raw", func(b *testing.B) {
		b.SetBytes(int64(len(stream)))
		for b.Loop() {
			d := newRawDecoder(bytes.NewReader(stream), rawPods)
			for {
				if _, _, err := d.next(); err != nil {
					if err != io.EOF {
						b.Fatal(err)
					}
					break
				}
			}
		}
	})
	b.Run("unstructured", func(b *testing.B) {
		b.SetBytes(int64(len(stream)))
		for b.Loop() {
			dec := json.NewDecoder(bytes.NewReader(stream))
			for {
				var f rawFrame
				if err := dec.Decode(&f); err != nil {
					if err != io.EOF {
						b.Fatal(err)
					}
					break
				}
				obj := &unstructured.Unstructured{}
				if err := obj.UnmarshalJSON(f.Object); err != nil {
					b.Fatal(err)
				}
				if _, err := keyValue(rawPods, obj); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

func watchBenchPod(i int) *v1.Pod {
	return &v1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("web-%d", i), Namespace: "default", ResourceVersion: fmt.Sprint(100 + i),
			Labels: map[string]string{"app": "web", "pod-template-hash": "5d8f9c7b6"},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:name":{}}}}}`)}},
				{Manager: "glassplane-node", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Subresource: "status", FieldsType: "FieldsV1",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:conditions":{},"f:containerStatuses":{},"f:phase":{},"f:podIP":{}}}`)}},
			},
		},
		Spec: v1.PodSpec{NodeName: "sim-1", Containers: []v1.Container{{Name: "web", Image: "nginx:1.27", Ports: []v1.ContainerPort{{ContainerPort: 80}}}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: fmt.Sprintf("10.244.0.%d", i%250),
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}, {Type: v1.PodScheduled, Status: v1.ConditionTrue}}},
	}
}

// TestRawDecoderValuesOutliveTheNextFrame: a value is the decoder's copy,
// not a view of its buffer, which the next frame reuses; the store keeps
// values for as long as the objects exist.
func TestRawDecoderValuesOutliveTheNextFrame(t *testing.T) {
	a := `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"d","resourceVersion":"1"}}`
	b := `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"b","namespace":"d","resourceVersion":"2"},"spec":{"nodeName":"` + strings.Repeat("n", 5000) + `"}}`
	d := newRawDecoder(strings.NewReader(`{"type":"ADDED","object":`+a+"}\n"+`{"type":"ADDED","object":`+b+"}\n"), rawPods)
	_, first, err := d.next()
	if err != nil {
		t.Fatal(err)
	}
	_, second, err := d.next()
	if err != nil {
		t.Fatal(err)
	}
	if string(first.Value) != a || string(second.Value) != b {
		t.Fatalf("the first value became %s after the second frame was read", first.Value)
	}
}

// TestRawDecoderLenient: what encoding/json accepted in a frame, the
// decoder accepts too: names in another case, duplicate names, invalid
// UTF-8.
func TestRawDecoderLenient(t *testing.T) {
	stream := `{"Type":"ADDED","type":"ADDED","Object":{"Kind":"Pod","apiVersion":"v1","Metadata":{"name":"a` + "\xff" + `","Namespace":"d","resourceVersion":"4"}}}`
	_, c, err := newRawDecoder(strings.NewReader(stream), rawPods).next()
	if err != nil {
		t.Fatal(err)
	}
	if c.Key != "/registry/pods/d/a\ufffd" || c.modRevision != 4 || c.Type != "PUT" {
		t.Errorf("got %s %s at %d", c.Type, c.Key, c.modRevision)
	}
}
