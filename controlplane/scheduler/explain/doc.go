// Package explain defines how the scheduler explains a decision: the JSON
// Decision of one attempt; the History of a pod's attempts kept, compressed,
// in the pod's decision record (a ConfigMap named RecordName(pod), see
// EncodeHistory and DecodeHistory); the compact Decision attached to the
// Binding (and so to the pod) under DecisionAnnotation; and the Summary on
// the attempt's Event under SummaryAnnotation. It is a leaf package that only
// needs apimachinery's metav1, so the dashboard can import it to read
// decisions without pulling in the scheduler.
package explain
