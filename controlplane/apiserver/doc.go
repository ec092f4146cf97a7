// Package apiserver is Glassplane's Kubernetes REST API: discovery, the
// generic registry that serves every resource from one table of entries
// (get, list, watch, create, update, patch, delete, deletecollection and the
// status, binding and scale subresources), server-side tables for kubectl,
// and an audit event for every request. It reads and writes objects only
// through controlplane/storage, authenticates and authorizes through
// apiserver/auth and runs apiserver/admission before every write.
package apiserver
