// Package web is Glassplane's dashboard: the Echo handlers for the cluster
// map (home), the apply form, an object's timeline (with its owners and its
// dependents' steps), the request pipeline, the Events and Nodes lists and
// the etcd explorer (key history through revisions, diffs, the cluster at a
// past revision), the optional login token, and the websocket hub that
// streams changes to open pages. It reads cluster state only through the
// object store (storage.Store: List, Get, Watch, and its etcd client for
// reads at past revisions) and the audit ring, as any watcher of the API
// does, and it writes only through the real API server as a client (the
// apply form), so every change it makes is authenticated, admitted and
// audited like kubectl's. Pages are rendered by package components; browser
// scripts and styles come from package static.
package web
