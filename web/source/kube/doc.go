// Package kube gives the dashboard its sources (package web/source) from
// a cluster's Kubernetes API, as one identity (the dashboard's own
// rest.Config), so that it runs the same against Glassplane and against
// upstream Kubernetes:
//
//   - Store reads the cluster's objects by their etcd keys
//     (/registry/pods/default/web): discovery says
//     which resources there are, and kube-apiserver's key layout (the same
//     in Glassplane) which key each object has. It lists and then watches
//     every resource, as client-go's informers do, into an in-memory
//     mirror of their objects and a backlog of recent changes, and
//     streams the changes, merged. Get, List and Newest read the mirror
//     once it holds the resources they concern; before, for a resource
//     the identity may not list and watch, and for a List at a revision
//     after which the resources listed changed, they read the API (at an
//     older revision with resourceVersionMatch=Exact). A watch that falls
//     behind compaction lists its resource again, and the backlog gets
//     the differences (not the changes in between) at the list's
//     revision. Lists go through the dynamic client; watches are read as
//     the API's JSON stream, and a watched object's value is the bytes
//     the server sent, not decoded into maps and encoded again (only its
//     kind, name, namespace and resourceVersion are decoded, with each
//     frame, in one pass of go-json-experiment's decoder). Its values
//     are the objects as the API serves them (JSON),
//     not the bytes in etcd; it cannot tell a key's create revision (0),
//     keys that are not objects (/registry/ranges/...,
//     /registry/masterleases/), nor the objects the identity may not read.
//     The mirror holds every readable object's JSON once, shared with the
//     backlog's changes and with what reads return (callers must not
//     modify a Value); a value it replaced stays in memory while the
//     backlog keeps the change that carried it.
//     Changes of different resources arrive in about, not exactly,
//     revision order: a read at the store's revision R and a watch from R
//     neither repeat nor miss a change the store had applied when it read,
//     but a change of another resource still on its way with a revision
//     at or before R is missed.
//   - EtcdAPI is the etcd key explorer's view through Glassplane's
//     read-only etcdkeys.glassplane.io API; EtcdDirect reads a cluster's
//     etcd itself (package etcdview) for clusters that do not serve it,
//     given its endpoints and client certificate.
//   - WatchAudit copies Glassplane's audit stream
//     (auditevents.glassplane.io) into the dashboard's audit log;
//     against other clusters it says ErrNotServed and the dashboard
//     takes the audit webhook instead.
//
// It reads the cluster only through the API (and, for EtcdDirect, etcd's
// client API): it imports none of Glassplane's API server, storage or
// etcd packages, and writes nothing.
package kube
