package node

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// requireRoot fails the test in CI (CI=true) and skips it elsewhere when
// it does not run as root, which changing a file's group needs.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Getuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("root is required in CI to change files' groups")
	}
	t.Skip("skipping: changing files' groups needs root (set CI=true to make this a failure)")
}

// TestVolumesOwnedByFSGroup: a pod with securityContext.fsGroup gets its
// volumes as the kubelet's SetVolumeOwnership leaves them (conformance
// "consumable from pods in volume as non-root with defaultMode and
// fsGroup set"): every file and directory has the group, files of
// configMap, secret, downwardAPI and projected volumes get the group's
// read bits (a projected token is 0600 before them), their directories
// and an emptyDir setgid and the group's search bit (and an emptyDir
// stays writable by all). A refresh with the same data writes nothing.
func TestVolumesOwnedByFSGroup(t *testing.T) {
	requireRoot(t)
	const fsGroup = 1001
	ctx := context.Background()
	client := fake.NewSimpleClientset(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"}, Data: map[string][]byte{"data-1": []byte("value-1")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "default"}, Data: map[string]string{"k": "v"}},
	)
	client.PrependReactor("create", "serviceaccounts", func(k8stesting.Action) (bool, kruntime.Object, error) {
		return true, &authenticationv1.TokenRequest{Status: authenticationv1.TokenRequestStatus{Token: "token"}}, nil
	})
	root := t.TempDir()
	a := &Agent{client: client, log: slog.New(slog.NewTextHandler(io.Discard, nil)), cfg: Config{Runtime: dirRuntime{root: root}}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-1", Labels: map[string]string{"a": "1"}},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), FSGroup: ptr.To[int64](fsGroup)},
			Volumes: []corev1.Volume{
				{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr.To[int32](0o440)}}},
				{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "cm"},
					Items:                []corev1.KeyToPath{{Key: "k", Path: "sub/k", Mode: ptr.To[int32](0o400)}}}}},
				{Name: "labels", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
				{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o440), Sources: []corev1.VolumeProjection{
					{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}},
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				}}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
	w := &podWorker{}
	if err := a.prepareVolumes(ctx, w, pod); err != nil {
		t.Fatal(err)
	}
	volumes := filepath.Join(root, "uid-1", "volumes")
	dataLink := func(volume string) string {
		t.Helper()
		target, err := os.Readlink(filepath.Join(volumes, volume, atomicDataLink))
		if err != nil {
			t.Fatal(err)
		}
		return target
	}
	// Directories the agent makes keep what the umask leaves them; the
	// bits the group needs are checked.
	for _, tc := range []struct {
		path string
		mode os.FileMode
	}{
		{"sec", os.ModeDir | os.ModeSetgid | 0o750},
		{"sec/" + dataLink("sec"), os.ModeDir | os.ModeSetgid | 0o755},
		{"sec/..data/data-1", 0o440},
		{"cm/..data/sub", os.ModeDir | os.ModeSetgid | 0o750},
		{"cm/..data/sub/k", 0o440},
		{"labels/..data/labels", 0o644},
		{"proj/..data/data-1", 0o440},
		{"proj/..data/token", 0o640},
		{"scratch", os.ModeDir | os.ModeSetgid | 0o777},
	} {
		t.Run(tc.path, func(t *testing.T) {
			info, err := os.Stat(filepath.Join(volumes, tc.path))
			if err != nil {
				t.Fatal(err)
			}
			if got := info.Mode(); got != tc.mode && !(got.IsDir() && got&tc.mode == tc.mode) {
				t.Errorf("mode %v, want %v", got, tc.mode)
			}
			if gid := info.Sys().(*syscall.Stat_t).Gid; gid != fsGroup {
				t.Errorf("group %d, want %d", gid, fsGroup)
			}
		})
	}

	before := map[string]string{}
	for _, v := range []string{"sec", "cm", "labels", "proj"} {
		before[v] = dataLink(v)
	}
	if err := a.prepareVolumes(ctx, w, pod); err != nil {
		t.Fatal(err)
	}
	for v, payload := range before {
		if after := dataLink(v); after != payload {
			t.Errorf("a refresh of %s with the same data wrote a new payload: %s, then %s", v, payload, after)
		}
	}
}
