package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// AuditEvent is one audit event the API server recorded, as
// audit.k8s.io/v1 shapes it, with the metadata a list and watch need:
// metadata.name is "<auditID>.<stage>" and metadata.resourceVersion the
// event's place in the server's recent-events ring, so a watch resumes
// after the last event it saw.
type AuditEvent struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Event is the audit.k8s.io/v1 Event, as an audit webhook backend
	// receives it.
	Event auditv1.Event `json:"event"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// AuditEventList is the audit events the API server still keeps, oldest
// first.
type AuditEventList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AuditEvent `json:"items"`
}
