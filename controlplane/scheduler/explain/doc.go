// Package explain defines how the scheduler explains a decision: the JSON
// Decision it keeps per pod attempt and attaches to the Binding (and so to
// the pod) under DecisionAnnotation. It is a leaf package that only needs
// apimachinery's metav1, so the dashboard can import it to read
// decisions without pulling in the scheduler.
package explain
