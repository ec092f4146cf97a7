// Package dynamic is the API server's dynamic admission control: it runs
// k8s.io/apiserver's own MutatingAdmissionPolicy, MutatingAdmissionWebhook,
// ValidatingAdmissionPolicy and ValidatingAdmissionWebhook plugins (the code
// kube-apiserver runs) as plugins of Glassplane's admission chain, and
// records each webhook call and policy binding of a request as a Stage in
// its audit annotation admission.glassplane.io/dynamic (stages.go,
// policy_stages.go). It turns the chain's Attributes
// into k8s.io/apiserver's admission.Attributes, gives the plugins client-go's
// scheme (unstructured objects for custom resources) as their
// ObjectInterfaces, with the kind of every served version (kinds.go: a
// custom resource's follow its CRD, and its objects convert between
// versions through the CRD's converter) so that matchPolicy Equivalent
// works, and resolves a webhook's Service to a ready endpoint (a call
// that found none is recorded with the resolver's reason, services.go).
// Each request's reinvocation context (admission.Attributes.Reinvocation)
// lasts across the plugins, so reinvocationPolicy IfNeeded works as
// upstream's: the chain runs its mutating plugins a second time when a
// webhook or policy asks.
// The plugins read their configurations, namespaces and policy parameters
// through a client of the API server (the API server's loopback identity):
// this package never touches storage. Until Start has synced them, a write
// waits for them up to ReadyWait and is then refused with 403 "not yet
// ready to handle request", as kube-apiserver's plugins do, so that a
// restart never lets writes past the webhooks and policies; the server's
// own bootstrap (Bootstrapping) and writes of webhook configurations and
// admission policies do not wait. Disable lets every write through until
// Start, for servers that may never start them (tests). After Start, a
// step with nothing of its kind configured (no webhook configurations, no
// policy bindings) is skipped, so the chain spends nothing on it.
package dynamic
