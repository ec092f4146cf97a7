// Package cache is the scheduler's view of the cluster: every node and the
// pods on it, fed by the node and assigned-pod informers, plus the pods the
// scheduler has assumed onto a node and whose binding it has not yet seen
// come back. Each cycle works on a Snapshot copied from it, so plugins see
// one consistent picture; nodes are kept in a list ordered by when they
// last changed, as kube-scheduler's cache keeps them, so bringing a
// snapshot up to date copies and visits only the nodes changed since. It
// touches no API server.
package cache
