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
// Every attempt is explained. The full decision (explain.Decision: each
// evaluated node's filter result, or the plugin and reason that removed it;
// each score plugin's raw, normalised and weighted score per node; the sums,
// the chosen node, the attempt's time) goes into the pod's decision record:
// the SchedulingDecision (glassplane.io/v1alpha1) of the pod's name in the
// pod's namespace, with an ownerReference to the pod so that the garbage
// collector deletes it with the pod, holding the newest DecisionHistory
// attempts (default 10), each listing at most explain.MaxRecordNodes (20)
// best scored nodes and as many rejected ones of every rejecting plugin
// (the others counted), older attempts dropped first to keep its JSON
// under explain.MaxRecordBytes (512 KiB). Records are written off the
// scheduling loop by a few workers (decisions.go); an attempt waits for its
// write compressed (the binding goroutine encodes it before the bind, in
// the columnar form of explain/recordform.go, a few KiB at 1,000 nodes), so
// that a backlog of thousands of records, when the API is busier than the
// scheduler, costs megabytes, not the gigabyte its Decisions would. A pod's
// queued attempts are appended with one Create, or Get + Update, retried on
// conflict, so the record survives scheduler restarts and leader changes;
// a record left by an earlier pod of the same name is replaced and owned
// by the new pod. Because the record is an API object, the dashboard reads
// it whether the scheduler runs inside `glassplane up` or as `glassplane
// scheduler --kubeconfig`, and anyone the view role lets read a
// namespace's pods reads it with `kubectl get schedulingdecisions` or
// `kubectl describe schedulingdecision <pod>`. Nothing is added to the
// pod: Scheduled and FailedScheduling events carry the explain.Summary
// annotation (counts per rejecting plugin, the winner and its score).
//
// When no node fits, DefaultPreemption evicts the fewest, lowest-priority
// pods on the best node and nominates it (status.nominatedNodeName). As in
// kube-scheduler, it weighs policy/v1 PodDisruptionBudgets as best effort:
// on each node it spares first the pods whose eviction would take a
// budget's status.disruptionsAllowed below zero, and it prefers the node
// with the fewest such violations, but it still preempts when every node
// violates one; the decision counts them (explain.Decision.PDBViolations).
// An API that does not serve the budgets, or forbids listing them, leaves
// preemption without them (logged once) rather than stopping the
// scheduler. The scheduler may touch the API (pods, pods/binding,
// pods/status, pod deletion for preemption, nodes, PodDisruptionBudgets
// (list and watch), events, and schedulingdecisions.glassplane.io for the
// decision records) and its own subpackages, nothing else.
package scheduler
