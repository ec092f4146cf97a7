package runtime

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/opencontainers/runtime-spec/specs-go"
	"k8s.io/utils/ptr"
)

// TestSecurityOptsGroups: the OCI spec's user after securityOpts, applied
// (without containerd) to a spec as oci.WithImageConfig leaves it for an
// image without a USER whose /etc/group puts root in wheel (10). The
// pod's fsGroup and supplementalGroups are added to the groups /etc/group
// gives the process's user (supplementalGroupsPolicy Merge), or only to
// its primary group (Strict).
func TestSecurityOptsGroups(t *testing.T) {
	rootfs := t.TempDir()
	if err := os.MkdirAll(filepath.Join(rootfs, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"passwd": "root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000::/home/app:/bin/sh\n",
		"group":  "root:x:0:\nwheel:x:10:root\nstaff:x:50:app\napp:x:1000:\n",
	} {
		if err := os.WriteFile(filepath.Join(rootfs, "etc", name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name      string
		spec      ContainerSpec
		uid, gid  uint32
		addedGIDs []uint32
	}{
		{name: "image user", spec: ContainerSpec{},
			uid: 0, gid: 0, addedGIDs: []uint32{0, 10}},
		{name: "image user with fsGroup and supplementalGroups", spec: ContainerSpec{SupplementalGroups: []int64{1001, 2000, 10}},
			uid: 0, gid: 0, addedGIDs: []uint32{0, 10, 1001, 2000}},
		{name: "image user, strict", spec: ContainerSpec{SupplementalGroups: []int64{1001}, StrictSupplementalGroups: true},
			uid: 0, gid: 0, addedGIDs: []uint32{0, 1001}},
		{name: "runAsUser", spec: ContainerSpec{RunAsUser: ptr.To[int64](1000), SupplementalGroups: []int64{1001}},
			uid: 1000, gid: 1000, addedGIDs: []uint32{1000, 50, 1001}},
		{name: "runAsUser not in /etc/passwd", spec: ContainerSpec{RunAsUser: ptr.To[int64](1234), SupplementalGroups: []int64{1001}},
			uid: 1234, gid: 1234, addedGIDs: []uint32{1234, 1001}},
		{name: "runAsUser and runAsGroup", spec: ContainerSpec{RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](3000), SupplementalGroups: []int64{1001}},
			uid: 1000, gid: 3000, addedGIDs: []uint32{3000, 50, 1001}},
		{name: "runAsUser, strict", spec: ContainerSpec{RunAsUser: ptr.To[int64](1000), SupplementalGroups: []int64{1001, 2000}, StrictSupplementalGroups: true},
			uid: 1000, gid: 1000, addedGIDs: []uint32{1000, 1001, 2000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &specs.Spec{
				Root:    &specs.Root{Path: rootfs},
				Process: &specs.Process{User: specs.User{UID: 0, GID: 0, AdditionalGids: []uint32{0, 10}}},
			}
			for _, opt := range securityOpts(tc.spec) {
				if err := opt(context.Background(), nil, &containers.Container{}, s); err != nil {
					t.Fatal(err)
				}
			}
			u := s.Process.User
			if u.UID != tc.uid || u.GID != tc.gid || !slices.Equal(u.AdditionalGids, tc.addedGIDs) {
				t.Errorf("user %d:%d groups %v, want %d:%d groups %v", u.UID, u.GID, u.AdditionalGids, tc.uid, tc.gid, tc.addedGIDs)
			}
		})
	}
}
