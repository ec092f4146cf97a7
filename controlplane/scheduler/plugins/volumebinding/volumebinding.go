package volumebinding

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/storage/volume"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

// Name is the plugin's name in profiles.
const Name = "VolumeBinding"

// kube-scheduler's reasons.
const (
	ErrReasonBindConflict        = "node(s) didn't find available persistent volumes to bind"
	ErrReasonNodeConflict        = "node(s) had volume node affinity conflict"
	ErrReasonUnboundImmediate    = "pod has unbound immediate PersistentVolumeClaims"
	stateKey                     = framework.StateKey(Name)
	errReasonClaimNotFoundFormat = "persistentvolumeclaim %q not found"
)

// VolumeBinding places pods with claims where their volumes can be.
type VolumeBinding struct {
	client kubernetes.Interface
}

var (
	_ framework.PreFilterPlugin = &VolumeBinding{}
	_ framework.FilterPlugin    = &VolumeBinding{}
	_ framework.PreBindPlugin   = &VolumeBinding{}
)

// New builds the plugin on the scheduler's API client.
func New(_ context.Context, _ runtime.Object, h framework.Handle) (framework.Plugin, error) {
	return &VolumeBinding{client: h.ClientSet()}, nil
}

// Name returns Name.
func (*VolumeBinding) Name() string { return Name }

// claims is what PreFilter learned about the pod's claims.
type claims struct {
	// bound are the volumes of bound claims.
	bound []*v1.PersistentVolume
	// delayed are unbound claims of WaitForFirstConsumer classes.
	delayed []delayedClaim
	// volumes are the unbound volumes a delayed claim may bind to.
	volumes []*v1.PersistentVolume
}

type delayedClaim struct {
	claim *v1.PersistentVolumeClaim
	// provisions is true when the class provisions a volume for it.
	provisions bool
}

// podClaimNames returns the claims of the pod's volumes.
func podClaimNames(pod *v1.Pod) []string {
	var names []string
	for _, vol := range pod.Spec.Volumes {
		switch {
		case vol.PersistentVolumeClaim != nil:
			names = append(names, vol.PersistentVolumeClaim.ClaimName)
		case vol.Ephemeral != nil:
			names = append(names, pod.Name+"-"+vol.Name)
		}
	}
	return names
}

// PreFilter reads the pod's claims; a missing or deleted claim, or an
// unbound claim of an Immediate class, makes the pod unschedulable.
func (p *VolumeBinding) PreFilter(ctx context.Context, state *framework.CycleState, pod *v1.Pod) *framework.Status {
	names := podClaimNames(pod)
	if len(names) == 0 {
		state.Write(stateKey, &claims{})
		return nil
	}
	s := &claims{}
	for _, name := range names {
		claim, err := p.client.CoreV1().PersistentVolumeClaims(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf(errReasonClaimNotFoundFormat, name))
		}
		if err != nil {
			return framework.AsStatus(err)
		}
		if claim.DeletionTimestamp != nil {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q is being deleted", name))
		}
		if claim.Spec.VolumeName != "" {
			pv, err := p.client.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("pvc %s/%s: pv %q not found", claim.Namespace, claim.Name, claim.Spec.VolumeName))
			}
			if err != nil {
				return framework.AsStatus(err)
			}
			s.bound = append(s.bound, pv)
			continue
		}
		class, err := p.class(ctx, claim)
		if err != nil {
			return framework.AsStatus(err)
		}
		if class == nil || class.VolumeBindingMode == nil || *class.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUnboundImmediate)
		}
		s.delayed = append(s.delayed, delayedClaim{claim: claim, provisions: class.Provisioner != volume.NotSupportedProvisioner})
	}
	if len(s.delayed) > 0 {
		list, err := p.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return framework.AsStatus(err)
		}
		for i := range list.Items {
			s.volumes = append(s.volumes, &list.Items[i])
		}
	}
	state.Write(stateKey, s)
	return nil
}

func (p *VolumeBinding) class(ctx context.Context, claim *v1.PersistentVolumeClaim) (*storagev1.StorageClass, error) {
	name := volume.GetPersistentVolumeClaimClass(claim)
	if name == "" {
		return nil, nil
	}
	class, err := p.client.StorageV1().StorageClasses().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return class, err
}

// Filter keeps a node when every bound volume's node affinity admits it
// and every delayed claim finds a matching volume there or is provisioned.
func (p *VolumeBinding) Filter(_ context.Context, state *framework.CycleState, _ *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	node := nodeInfo.Node()
	if node == nil {
		return framework.NewStatus(framework.Error, "node not found")
	}
	data, err := state.Read(stateKey)
	if err != nil {
		return nil
	}
	s := data.(*claims)
	for _, pv := range s.bound {
		if err := volume.CheckNodeAffinity(pv, node.Labels); err != nil {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNodeConflict)
		}
	}
	if _, ok := matchVolumes(s, node); !ok {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonBindConflict)
	}
	return nil
}

// matchVolumes finds a volume on node for each delayed claim that has one
// (nil for a claim to provision), or reports that a claim can be neither
// bound nor provisioned there.
func matchVolumes(s *claims, node *v1.Node) (map[string]*v1.PersistentVolume, bool) {
	chosen := map[string]*v1.PersistentVolume{}
	taken := map[string]*v1.PersistentVolume{}
	for _, d := range s.delayed {
		pv, err := volume.FindMatchingVolume(d.claim, s.volumes, node, taken, true, false)
		if err != nil {
			return nil, false
		}
		if pv == nil {
			if !d.provisions {
				return nil, false
			}
			continue
		}
		taken[pv.Name] = pv
		chosen[d.claim.Name] = pv
	}
	return chosen, true
}

// PreBind binds each delayed claim's matching volume to it on the chosen
// node (the binder completes the binding) and marks the claims to provision
// with the node, as kube-scheduler's volume binder does. It does not wait
// for the binding: the node agent waits for the claims to be bound before
// it starts the pod.
func (p *VolumeBinding) PreBind(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeName string) *framework.Status {
	data, err := state.Read(stateKey)
	if err != nil {
		return nil
	}
	s := data.(*claims)
	if len(s.delayed) == 0 {
		return nil
	}
	node, err := p.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		return framework.AsStatus(err)
	}
	chosen, ok := matchVolumes(s, node)
	if !ok {
		return framework.NewStatus(framework.Unschedulable, ErrReasonBindConflict)
	}
	for _, d := range s.delayed {
		if pv := chosen[d.claim.Name]; pv != nil {
			next, dirty, err := volume.GetBindVolumeToClaim(pv, d.claim)
			if err != nil {
				return framework.AsStatus(err)
			}
			if dirty {
				if _, err := p.client.CoreV1().PersistentVolumes().Update(ctx, next, metav1.UpdateOptions{}); err != nil {
					return framework.AsStatus(fmt.Errorf("failed to bind volume %q to claim %s/%s: %w", pv.Name, d.claim.Namespace, d.claim.Name, err))
				}
			}
			continue
		}
		if d.claim.Annotations[volume.AnnSelectedNode] == nodeName {
			continue
		}
		claim := d.claim.DeepCopy()
		metav1.SetMetaDataAnnotation(&claim.ObjectMeta, volume.AnnSelectedNode, nodeName)
		if _, err := p.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, claim, metav1.UpdateOptions{}); err != nil {
			return framework.AsStatus(fmt.Errorf("failed to select node %q for claim %s/%s: %w", nodeName, claim.Namespace, claim.Name, err))
		}
	}
	return nil
}
