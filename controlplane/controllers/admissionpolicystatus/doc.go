// Package admissionpolicystatus is kube-controller-manager's
// validatingadmissionpolicy-status controller: it type-checks each
// ValidatingAdmissionPolicy's expressions against the schemas of the kinds
// it matches (k8s.io/apiserver's TypeChecker over the API server's
// /openapi/v3) and writes status.typeChecking and status.observedGeneration.
// It is an API client: an informer of the policies and their status
// subresource, never storage.
package admissionpolicystatus
