package source

import "github.com/glassplane/glassplane/auditring"

// DefaultAuditSize is how many recent audit events an AuditLog keeps.
const DefaultAuditSize = auditring.DefaultSize

// AuditRecord is an audit event with its place in the dashboard's log.
type AuditRecord = auditring.Record

// AuditLog keeps the most recent audit.k8s.io/v1 events the dashboard was
// given, from whichever source (Glassplane's auditevents API, an API
// server's audit webhook), and hands new ones to subscribers: the same
// ring the API server records its requests in.
type AuditLog = auditring.Ring

// NewAuditLog returns a log of the given size (0: DefaultAuditSize).
func NewAuditLog(size int) *AuditLog { return auditring.New(size) }
