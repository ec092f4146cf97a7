// Package statefulset is the StatefulSet controller, a port of
// kube-controller-manager's: each StatefulSet runs pods with stable names
// <set>-<ordinal> (from spec.ordinals.start), hostname and subdomain
// (spec.serviceName), and the labels statefulset.kubernetes.io/pod-name,
// apps.kubernetes.io/pod-index and controller-revision-hash. OrderedReady
// creates one pod at a time once its predecessors are Running, Ready and
// available, and removes the highest ordinal first; Parallel creates and
// removes them all at once. Each template is a ControllerRevision named
// <set>-<hash> holding upstream's strategic merge patch of spec.template,
// so `kubectl rollout history/undo/status` work; RollingUpdate replaces
// pods from the highest ordinal down to the partition, at most
// maxUnavailable at a time, and OnDelete waits for pods to be deleted.
// volumeClaimTemplates become PersistentVolumeClaims <template>-<set>-
// <ordinal> created before their pod, with owner references that follow
// persistentVolumeClaimRetentionPolicy (whenDeleted, whenScaled); while the
// API does not serve claims the pod is not created and a FailedCreate event
// says why. It reads StatefulSets, ControllerRevisions and pods through
// informers, reads and writes claims directly through the API, and writes
// pods, ControllerRevisions, StatefulSet status and events with upstream's
// reasons (SuccessfulCreate "create Pod web-0 in StatefulSet web
// successful", SuccessfulDelete, FailedCreate, ...).
package statefulset
