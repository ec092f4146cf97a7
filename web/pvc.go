package web

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/components"
)

// annSelectedNode is the annotation the scheduler sets on a claim of a
// WaitForFirstConsumer class: the node its first pod was placed on.
const annSelectedNode = "volume.kubernetes.io/selected-node"

// pvcView reads what a PersistentVolumeClaim's page shows beside the
// stored object, through the API as the page's user: the claim, the
// PersistentVolume bound to it (its node affinity and directory) and the
// pods in the namespace that mount it. What the user may not read shows
// the API's message.
func (d *Dashboard) pvcView(ctx context.Context, r *http.Request, namespace, name string) *components.PVC {
	client, err := d.api(r)
	if err != nil {
		return &components.PVC{Error: fmt.Sprintf("failed to read persistentvolumeclaim %q: %v", name, err)}
	}
	claim, err := client.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return &components.PVC{Error: err.Error()}
	}
	vm := claimView(claim)
	if claim.Spec.VolumeName != "" {
		pv, err := client.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			vm.VolumeError = err.Error()
		} else {
			vm.Volume = volumeView(pv)
		}
	}
	pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		vm.PodsError = err.Error()
	} else {
		vm.Pods = claimPods(pods.Items, name)
	}
	return vm
}

// claimView is the claim's own fields as the page shows them.
func claimView(c *corev1.PersistentVolumeClaim) *components.PVC {
	vm := &components.PVC{Phase: string(c.Status.Phase), VolumeName: c.Spec.VolumeName, SelectedNode: c.Annotations[annSelectedNode]}
	if q, ok := c.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		vm.Requested = q.String()
	}
	if q, ok := c.Status.Capacity[corev1.ResourceStorage]; ok {
		vm.Capacity = q.String()
	}
	for _, m := range c.Spec.AccessModes {
		vm.AccessModes = append(vm.AccessModes, string(m))
	}
	if c.Spec.StorageClassName != nil {
		vm.StorageClass = *c.Spec.StorageClassName
	}
	if c.Spec.VolumeMode != nil {
		vm.VolumeMode = string(*c.Spec.VolumeMode)
	}
	return vm
}

// volumeView is a PersistentVolume: its source and directory, and the
// nodes its required node affinity allows. A kubernetes.io/hostname In
// term names nodes (a Glassplane node's hostname label is its name).
func volumeView(pv *corev1.PersistentVolume) *components.PersistentVolume {
	v := &components.PersistentVolume{
		Name: pv.Name, Href: objectHref("persistentvolumes", "", pv.Name), Phase: string(pv.Status.Phase),
		ReclaimPolicy: string(pv.Spec.PersistentVolumeReclaimPolicy), StorageClass: pv.Spec.StorageClassName,
	}
	if q, ok := pv.Spec.Capacity[corev1.ResourceStorage]; ok {
		v.Capacity = q.String()
	}
	if ref := pv.Spec.ClaimRef; ref != nil {
		v.ClaimRef = ref.Namespace + "/" + ref.Name
	}
	switch s := pv.Spec.PersistentVolumeSource; {
	case s.HostPath != nil:
		v.Source, v.Path = "hostPath", s.HostPath.Path
	case s.Local != nil:
		v.Source, v.Path = "local", s.Local.Path
	case s.NFS != nil:
		v.Source, v.Path = "nfs", s.NFS.Server+":"+s.NFS.Path
	case s.CSI != nil:
		v.Source = "csi " + s.CSI.Driver
	}
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return v
	}
	seen := map[string]bool{}
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		var parts []string
		for _, e := range term.MatchExpressions {
			parts = append(parts, fmt.Sprintf("%s %s [%s]", e.Key, e.Operator, strings.Join(e.Values, ", ")))
			if e.Key != corev1.LabelHostname || e.Operator != corev1.NodeSelectorOpIn {
				continue
			}
			for _, n := range e.Values {
				if !seen[n] {
					seen[n] = true
					v.Nodes = append(v.Nodes, components.ObjectLink{Kind: "Node", Name: n, Href: objectHref("nodes", "", n)})
				}
			}
		}
		for _, f := range term.MatchFields {
			parts = append(parts, fmt.Sprintf("%s %s [%s]", f.Key, f.Operator, strings.Join(f.Values, ", ")))
		}
		v.Affinity = append(v.Affinity, strings.Join(parts, ", "))
	}
	return v
}

// claimPods are the pods with a volume naming claim, by name.
func claimPods(pods []corev1.Pod, claim string) []components.ClaimPod {
	var out []components.ClaimPod
	for _, p := range pods {
		for _, vol := range p.Spec.Volumes {
			if vol.PersistentVolumeClaim == nil || vol.PersistentVolumeClaim.ClaimName != claim {
				continue
			}
			cp := components.ClaimPod{Name: p.Name, Href: objectHref("pods", p.Namespace, p.Name), Phase: string(p.Status.Phase), Node: p.Spec.NodeName, Volume: vol.Name}
			if cp.Node != "" {
				cp.NodeHref = objectHref("nodes", "", cp.Node)
			}
			out = append(out, cp)
			break
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
