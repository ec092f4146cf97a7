package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/glassplane/glassplane/controlplane/localpath"
	"github.com/glassplane/glassplane/controlplane/trim"
)

// runVolumeCleanup watches PersistentVolumes until ctx ends and, for a
// deleted local-path volume of this node, removes its directory and then
// the cleanup finalizer that kept the object, as the local-path
// provisioner's helper pod does on its node. A simulated node keeps no
// directory: it only lets the object go.
func (a *Agent) runVolumeCleanup(ctx context.Context) {
	factory := informers.NewSharedInformerFactoryWithOptions(a.client, 0, informers.WithTransform(trim.ManagedFields))
	informer := factory.Core().V1().PersistentVolumes().Informer()
	handle := func(obj any) {
		if pv, ok := obj.(*corev1.PersistentVolume); ok && a.ownsDeletedVolume(pv) {
			if err := a.cleanUpVolume(ctx, pv); err != nil {
				a.log.Warn("failed to clean up volume", "volume", pv.Name, "err", err)
			}
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: handle, UpdateFunc: func(_, o any) { handle(o) },
	}); err != nil {
		a.log.Warn("failed to watch persistent volumes", "err", err)
		return
	}
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
}

// ownsDeletedVolume reports whether pv is a deleted local-path volume of
// this node still held by the cleanup finalizer.
func (a *Agent) ownsDeletedVolume(pv *corev1.PersistentVolume) bool {
	return pv.DeletionTimestamp != nil && localpath.IsLocalPath(pv) && localpath.NodeName(pv) == a.cfg.NodeName &&
		slices.Contains(pv.Finalizers, localpath.CleanupFinalizer)
}

// cleanUpVolume removes pv's directory, only if it lies in this node's
// volume directory, then the cleanup finalizer.
func (a *Agent) cleanUpVolume(ctx context.Context, pv *corev1.PersistentVolume) error {
	if !a.cfg.Simulated {
		dir := filepath.Clean(localpath.Path(pv))
		root := localpath.VolumesDir(a.cfg.DataDir)
		if !strings.HasPrefix(dir, root+string(filepath.Separator)) {
			return fmt.Errorf("refusing to remove %q: not under %q", dir, root)
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("failed to remove %q: %w", dir, err)
		}
		a.log.Info("removed volume directory", "volume", pv.Name, "path", dir)
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := a.client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if !slices.Contains(cur.Finalizers, localpath.CleanupFinalizer) {
			return nil
		}
		cur = cur.DeepCopy()
		cur.Finalizers = slices.DeleteFunc(cur.Finalizers, func(f string) bool { return f == localpath.CleanupFinalizer })
		_, err = a.client.CoreV1().PersistentVolumes().Update(ctx, cur, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}
