// Package audit holds the API server's audit events, k8s.io/apiserver's
// audit.k8s.io/v1 types: one event per request with its stages, user, verb, object reference,
// response status and annotations (authentication, authorization, admission,
// the pipeline stages passed and when each began, the etcd key and revision
// written). A Ring (package auditring's, with the policy and the log)
// keeps recent events in memory, each as its protobuf encoding, for the
// auditevents API and fans new ones out to subscribers, and writes them as JSON lines to --audit-log-path. A Policy (audit.k8s.io/v1, --audit-policy-file)
// decides each event's level, None, Metadata, Request or RequestResponse, by
// the first rule matching its user, groups, verb, resource, namespace or
// non-resource URL, and which stages are omitted.
package audit
