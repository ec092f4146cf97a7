// Package web is Glassplane's dashboard: the Echo handlers for the overview,
// the apply form, an object's timeline and the etcd key explorer, and the
// websocket hub that streams changes to open pages. It reads cluster state
// only through the object store (storage.Store: List, Get, Watch) and the
// audit ring, as any watcher of the API does, and it writes only through the
// real API server as a client (the apply form), so every change it makes is
// authenticated, admitted and audited like kubectl's. Pages are rendered by
// package components; browser scripts and styles come from package static.
package web
