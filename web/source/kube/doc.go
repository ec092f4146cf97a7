// Package kube gives the dashboard its sources (package web/source) from
// a cluster's Kubernetes API, as one identity (the dashboard's own
// rest.Config), so that it runs the same against Glassplane and against
// upstream Kubernetes:
//
//   - Store reads the cluster's objects by their etcd keys
//     (/registry/pods/default/web) with the dynamic client: discovery says
//     which resources there are, and kube-apiserver's key layout (the same
//     in Glassplane) which key each object has. It gets and lists objects
//     by key, lists at an older revision (resourceVersionMatch=Exact),
//     and streams changes with one watch per resource, merged, keeping a
//     backlog of recent changes for Newest and for watches that resume.
//     Its values are the objects as the API serves them (JSON), not the
//     bytes in etcd; it cannot tell a key's create revision (0), keys
//     that are not objects (/registry/ranges/..., /registry/masterleases/),
//     nor the objects the identity may not read. Changes of different
//     resources arrive in about, not exactly, revision order.
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
