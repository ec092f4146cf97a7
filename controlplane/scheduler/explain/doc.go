// Package explain defines how the scheduler explains a decision: the
// Decision of one attempt; the History of a pod's attempts and its record,
// the SchedulingDecision (glassplane.io/v1alpha1) named after the pod in
// the pod's namespace and owned by it (Record, HistoryOf; Cap keeps it
// within MaxRecordNodes per attempt and MaxRecordBytes); the compressed
// form the scheduler holds attempts in until it writes them
// (EncodeHistory, DecodeHistory); the compact Decision the dashboard's pod
// page shows (Compact); and the Summary on the attempt's Event under
// SummaryAnnotation. Nothing is written onto the pod. It is a leaf package
// that needs only apimachinery and Glassplane's API types, so the
// dashboard can import it to read decisions without pulling in the
// scheduler.
package explain
