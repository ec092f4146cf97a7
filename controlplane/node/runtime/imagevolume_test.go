package runtime

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"
)

// TestContainerdMountsImageVolume mounts the demo image as a pod's image
// volume on a real containerd: its files are there, read-only and not
// executable; a second mount (the agent restarted) leaves it as it is; and
// RemovePod unmounts it and releases its snapshot.
func TestContainerdMountsImageVolume(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rt := startTestContainerd(t, ctx)
	if err := rt.EnsureDemoImage(ctx); err != nil {
		t.Fatalf("EnsureDemoImage: %v", err)
	}
	const podUID = "image-volume-pod"
	t.Cleanup(func() { _ = rt.RemovePod(context.Background(), podUID) })
	dir := filepath.Join(rt.PodDir(podUID), "volumes", "img")
	if err := rt.MountImage(ctx, DemoImage, podUID, "img", dir); err != nil {
		t.Fatalf("MountImage: %v", err)
	}
	if st, err := os.Stat(filepath.Join(dir, "bin", "busybox")); err != nil || st.Size() == 0 {
		t.Fatalf("the image's busybox in the volume: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "written"), []byte("x"), 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("a write into the image volume = %v, want EROFS", err)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	if fs.Flags&unix.ST_RDONLY == 0 || fs.Flags&unix.ST_NOEXEC == 0 || fs.Flags&unix.ST_NOSUID == 0 {
		t.Errorf("image volume mount flags %#x, want ro, noexec and nosuid", fs.Flags)
	}
	if err := rt.MountImage(ctx, DemoImage, podUID, "img", dir); err != nil {
		t.Fatalf("MountImage again: %v", err)
	}

	if err := rt.RemovePod(ctx, podUID); err != nil {
		t.Fatalf("RemovePod: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the volume's directory after RemovePod: %v", err)
	}
	sn := rt.client.SnapshotService(rt.cfg.Snapshotter)
	if _, err := sn.Stat(ctx, imageVolumeKey(podUID, "img")); !errdefs.IsNotFound(err) {
		t.Errorf("the volume's snapshot after RemovePod: %v, want not found", err)
	}
}

// TestContainerdMountImageMissing says which image is missing.
func TestContainerdMountImageMissing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt := startTestContainerd(t, ctx)
	err := rt.MountImage(ctx, "glassplane.local/absent:1", "p", "v", filepath.Join(t.TempDir(), "v"))
	if err == nil || !errdefs.IsNotFound(err) {
		t.Fatalf("MountImage of an absent image = %v, want not found", err)
	}
}
