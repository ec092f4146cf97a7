// Package auditring keeps the most recent audit.k8s.io/v1 Events in a
// ring and hands new ones to subscribers. The API server records its
// requests in one (controlplane/apiserver/audit adds its policy and log
// file), and the dashboard keeps the events it is given in another
// (web/source.AuditLog, fed by Glassplane's auditevents API or an API
// server's audit webhook); it depends on neither.
package auditring
