package source

import (
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/glassplane/glassplane/auditring"
)

// DefaultAuditSize is how many recent audit events an AuditLog keeps.
const DefaultAuditSize = auditring.DefaultSize

// AuditRecord is an audit event with its place in the dashboard's log.
type AuditRecord = auditring.Record[*auditv1.Event]

// AuditLog keeps the most recent audit.k8s.io/v1 events the dashboard was
// given, from whichever source (Glassplane's auditevents API, an API
// server's audit webhook), decoded, and hands new ones to subscribers.
type AuditLog = auditring.Ring[*auditv1.Event]

// NewAuditLog returns a log of the given size (0: DefaultAuditSize).
func NewAuditLog(size int) *AuditLog { return auditring.New[*auditv1.Event](size) }
