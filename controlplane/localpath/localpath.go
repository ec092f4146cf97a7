package localpath

import (
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
)

const (
	// Provisioner is the provisioner name of the built-in local-path
	// provisioner, as StorageClasses name it.
	Provisioner = "glassplane.io/local-path"
	// AnnotationDir is the Node annotation a node agent sets to the
	// directory under which it keeps the volumes provisioned on it.
	AnnotationDir = "glassplane.io/local-path-dir"
	// DefaultDir is where a node without AnnotationDir (an older or a
	// simulated one) is taken to keep its volumes.
	DefaultDir = "/var/lib/glassplane/volumes"
	// AnnotationProvisionedBy is upstream's pv.kubernetes.io/provisioned-by,
	// which names the provisioner of a dynamically provisioned volume.
	AnnotationProvisionedBy = "pv.kubernetes.io/provisioned-by"
	// CleanupFinalizer keeps a deleted local-path volume until its node has
	// removed the directory, as upstream's external provisioners keep
	// theirs until the storage is gone.
	CleanupFinalizer = "external-provisioner.volume.kubernetes.io/finalizer"
)

// VolumesDir is the directory under a node's data directory that holds its
// local-path volumes.
func VolumesDir(dataDir string) string { return filepath.Join(dataDir, "volumes") }

// NodeDir returns the directory node keeps its volumes in.
func NodeDir(node *corev1.Node) string {
	if node != nil {
		if d := node.Annotations[AnnotationDir]; d != "" {
			return d
		}
	}
	return DefaultDir
}

// IsLocalPath reports whether pv was provisioned by the local-path
// provisioner.
func IsLocalPath(pv *corev1.PersistentVolume) bool {
	return pv.Annotations[AnnotationProvisionedBy] == Provisioner
}

// Path returns the directory of a volume: its hostPath or local path.
func Path(pv *corev1.PersistentVolume) string {
	switch {
	case pv.Spec.HostPath != nil:
		return pv.Spec.HostPath.Path
	case pv.Spec.Local != nil:
		return pv.Spec.Local.Path
	}
	return ""
}

// NodeName returns the node a volume's node affinity pins it to
// (kubernetes.io/hostname In [name]), or "".
func NodeName(pv *corev1.PersistentVolume) string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return ""
	}
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, r := range term.MatchExpressions {
			if r.Key == corev1.LabelHostname && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
				return r.Values[0]
			}
		}
	}
	return ""
}
