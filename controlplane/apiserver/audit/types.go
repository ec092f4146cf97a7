package audit

import (
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/glassplane/glassplane/api/v1alpha1"
)

// The event types are audit.k8s.io/v1's own (k8s.io/apiserver), so what
// the ring keeps, the log writes and the auditevents resource serves is
// upstream's type.

// Level is how much of a request is recorded.
type Level = auditv1.Level

// Levels as in audit.k8s.io/v1.
const (
	LevelNone            = auditv1.LevelNone
	LevelMetadata        = auditv1.LevelMetadata
	LevelRequest         = auditv1.LevelRequest
	LevelRequestResponse = auditv1.LevelRequestResponse
)

// Stage is a point in a request's life.
type Stage = auditv1.Stage

// Stages as in audit.k8s.io/v1.
const (
	StageRequestReceived  = auditv1.StageRequestReceived
	StageResponseStarted  = auditv1.StageResponseStarted
	StageResponseComplete = auditv1.StageResponseComplete
	StagePanic            = auditv1.StagePanic
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

// UserInfo is the authenticated user, as an audit event records it.
type UserInfo = authenticationv1.UserInfo

// ExtraOf is a user's extra attributes as UserInfo holds them.
func ExtraOf(extra map[string][]string) map[string]authenticationv1.ExtraValue {
	if extra == nil {
		return nil
	}
	out := make(map[string]authenticationv1.ExtraValue, len(extra))
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// ObjectReference names the object a request acted on.
type ObjectReference = auditv1.ObjectReference

// Event is one audit.k8s.io/v1 Event.
type Event = auditv1.Event

// eventType is an event's apiVersion and kind.
var eventType = metav1.TypeMeta{APIVersion: auditv1.SchemeGroupVersion.String(), Kind: "Event"}

// NewEvent returns an event with the audit.k8s.io/v1 type meta filled in.
func NewEvent() *Event {
	return &Event{TypeMeta: eventType, Annotations: map[string]string{}}
}
