package audit

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// Level is how much of a request is recorded.
type Level string

// Levels as in audit.k8s.io/v1.
const (
	LevelNone            Level = "None"
	LevelMetadata        Level = "Metadata"
	LevelRequest         Level = "Request"
	LevelRequestResponse Level = "RequestResponse"
)

// Stage is a point in a request's life.
type Stage string

// Stages as in audit.k8s.io/v1.
const (
	StageRequestReceived  Stage = "RequestReceived"
	StageResponseStarted  Stage = "ResponseStarted"
	StageResponseComplete Stage = "ResponseComplete"
	StagePanic            Stage = "Panic"
)

// Annotation keys Glassplane writes, in Kubernetes' style
// (authorization.k8s.io/decision and authorization.k8s.io/reason are
// Kubernetes' own).
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

// UserInfo is the authenticated user.
type UserInfo struct {
	Username string              `json:"username,omitempty"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

// ObjectReference names the object a request acted on.
type ObjectReference struct {
	Resource        string    `json:"resource,omitempty"`
	Namespace       string    `json:"namespace,omitempty"`
	Name            string    `json:"name,omitempty"`
	UID             types.UID `json:"uid,omitempty"`
	APIGroup        string    `json:"apiGroup,omitempty"`
	APIVersion      string    `json:"apiVersion,omitempty"`
	ResourceVersion string    `json:"resourceVersion,omitempty"`
	Subresource     string    `json:"subresource,omitempty"`
}

// Event is one audit event, shaped as audit.k8s.io/v1 Event.
type Event struct {
	metav1.TypeMeta          `json:",inline"`
	Level                    Level             `json:"level"`
	AuditID                  types.UID         `json:"auditID"`
	Stage                    Stage             `json:"stage"`
	RequestURI               string            `json:"requestURI"`
	Verb                     string            `json:"verb"`
	User                     UserInfo          `json:"user"`
	ImpersonatedUser         *UserInfo         `json:"impersonatedUser,omitempty"`
	SourceIPs                []string          `json:"sourceIPs,omitempty"`
	UserAgent                string            `json:"userAgent,omitempty"`
	ObjectRef                *ObjectReference  `json:"objectRef,omitempty"`
	ResponseStatus           *metav1.Status    `json:"responseStatus,omitempty"`
	RequestObject            *runtime.Unknown  `json:"requestObject,omitempty"`
	ResponseObject           *runtime.Unknown  `json:"responseObject,omitempty"`
	RequestReceivedTimestamp metav1.MicroTime  `json:"requestReceivedTimestamp"`
	StageTimestamp           metav1.MicroTime  `json:"stageTimestamp"`
	Annotations              map[string]string `json:"annotations,omitempty"`
}

// NewEvent returns an event with the audit.k8s.io/v1 type meta filled in.
func NewEvent() *Event {
	return &Event{TypeMeta: metav1.TypeMeta{APIVersion: "audit.k8s.io/v1", Kind: "Event"}, Annotations: map[string]string{}}
}
