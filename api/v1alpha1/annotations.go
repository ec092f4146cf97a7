package v1alpha1

// Audit annotations Glassplane's API server writes on its audit events, in
// Kubernetes' style (authorization.k8s.io/decision and
// authorization.k8s.io/reason are Kubernetes' own). They are part of the
// API: the dashboard reads them from the audit events it watches or
// receives, and a cluster that does not write them (upstream Kubernetes)
// shows the steps its events do tell.
const (
	AnnotationAuthenticator = "authentication.glassplane.io/authenticator"
	AnnotationDecision      = "authorization.k8s.io/decision"
	AnnotationReason        = "authorization.k8s.io/reason"
	// AnnotationAdmissionPrefix + plugin name records what that admission
	// plugin did (e.g. a JSON patch of the defaults it added).
	AnnotationAdmissionPrefix = "admission.glassplane.io/"
	// AnnotationDynamicAdmission is a JSON array, in call order, of the
	// admission webhooks called and admission policies evaluated for the
	// request: {"kind": "MutatingWebhook" | "ValidatingWebhook" |
	// "MutatingAdmissionPolicy" | "ValidatingAdmissionPolicy",
	// "configuration": configuration or policy name, "name": webhook or
	// binding name, "durationMicros", "result": "allowed" | "denied" |
	// "patched" | "error-ignored" | "error", "message", and "patch" (a JSON
	// patch) when patched.
	AnnotationDynamicAdmission = AnnotationAdmissionPrefix + "dynamic"
	AnnotationEtcdKey          = "storage.glassplane.io/etcd-key"
	AnnotationEtcdRevision     = "storage.glassplane.io/etcd-revision"
	AnnotationEtcdValueSize    = "storage.glassplane.io/value-size"
	// AnnotationStages lists the pipeline steps the request passed, in order,
	// comma separated (authentication,authorization,admission,etcd), and
	// AnnotationFailedStage names the one that refused it.
	AnnotationStages      = "pipeline.glassplane.io/stages"
	AnnotationFailedStage = "pipeline.glassplane.io/failed-stage"
	// AnnotationStageStarts says when the request entered each of those
	// steps, in microseconds after it was received
	// (authentication=3,authorization=41,admission=96,etcd=388): the etcd
	// write of a create began 388 µs after its request arrived.
	AnnotationStageStarts = "pipeline.glassplane.io/stage-starts-us"
)
