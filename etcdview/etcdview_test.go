package etcdview_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/glassplane/glassplane/api/v1alpha1"
	"github.com/glassplane/glassplane/controlplane/etcd/etcdtest"
	"github.com/glassplane/glassplane/etcdview"
)

// TestReader writes keys into a real etcd and reads them back as the
// explorer does: pages at a revision, a value decoded, a history walk.
func TestReader(t *testing.T) {
	ctx := context.Background()
	cli := etcdtest.Start(t).Client()
	r := etcdview.New(cli)

	put := func(k, v string) int64 {
		t.Helper()
		resp, err := cli.Put(ctx, k, v)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	put("/registry/configmaps/default/a", `{"kind":"ConfigMap","data":{"v":"1"}}`)
	before := put("/registry/configmaps/default/b", `{"kind":"ConfigMap"}`)
	put("/registry/configmaps/default/a", `{"kind":"ConfigMap","data":{"v":"2"}}`)
	put("/registry/configmaps/default/c", "plain text")
	put("/other/key", "x")

	page, err := r.List(ctx, "/registry/", "", 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Keys) != 2 || page.Keys[0].Key != "/registry/configmaps/default/a" || page.Next != "/registry/configmaps/default/c" {
		t.Fatalf("first page = %+v, next %q", page.Keys, page.Next)
	}
	if page.Keys[0].Value != nil || page.Keys[0].Size == 0 || page.Keys[0].Version != 2 {
		t.Errorf("a listed key = %+v, want no value, its size, version 2", page.Keys[0])
	}
	rest, err := r.List(ctx, "/registry/", page.Next, page.Revision, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rest.Keys) != 1 || rest.Next != "" {
		t.Errorf("second page = %+v, next %q", rest.Keys, rest.Next)
	}

	old, err := r.List(ctx, "/registry/", "", before, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(old.Keys) != 2 || old.Revision != before {
		t.Errorf("keys at revision %d = %+v", before, old.Keys)
	}
	if _, err := r.List(ctx, "/registry/", "", page.Revision+100, 0); !errors.Is(err, etcdview.ErrFutureRevision) {
		t.Errorf("a future revision: err = %v", err)
	}

	k, err := r.Get(ctx, "/registry/configmaps/default/a", before)
	if err != nil {
		t.Fatal(err)
	}
	if k.Value.Encoding != "json" || !bytes.Contains(k.Value.Object.Raw, []byte(`"v":"1"`)) {
		t.Errorf("a at revision %d = %+v", before, k.Value)
	}
	if got, err := v1alpha1.EtcdKeyOf(k.Name); err != nil || got != k.Key {
		t.Errorf("name %q reads as %q, %v", k.Name, got, err)
	}
	if _, err := r.Get(ctx, "/registry/configmaps/default/c", before); !errors.Is(err, etcdview.ErrNotFound) {
		t.Errorf("c before it was written: err = %v", err)
	}
	c, err := r.Get(ctx, "/registry/configmaps/default/c", 0)
	if err != nil || c.Value.Encoding != "text" || c.Value.Text != "plain text" {
		t.Errorf("c = %+v, %v", c, err)
	}

	hist, end, err := r.History(ctx, "/registry/configmaps/default/a", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 2 || hist[0].Version != 2 || hist[1].Version != 1 || end.CreatedAt != hist[1].ModRevision {
		t.Errorf("history = %+v, end %+v", hist, end)
	}
}

// TestDecodeProtobuf reads a value as kube-apiserver stores it (its
// protobuf envelope) as JSON with its kind.
func TestDecodeProtobuf(t *testing.T) {
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(pod, &buf); err != nil {
		t.Fatal(err)
	}
	v := etcdview.Decode(buf.Bytes())
	if v.Encoding != "protobuf" || v.Object == nil {
		t.Fatalf("decoded = %+v", v)
	}
	var got corev1.Pod
	if err := json.Unmarshal(v.Object.Raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.Kind != "Pod" || got.APIVersion != "v1" || got.Name != "web" || got.Spec.Containers[0].Image != "busybox" {
		t.Errorf("decoded pod = %s", v.Object.Raw)
	}

	bad := etcdview.Decode(append([]byte("k8s\x00"), 0xff, 0x01))
	if bad.Encoding != "protobuf" || bad.Error == "" || bad.Object != nil {
		t.Errorf("a broken protobuf value = %+v", bad)
	}
	if b := etcdview.Decode([]byte{0xff, 0xfe}); b.Encoding != "binary" || len(b.Raw) != 2 {
		t.Errorf("binary = %+v", b)
	}
}
