// Package explain defines how the scheduler explains a decision: the JSON
// Decision of one attempt; the History of a pod's attempts kept, compressed,
// in the pod's decision record (a ConfigMap in Glassplane's own namespace
// RecordNamespace, named RecordName(namespace, pod), see EncodeHistory and
// DecodeHistory); the compact Decision the dashboard's pod page shows
// (Compact); and the Summary on the attempt's Event under
// SummaryAnnotation. Nothing is written into the pod's namespace or onto the
// pod. It is a leaf package that only needs apimachinery's metav1, so the
// dashboard can import it to read decisions without pulling in the
// scheduler.
package explain
