// Package volumebinding is the VolumeBinding plugin, as kube-scheduler's:
// PreFilter reads the pod's PersistentVolumeClaims, Filter keeps the nodes
// where each claim's volume can be (a bound volume's node affinity, a
// matching unbound volume of a WaitForFirstConsumer class, or a class that
// provisions), and PreBind, once a node is picked, binds the matching
// volumes to their claims and marks the claims to provision with
// volume.kubernetes.io/selected-node for the provisioner. It reads and
// writes claims and volumes through the scheduler's API client.
package volumebinding
