package node

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/localpath"
)

// claimName returns the claim a pod volume uses: a persistentVolumeClaim
// volume's, or an ephemeral volume's (<pod>-<volume>).
func claimName(pod *corev1.Pod, v corev1.Volume) string {
	if v.PersistentVolumeClaim != nil {
		return v.PersistentVolumeClaim.ClaimName
	}
	return pod.Name + "-" + v.Name
}

// claimPath returns the directory on this node of the volume a pod volume's
// claim is bound to, made if missing: a hostPath or local volume pinned to
// this node (or to none), as the kubelet's hostPath and local plugins
// mount them. It fails, to be retried by the pod worker, while the claim
// is not bound yet.
func (a *Agent) claimPath(ctx context.Context, pod *corev1.Pod, v corev1.Volume) (string, error) {
	name := claimName(pod, v)
	claim, err := a.client.CoreV1().PersistentVolumeClaims(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("failed to get persistentvolumeclaim %q: %w", name, err)
	}
	if claim.Spec.VolumeName == "" || claim.Status.Phase != corev1.ClaimBound {
		return "", fmt.Errorf("persistentvolumeclaim %q is not bound yet", name)
	}
	pv, err := a.client.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("failed to get persistentvolume %q: %w", claim.Spec.VolumeName, err)
	}
	if node := localpath.NodeName(pv); node != "" && node != a.cfg.NodeName {
		return "", fmt.Errorf("persistentvolume %q is pinned to node %q", pv.Name, node)
	}
	p := localpath.Path(pv)
	if p == "" {
		return "", fmt.Errorf("persistentvolume %q has no hostPath or local source this node can mount", pv.Name)
	}
	if localpath.IsLocalPath(pv) || (pv.Spec.HostPath != nil && pv.Spec.HostPath.Type != nil && *pv.Spec.HostPath.Type == corev1.HostPathDirectoryOrCreate) {
		if err := os.MkdirAll(p, 0o777); err != nil {
			return "", fmt.Errorf("failed to create directory of persistentvolume %q: %w", pv.Name, err)
		}
		// Any container user may write to a new volume, as the
		// local-path provisioner's 0777 directories.
		if localpath.IsLocalPath(pv) {
			if err := os.Chmod(p, 0o777); err != nil {
				return "", fmt.Errorf("failed to open directory of persistentvolume %q: %w", pv.Name, err)
			}
		}
	} else if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("path of persistentvolume %q does not exist: %w", pv.Name, err)
	}
	return p, nil
}
