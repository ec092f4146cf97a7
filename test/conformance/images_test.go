package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	imageutils "k8s.io/kubernetes/test/utils/image"
)

// TestImagesMatchManifest checks the runner's images against the manifest
// of the k8s.io/kubernetes module e2e.test is built from: each name is the
// one the specs pull, so bumping the module cannot silently leave an image
// under an old tag.
func TestImagesMatchManifest(t *testing.T) {
	seen := map[imageutils.ImageID]bool{}
	for _, img := range images {
		if want := imageutils.GetE2EImage(img.id); img.name != want {
			t.Errorf("image %s: the manifest of k8s.io/kubernetes names it %s", img.name, want)
		}
		if seen[img.id] {
			t.Errorf("image %s listed twice", img.name)
		}
		seen[img.id] = true
		if img.from == "" || img.build == nil {
			t.Errorf("image %s: says nothing of what it is built from", img.name)
		}
	}
	// The [Conformance] specs' everyday images must all be built.
	for _, id := range []imageutils.ImageID{imageutils.Agnhost, imageutils.BusyBox, imageutils.Nginx, imageutils.NginxNew, imageutils.Pause} {
		if !seen[id] {
			t.Errorf("%s is not built", imageutils.GetE2EImage(id))
		}
	}
}

// TestAgnhostSourceIsTheTaggedVersion checks that the agnhost built from
// the module's source is the version the manifest tags it with.
func TestAgnhostSourceIsTheTaggedVersion(t *testing.T) {
	dir, err := k8sModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	v, err := os.ReadFile(filepath.Join(dir, "test/images/agnhost/VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	name := imageutils.GetE2EImage(imageutils.Agnhost)
	if tag := name[strings.LastIndex(name, ":")+1:]; strings.TrimSpace(string(v)) != tag {
		t.Errorf("test/images/agnhost/VERSION is %q, the manifest tags agnhost %q", strings.TrimSpace(string(v)), tag)
	}
}

// TestEtcdSourceIsTheTaggedVersion checks that the etcd server module the
// etcd image is built from is the release the manifest tags the image with
// (3.7.0-0 is etcd v3.7.0, image revision 0).
func TestEtcdSourceIsTheTaggedVersion(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "go.etcd.io/etcd/server/v3").Output()
	if err != nil {
		t.Fatalf("failed to find the go.etcd.io/etcd/server/v3 module: %v", err)
	}
	name := imageutils.GetE2EImage(imageutils.Etcd)
	tag := name[strings.LastIndex(name, ":")+1:]
	if got, want := strings.TrimSpace(string(out)), "v"+strings.SplitN(tag, "-", 2)[0]; got != want {
		t.Errorf("go.mod requires go.etcd.io/etcd/server/v3 %s, the manifest tags etcd %q (%s)", got, tag, want)
	}
}
