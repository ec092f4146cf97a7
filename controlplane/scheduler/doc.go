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
// a ConfigMap in Glassplane's own namespace glassplane-system
// (explain.RecordNamespace), never in the pod's, named
// explain.RecordName(namespace, pod) ("<namespace>.<pod>", cut short with a
// hash beyond 253 characters), labelled scheduler.glassplane.io/decisions=true
// and with the pod's namespace, name and uid (explain.RecordLabels), holding
// the gzip-compressed JSON explain.History under binaryData
// "decisions.json.gz": the newest DecisionHistory attempts (default 10),
// older ones dropped first to stay under 900 KiB (a 1,000-node attempt,
// stored in columns, see explain/recordform.go, compresses to a few KiB).
// Records are written off the scheduling loop by a few workers
// (decisions.go); an attempt waits for its write already compressed (the
// binding goroutine encodes it before the bind), so that a backlog of
// thousands of records, when the API is busier than the scheduler, costs
// megabytes, not the gigabyte its Decisions would. A pod's queued attempts
// are appended with one Create, or Get + Update, retried on conflict, so the
// record survives scheduler restarts and leader changes; a ConfigMap of that
// name without the label is left alone. An ownerReference cannot cross
// namespaces, so the scheduler deletes a record itself: when it sees its pod
// deleted, and, when it starts scheduling, every record whose pod uid no
// longer exists (pods deleted while no scheduler ran); each delete carries
// the record's uid and resourceVersion as preconditions. Because the record
// is an API object, the dashboard reads it whether the scheduler runs inside
// `glassplane up` or as `glassplane scheduler --kubeconfig`, and an admin
// reads it with `kubectl get cm -n glassplane-system`. Nothing is added to
// the pod: Scheduled and FailedScheduling events carry the explain.Summary
// annotation (counts per rejecting plugin, the winner and its score, the
// record's name).
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
// (list and watch), events, and ConfigMaps in glassplane-system for
// decision records) and its own subpackages, nothing else.
package scheduler
