// Package auditwebhook receives a Kubernetes API server's audit events as
// its webhook backend does send them (kube-apiserver's
// --audit-webhook-config-file): POSTs of an audit.k8s.io/v1 EventList in
// JSON, batched. Receiver decodes each batch and hands the events, in
// order, to its callback; a body that is not an EventList gets a 400 with
// what was wrong, and one over MaxBodyBytes a 413, so the sender's retries
// do not hide a misconfiguration. `glassplane dashboard
// --audit-webhook-listen` serves it to show an upstream cluster's requests
// (issue 27).
package auditwebhook
