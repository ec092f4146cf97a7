package node

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/glassplane/glassplane/controlplane/node/runtime"
)

// dirRuntime is a runtime whose pods' directories are under root.
type dirRuntime struct {
	runtime.Runtime
	root string
}

func (d dirRuntime) PodDir(uid string) string { return filepath.Join(d.root, uid) }

// TestVolumesFollowTheirSources: after the first sync, each full sync
// brings configMap, secret and downwardAPI volumes up to date, as the
// kubelet does (conformance "optional updates should be reflected in
// volume", "should update labels on modification"): an optional ConfigMap
// created later appears, a changed key changes, a deleted optional one
// empties the volume, and a pod's new labels show.
func TestVolumesFollowTheirSources(t *testing.T) {
	ctx := context.Background()
	client := fake.NewSimpleClientset(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"}, Data: map[string][]byte{"k": []byte("v1")},
	})
	root := t.TempDir()
	a := &Agent{client: client, log: slog.New(slog.NewTextHandler(io.Discard, nil)), cfg: Config{Runtime: dirRuntime{root: root}}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-1", Labels: map[string]string{"a": "1"}},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "later"}, Optional: ptr.To(true)}}},
			{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
			{Name: "labels", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
		}},
	}
	w := &podWorker{}
	read := func(volume, file string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, "uid-1", "volumes", volume, file))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	if err := a.prepareVolumes(ctx, w, pod); err != nil {
		t.Fatal(err)
	}
	if w.volumes["cm"] == "" {
		t.Fatal("the optional configMap volume without its ConfigMap was not prepared (nothing to mount)")
	}
	if got := read("sec", "k"); got != "v1" {
		t.Fatalf("secret k = %q", got)
	}

	client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: "default"}, Data: map[string]string{"data-1": "value-1"},
	}, metav1.CreateOptions{})
	sec, _ := client.CoreV1().Secrets("default").Get(ctx, "s", metav1.GetOptions{})
	sec.Data["k"] = []byte("v2")
	client.CoreV1().Secrets("default").Update(ctx, sec, metav1.UpdateOptions{})
	pod.Labels["b"] = "2"
	if err := a.prepareVolumes(ctx, w, pod); err != nil {
		t.Fatal(err)
	}
	if got := read("cm", "data-1"); got != "value-1" {
		t.Errorf("the ConfigMap created later: data-1 = %q", got)
	}
	if got := read("sec", "k"); got != "v2" {
		t.Errorf("the changed secret: k = %q", got)
	}
	if got := read("labels", "labels"); got != "a=\"1\"\nb=\"2\"" {
		t.Errorf("labels file %q", got)
	}

	client.CoreV1().ConfigMaps("default").Delete(ctx, "later", metav1.DeleteOptions{})
	client.CoreV1().Secrets("default").Delete(ctx, "s", metav1.DeleteOptions{})
	if err := a.prepareVolumes(ctx, w, pod); err != nil {
		t.Fatal(err)
	}
	if got := read("cm", "data-1"); got == "value-1" {
		t.Error("the deleted optional ConfigMap's file stayed")
	}
	if got := read("sec", "k"); got != "v2" {
		t.Errorf("a secret that cannot be read keeps the volume: k = %q", got)
	}
}
