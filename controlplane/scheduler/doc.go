// Package scheduler is Glassplane's scheduler: an API client (client-go
// informers, never etcd) that watches pending pods whose spec.schedulerName
// is its own, filters and scores the nodes with the plugins of its profile,
// binds each pod through the pods/binding subresource and reports the
// outcome as core/v1 Events (Scheduled, FailedScheduling) and the pod's
// PodScheduled condition, worded as kube-scheduler words them.
//
// Profiles (one per spec.schedulerName) come from Config or a
// KubeSchedulerConfiguration file (LoadConfigFile); with
// LeaderElection.LeaderElect the scheduler schedules only while it holds the
// kube-system/kube-scheduler Lease, and stops when it loses it.
//
// Every attempt is explained: the scheduler keeps the last decisions per pod
// in memory (Decisions) and attaches the compact JSON of the decision that
// bound a pod to the Binding, so it shows on the pod under
// explain.DecisionAnnotation. When no node fits, DefaultPreemption evicts
// the fewest, lowest-priority pods on the best node and nominates it
// (status.nominatedNodeName). It may touch the API (pods, pods/binding,
// pods/status, pod deletion for preemption, nodes, events) and its own
// subpackages, nothing else.
package scheduler
