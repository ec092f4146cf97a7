// Package volume is the persistent volume controllers of
// kube-controller-manager, and Glassplane's built-in local-path
// provisioner:
//
//   - the binder (persistentvolume-binder) binds each PersistentVolumeClaim
//     to a matching PersistentVolume (capacity, access modes, selector,
//     storageClassName, volumeName and claimRef pre-binding), keeps the
//     phases of both (Pending, Available, Bound, Released, Failed, Lost),
//     waits for the first consumer of a WaitForFirstConsumer class, and
//     reclaims a released volume by its policy (Retain keeps it, Delete
//     deletes it);
//   - the local-path provisioner makes a PersistentVolume for a claim of a
//     class whose provisioner is glassplane.io/local-path: a hostPath
//     directory under the data directory of the node the scheduler
//     selected (volume.kubernetes.io/selected-node) or, for Immediate
//     binding, of a ready node, pinned to that node by node affinity. It
//     writes only API objects: the node agent makes the directory when a
//     pod mounts it and removes it when the volume is deleted;
//   - pvc-protection and pv-protection keep a claim in use by a pod, and a
//     bound volume, from going away (finalizers kubernetes.io/pvc-protection
//     and kubernetes.io/pv-protection).
//
// They are API clients: informers on PersistentVolumes, claims,
// StorageClasses, pods and nodes, writes through the API, events with
// upstream's reasons.
package volume
