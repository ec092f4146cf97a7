package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/containerd/containerd/v2/core/mount"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/errdefs"
	"github.com/opencontainers/image-spec/identity"
)

// ImageMounter is a runtime that can mount an image's files as a volume
// (a pod's image volume source), as containerd's CRI does for the kubelet.
type ImageMounter interface {
	// MountImage mounts the root filesystem of ref, which must be present
	// on the node, read-only at dir. podUID and volume name the mount, so
	// that RemovePod releases it.
	MountImage(ctx context.Context, ref, podUID, volume, dir string) error
}

// imageVolumeKey is the snapshot key of a pod's image volume.
func imageVolumeKey(podUID, volume string) string {
	return imageVolumePrefix(podUID) + volume
}

func imageVolumePrefix(podUID string) string { return "glassplane-image-volume/" + podUID + "/" }

// MountImage implements ImageMounter: a read-only view snapshot of the
// image's layers, mounted at dir without exec, setuid or devices. The view
// is a garbage collection root, so containerd keeps it while the pod runs;
// a dir already mounted (the agent restarted) is left as it is.
func (c *Containerd) MountImage(ctx context.Context, ref, podUID, volume, dir string) error {
	norm, err := NormalizeImageRef(ref)
	if err != nil {
		return err
	}
	img, err := c.client.GetImage(ctx, norm)
	if err != nil {
		return fmt.Errorf("failed to find image %q: %w", norm, err)
	}
	if err := c.unpack(ctx, img); err != nil {
		return err
	}
	diffIDs, err := img.RootFS(ctx)
	if err != nil {
		return fmt.Errorf("failed to read the layers of image %q: %w", norm, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("failed to create %q: %w", dir, err)
	}
	if mounted, err := isMountPoint(dir); err != nil || mounted {
		return err
	}
	sn := c.client.SnapshotService(c.cfg.Snapshotter)
	key := imageVolumeKey(podUID, volume)
	mounts, err := sn.View(ctx, key, identity.ChainID(diffIDs).String(),
		snapshots.WithLabels(map[string]string{"containerd.io/gc.root": time.Now().UTC().Format(time.RFC3339)}))
	if errdefs.IsAlreadyExists(err) {
		mounts, err = sn.Mounts(ctx, key)
	}
	if err != nil {
		return fmt.Errorf("failed to make a read-only view of image %q: %w", norm, err)
	}
	for i := range mounts {
		mounts[i].Options = append(mounts[i].Options, "ro", "noexec", "nosuid", "nodev")
	}
	if err := mount.All(mounts, dir); err != nil {
		return fmt.Errorf("failed to mount image %q: %w", norm, err)
	}
	return nil
}

// releaseImageVolumes removes the view snapshots of a pod's image volumes;
// their mounts, under the pod's directory, are already gone.
func (c *Containerd) releaseImageVolumes(ctx context.Context, podUID string) error {
	sn := c.client.SnapshotService(c.cfg.Snapshotter)
	prefix := imageVolumePrefix(podUID)
	var keys []string
	if err := sn.Walk(ctx, func(_ context.Context, info snapshots.Info) error {
		if strings.HasPrefix(info.Name, prefix) {
			keys = append(keys, info.Name)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("failed to list the image volumes of pod %s: %w", podUID, err)
	}
	var errs []error
	for _, k := range keys {
		if err := sn.Remove(ctx, k); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("failed to release image volume %q: %w", k, err))
		}
	}
	return errors.Join(errs...)
}
