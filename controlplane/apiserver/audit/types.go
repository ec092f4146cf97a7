package audit

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/glassplane/glassplane/api/v1alpha1"
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

// Annotation keys Glassplane writes: api/v1alpha1's, which document them.
const (
	AnnotationAuthenticator    = v1alpha1.AnnotationAuthenticator
	AnnotationDecision         = v1alpha1.AnnotationDecision
	AnnotationReason           = v1alpha1.AnnotationReason
	AnnotationAdmissionPrefix  = v1alpha1.AnnotationAdmissionPrefix
	AnnotationDynamicAdmission = v1alpha1.AnnotationDynamicAdmission
	AnnotationEtcdKey          = v1alpha1.AnnotationEtcdKey
	AnnotationEtcdRevision     = v1alpha1.AnnotationEtcdRevision
	AnnotationEtcdValueSize    = v1alpha1.AnnotationEtcdValueSize
	AnnotationStages           = v1alpha1.AnnotationStages
	AnnotationFailedStage      = v1alpha1.AnnotationFailedStage
	AnnotationStageStarts      = v1alpha1.AnnotationStageStarts
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
