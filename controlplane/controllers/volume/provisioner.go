package volume

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/storage/volume"

	"github.com/glassplane/glassplane/controlplane/localpath"
)

// provision starts dynamic provisioning of claim, as the upstream
// controller does for an external provisioner: the claim is annotated with
// the provisioner's name (event ExternalProvisioning). For the local-path
// provisioner it then makes the volume itself.
func (b *Binder) provision(ctx context.Context, claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass) error {
	if claim.Annotations[volume.AnnStorageProvisioner] != class.Provisioner {
		cl := claim.DeepCopy()
		metav1.SetMetaDataAnnotation(&cl.ObjectMeta, volume.AnnStorageProvisioner, class.Provisioner)
		metav1.SetMetaDataAnnotation(&cl.ObjectMeta, volume.AnnBetaStorageProvisioner, class.Provisioner)
		var err error
		if claim, err = b.client.CoreV1().PersistentVolumeClaims(cl.Namespace).Update(ctx, cl, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("failed to annotate claim %s/%s: %w", cl.Namespace, cl.Name, err)
		}
		b.recorder.Event(claim, v1.EventTypeNormal, reasonExternalProvisioning, fmt.Sprintf(
			"Waiting for a volume to be created either by the external provisioner '%s' or manually by the system administrator. "+
				"If volume creation is delayed, please verify that the provisioner is running and correctly registered.", class.Provisioner))
	}
	if class.Provisioner != localpath.Provisioner {
		return nil
	}
	name := "pvc-" + string(claim.UID)
	if _, err := b.pvLister.Get(name); err == nil {
		return nil
	}
	nodeName := claim.Annotations[volume.AnnSelectedNode]
	if nodeName == "" {
		nodeName = b.pickNode()
	}
	if nodeName == "" {
		b.provisioner.Event(claim, v1.EventTypeWarning, reasonProvisioningFailed, "failed to provision volume: no ready node to make its directory on")
		return nil
	}
	node, err := b.nodeLister.Get(nodeName)
	if apierrors.IsNotFound(err) {
		b.provisioner.Event(claim, v1.EventTypeWarning, reasonProvisioningFailed, fmt.Sprintf("failed to provision volume: selected node %q not found", nodeName))
		return nil
	}
	if err != nil {
		return err
	}
	b.provisioner.Event(claim, v1.EventTypeNormal, reasonProvisioning, fmt.Sprintf("External provisioner is provisioning volume for claim %q", claim.Namespace+"/"+claim.Name))
	pv := LocalPathVolume(name, claim, class, node)
	if _, err := b.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.provisioner.Event(claim, v1.EventTypeWarning, reasonProvisioningFailed, fmt.Sprintf("failed to provision volume with StorageClass %q: %v", class.Name, err))
		return fmt.Errorf("failed to create volume %q: %w", name, err)
	}
	b.provisioner.Event(claim, v1.EventTypeNormal, reasonProvisioningOK, "Successfully provisioned volume "+name)
	b.log.Info("provisioned volume", "claim", claim.Namespace+"/"+claim.Name, "volume", name, "node", nodeName, "path", localpath.Path(pv))
	return nil
}

// LocalPathVolume is the PersistentVolume the local-path provisioner makes
// for claim on node: a hostPath directory named after the volume under the
// node's volume directory, pinned to the node, pre-bound to the claim, with
// the class's reclaim policy and mount options and the cleanup finalizer
// the node agent removes once the directory is gone.
func LocalPathVolume(name string, claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass, node *v1.Node) *v1.PersistentVolume {
	reclaim := v1.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		reclaim = *class.ReclaimPolicy
	}
	dirType := v1.HostPathDirectoryOrCreate
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{localpath.AnnotationProvisionedBy: localpath.Provisioner},
			Finalizers:  []string{localpath.CleanupFinalizer},
		},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: claim.Spec.Resources.Requests[v1.ResourceStorage]},
			AccessModes:                   append([]v1.PersistentVolumeAccessMode(nil), claim.Spec.AccessModes...),
			PersistentVolumeReclaimPolicy: reclaim,
			StorageClassName:              class.Name,
			MountOptions:                  class.MountOptions,
			VolumeMode:                    claim.Spec.VolumeMode,
			ClaimRef: &v1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID, ResourceVersion: claim.ResourceVersion,
			},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{node.Name}}},
			}}}},
			PersistentVolumeSource: v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{
				Path: filepath.Join(localpath.NodeDir(node), name), Type: &dirType,
			}},
		},
	}
}

// pickNode chooses the node of a local-path volume of an Immediate class:
// a ready, schedulable node, one that runs containers before a simulated
// one, by name.
func (b *Binder) pickNode() string {
	nodes, err := b.nodeLister.List(labels.Everything())
	if err != nil {
		return ""
	}
	var ready []*v1.Node
	for _, n := range nodes {
		if n.Spec.Unschedulable {
			continue
		}
		for _, c := range n.Status.Conditions {
			if c.Type == v1.NodeReady && c.Status == v1.ConditionTrue {
				ready = append(ready, n)
			}
		}
	}
	sort.Slice(ready, func(i, j int) bool {
		si, sj := ready[i].Labels[labelRuntime] == "simulated", ready[j].Labels[labelRuntime] == "simulated"
		if si != sj {
			return sj
		}
		return ready[i].Name < ready[j].Name
	})
	if len(ready) == 0 {
		return ""
	}
	return ready[0].Name
}
