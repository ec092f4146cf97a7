// Package auditring keeps the most recent audit events in a ring and hands
// new ones to subscribers. The API server records its requests in one, each
// event kept as its protobuf encoding (controlplane/apiserver/audit adds its
// policy and log file, and serves the encodings without encoding them
// again), and the dashboard keeps the audit.k8s.io/v1 Events it is given,
// decoded, in another (web/source.AuditLog, fed by Glassplane's auditevents
// API or an API server's audit webhook); it depends on neither.
package auditring
