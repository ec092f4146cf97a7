// Package deployment is the Deployment controller: it owns one ReplicaSet
// per pod template (named <deployment>-<pod-template-hash>), rolls from
// the old ones to the new one by the RollingUpdate (maxSurge,
// maxUnavailable) or Recreate strategy, scales proportionally, keeps the
// deployment.kubernetes.io/revision annotations and revisionHistoryLimit,
// honours paused, and reports the Progressing and Available conditions
// against progressDeadlineSeconds. Each scale is a ScalingReplicaSet event
// on the Deployment. It reads Deployments, ReplicaSets and pods through
// informers and writes ReplicaSets and Deployments through the API.
package deployment
