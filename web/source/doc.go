// Package source is what the dashboard (package web) reads a cluster
// through, as interfaces and plain types, so that the dashboard depends on
// no server internals: Store (the cluster's objects under the etcd keys
// the API server stores them at, with their revisions: get, list, watch),
// Etcd (the explorer's read-only view of the raw keys and each key's
// history) and AuditLog (the audit.k8s.io/v1 events the dashboard was
// given, decoded, kept in package auditring's ring with subscribers, the
// ring type the API server keeps its events in, encoded). Package web/source/kube
// implements Store and Etcd over the Kubernetes API of any cluster
// (Glassplane's, or upstream's with etcd read directly) and feeds an
// AuditLog from Glassplane's auditevents API; package auditwebhook feeds
// one from an API server's audit webhook. web/source/storesource adapts an
// in-process store for web's own tests only.
package source
