// Package audit holds the API server's audit events in the audit.k8s.io/v1
// shape: one event per request with its stages, user, verb, object reference,
// response status and annotations (authentication, authorization, admission,
// the etcd key and revision written). A Ring keeps recent events in memory for
// the dashboard and fans new ones out to subscribers; a Log writes them as
// JSON lines to --audit-log-path.
package audit
