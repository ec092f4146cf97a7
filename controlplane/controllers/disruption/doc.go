// Package disruption is the disruption controller: it keeps the status of
// each policy/v1 PodDisruptionBudget, which the eviction API reads, as
// Kubernetes' disruption controller does. For the pods in the budget's
// namespace that its selector matches (none for a nil selector, all for an
// empty one) it counts expectedPods and desiredHealthy (an integer
// minAvailable counts the pods; maxUnavailable and a percentage
// minAvailable count spec.replicas of the pods' controllers, a ReplicaSet
// or the Deployment above it, each once, rounding percentages up),
// currentHealthy (ready, not being deleted, not in status.disruptedPods)
// and disruptionsAllowed, and sets the DisruptionAllowed condition
// (SufficientPods or InsufficientPods). Entries of status.disruptedPods go
// once their pod is gone or being deleted, or DeletionTimeout after the
// eviction, when the budget is looked at again. When a scale is needed, a
// pod whose controller is missing from the cache or of another kind
// (scale subresources are not read here) makes the budget fail safe: no disruptions, condition reason
// SyncFailed with the error, retried with backoff. Pods
// without a controller are left out of the scale with an UnmanagedPods
// event. Unlike Kubernetes it does not reset stale DisruptionTarget pod
// conditions. Events: NoPods, UnmanagedPods,
// CalculateExpectedPodCountFailed, NotDeleted. It reads budgets, pods,
// ReplicaSets and Deployments through informers and writes budget status
// and events through the API.
package disruption
