// Package daemonset is the DaemonSet controller: it runs one pod of each
// DaemonSet on every node that should run it, as Kubernetes' daemon set
// controller does. A node should run it when it fits the template's
// nodeName, nodeSelector and required node affinity and every NoSchedule
// and NoExecute taint is tolerated, counting the tolerations Kubernetes
// adds to daemon pods (not-ready and unreachable NoExecute; disk-, memory-
// and pid-pressure and unschedulable NoSchedule); a pod stays on a node
// whose only untolerated taints are NoSchedule. Pods are created with a
// required node affinity on metadata.name, so the scheduler binds them to
// their node. Each template is recorded as a ControllerRevision named
// <daemonset>-<hash> and its pods carry controller-revision-hash=<hash>;
// a RollingUpdate replaces old pods while at most maxUnavailable nodes
// lack an available pod, or with maxSurge starts the new pod beside the
// old one on up to maxSurge nodes at a time and removes the old one once
// the new one is available; OnDelete waits for pods to be deleted. It writes
// the status `kubectl rollout status` reads (desired, current, ready,
// updated, available numbers and observedGeneration) and reports
// SuccessfulCreate and SuccessfulDelete events. It reads DaemonSets,
// ControllerRevisions, pods and nodes through informers and writes pods,
// ControllerRevisions, DaemonSet status and events through the API.
package daemonset
