package web

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/glassplane/glassplane/api/v1alpha1"
	"github.com/glassplane/glassplane/web/source"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/components"
)

// pipeline is the order of an API request's stages with their chip labels.
// Decoding is shown only when the request's annotation names it.
var pipeline = []struct{ name, label string }{
	{"authentication", "authn"},
	{"authorization", "authz"},
	{"decoding", "decode"},
	{"admission", "admission"},
	{"etcd", "etcd"},
}

// stagesOf reads an audit event's pipeline: every stage is ok when the
// request passed it, failed where it stopped (stoppedAt, with what the
// stage said: "not found", "already exists"), skipped otherwise, with when
// the request entered it where that is recorded. It returns nil when the
// event has no pipeline annotation.
func stagesOf(ev *auditv1.Event) []components.Stage {
	ann := ev.Annotations
	list, ok := ann[v1alpha1.AnnotationStages]
	if !ok && ann[v1alpha1.AnnotationFailedStage] == "" {
		return nil
	}
	failed := stoppedAt(ev)
	passed := map[string]bool{}
	for _, s := range strings.Split(list, ",") {
		passed[strings.TrimSpace(s)] = true
	}
	starts := stageStarts(ann[v1alpha1.AnnotationStageStarts])
	out := make([]components.Stage, 0, len(pipeline))
	for _, p := range pipeline {
		if p.name == "decoding" && !passed[p.name] && failed != p.name {
			continue
		}
		state, detail := "skipped", ""
		switch {
		case p.name == failed:
			state, detail = "failed", stopReason(ev)
		case passed[p.name]:
			state = "ok"
		}
		start, timed := starts[p.name]
		st := components.Stage{Name: p.name, Label: p.label, State: state, Detail: detail, Start: start, Timed: timed}
		if p.name == "admission" {
			calls, note := admissionCallsOf(ann)
			st.Calls, st.CallsNote = admissionCallRows(calls), note
		}
		out = append(out, st)
	}
	return out
}

// stageOrder is each stage's place in the pipeline.
var stageOrder = func() map[string]int {
	m := map[string]int{}
	for i, p := range pipeline {
		m[p.name] = i
	}
	return m
}()

// stageOfCode is the stage that answers a refusal with this HTTP status:
// a 401 is authentication's, a 403 authorization's, a 400 (or a body too
// large or of an unknown type) decoding's, a 422 validation's (admission),
// a 404, 409, 410 or 412 storage's (etcd: not found, already exists or a
// conflict, a compacted revision, a failed precondition). Other codes name
// no stage.
func stageOfCode(code int) string {
	switch code {
	case http.StatusUnauthorized:
		return "authentication"
	case http.StatusForbidden:
		return "authorization"
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusNotAcceptable:
		return "decoding"
	case http.StatusUnprocessableEntity:
		return "admission"
	case http.StatusNotFound, http.StatusConflict, http.StatusGone, http.StatusPreconditionFailed:
		return "etcd"
	}
	return ""
}

// stoppedAt is the pipeline stage where a refused request really stopped,
// "" for one that went through. The API server's failed-stage annotation
// names the last stage the request entered, which is where it stopped or
// before it: a DELETE that finds nothing fails in its handler, after
// authorization but before it enters etcd. So the stage is the later of
// the annotated one and the one the response's status belongs to
// (stageOfCode): a 404 stops at storage, a 403 from admission (a namespace
// being deleted) at admission. A 404 for no resource at all (an unknown
// path) and server errors keep the annotated stage.
func stoppedAt(ev *auditv1.Event) string {
	annotated := ev.Annotations[v1alpha1.AnnotationFailedStage]
	code := auditCode(ev)
	if code < 400 {
		return annotated
	}
	byCode := stageOfCode(code)
	if code == http.StatusNotFound && (ev.ObjectRef == nil || ev.ObjectRef.Resource == "") {
		byCode = ""
	}
	switch {
	case byCode == "" || annotated == "authentication":
		// Nothing is entered between authentication and authorization: a
		// request refused there never got further.
		return annotated
	case annotated == "":
		return byCode
	case stageOrder[annotated] > stageOrder[byCode]:
		return annotated
	}
	return byCode
}

// stopReasons say in a few words why a stage refused a request, by the
// Status reason.
var stopReasons = map[metav1.StatusReason]string{
	metav1.StatusReasonUnauthorized:          "who are you? unknown",
	metav1.StatusReasonForbidden:             "forbidden",
	metav1.StatusReasonBadRequest:            "bad request",
	metav1.StatusReasonRequestEntityTooLarge: "too large",
	metav1.StatusReasonUnsupportedMediaType:  "unsupported media type",
	metav1.StatusReasonInvalid:               "invalid",
	metav1.StatusReasonNotFound:              "not found",
	metav1.StatusReasonAlreadyExists:         "already exists",
	metav1.StatusReasonConflict:              "conflict",
	metav1.StatusReasonGone:                  "gone (compacted)",
	metav1.StatusReasonMethodNotAllowed:      "method not allowed",
	metav1.StatusReasonTooManyRequests:       "too many requests",
	metav1.StatusReasonTimeout:               "timed out",
	metav1.StatusReasonInternalError:         "internal error",
}

// stopReason says in a few words why the request was refused ("not
// found", "already exists"); the Status message says it in full.
func stopReason(ev *auditv1.Event) string {
	if ev.ResponseStatus == nil {
		return "refused"
	}
	if r, ok := stopReasons[ev.ResponseStatus.Reason]; ok {
		return r
	}
	if t := http.StatusText(int(ev.ResponseStatus.Code)); ev.ResponseStatus.Code >= 400 && t != "" {
		return strings.ToLower(t)
	}
	return "refused"
}

// stageStarts reads pipeline.glassplane.io/stage-starts-us
// (authentication=3,authorization=41,...): when the request entered each
// stage. Malformed entries are left out.
func stageStarts(v string) map[string]time.Duration {
	if v == "" {
		return nil
	}
	out := map[string]time.Duration{}
	for entry := range strings.SplitSeq(v, ",") {
		name, us, ok := strings.Cut(entry, "=")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(us, 10, 64)
		if err != nil || n < 0 {
			continue
		}
		out[name] = time.Duration(n) * time.Microsecond
	}
	return out
}

// auditRef is what an audit event acted on, with the name taken from the
// etcd key when the request named none (a create).
func auditRef(ev *auditv1.Event) (resource, subresource, namespace, name string) {
	if ev.ObjectRef != nil {
		resource, subresource = ev.ObjectRef.Resource, ev.ObjectRef.Subresource
		namespace, name = ev.ObjectRef.Namespace, ev.ObjectRef.Name
	}
	if name == "" {
		if ref, ok := parseKey(ev.Annotations[v1alpha1.AnnotationEtcdKey]); ok {
			name, namespace = ref.Name, ref.Namespace
			if resource == "" {
				resource = apiResource(ref.StorageResource)
			}
		}
	}
	return resource, subresource, namespace, name
}

// auditAction reads like "create pods/binding".
func auditAction(ev *auditv1.Event) string {
	resource, sub, _, _ := auditRef(ev)
	if sub != "" {
		return ev.Verb + " " + resource + "/" + sub
	}
	if resource == "" {
		return ev.Verb
	}
	return ev.Verb + " " + resource
}

// auditFailed tells whether the request was refused.
func auditFailed(ev *auditv1.Event) bool {
	if ev.Annotations[v1alpha1.AnnotationFailedStage] != "" {
		return true
	}
	return ev.ResponseStatus != nil && ev.ResponseStatus.Code >= 400
}

// auditMessage is the status message of a refused request, or the
// authorization reason of an allowed one.
func auditMessage(ev *auditv1.Event) string {
	if ev.ResponseStatus != nil && ev.ResponseStatus.Message != "" {
		return ev.ResponseStatus.Message
	}
	return ev.Annotations[v1alpha1.AnnotationReason]
}

// auditCode is the HTTP status of the response.
func auditCode(ev *auditv1.Event) int {
	if ev.ResponseStatus == nil {
		return 0
	}
	return int(ev.ResponseStatus.Code)
}

// mutating reports whether a verb changes state; the feed shows only those.
func mutating(verb string) bool {
	switch verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// eventTime is when a core Event happened: eventTime, else lastTimestamp,
// firstTimestamp, or its creation.
func eventTime(ev *corev1.Event) time.Time {
	switch {
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case !ev.FirstTimestamp.IsZero():
		return ev.FirstTimestamp.Time
	}
	return ev.CreationTimestamp.Time
}

// recordedTimes maps the etcd key of every core Event the ring saw written
// to when the API server received that write. Events in the legacy shape only
// carry second-precision timestamps; the write's audit time orders them
// among the requests to the millisecond.
func recordedTimes(ring *source.AuditLog) map[string]time.Time {
	times := map[string]time.Time{}
	if ring == nil {
		return times
	}
	for _, rec := range ring.Find(func(ev *auditv1.Event) bool {
		return ev.ObjectRef != nil && ev.ObjectRef.Resource == "events" && mutating(ev.Verb) && ev.Annotations[v1alpha1.AnnotationEtcdKey] != ""
	}) {
		times[rec.Event.Annotations[v1alpha1.AnnotationEtcdKey]] = rec.Event.RequestReceivedTimestamp.Time
	}
	return times
}

// eventClockSkew is how far a more precise time may lie from an Event's
// second-precision timestamp and still be taken as the same moment.
const eventClockSkew = 2 * time.Second

// preciseEventTime is eventTime, or for an Event without one (the legacy
// shape keeps seconds only): for a first occurrence, the moment client-go's
// recorder wrote into its name ("<object>.<hex UnixNano>"); otherwise the
// time its latest write was received. Either is used only when it agrees
// with the Event's own timestamp.
func preciseEventTime(ev *corev1.Event, key string, recorded map[string]time.Time) time.Time {
	t := eventTime(ev)
	if !ev.EventTime.IsZero() {
		return t
	}
	agrees := func(at time.Time) bool {
		d := at.Sub(t.Truncate(time.Second))
		return d >= 0 && d < eventClockSkew
	}
	if ev.Count <= 1 {
		if i := strings.LastIndexByte(ev.Name, '.'); i >= 0 {
			if nanos, err := strconv.ParseInt(ev.Name[i+1:], 16, 64); err == nil && agrees(time.Unix(0, nanos)) {
				return time.Unix(0, nanos)
			}
		}
	}
	if at, ok := recorded[key]; ok && agrees(at) {
		return at
	}
	return t
}

// eventComponent is who reported a core Event.
func eventComponent(ev *corev1.Event) string {
	if ev.Source.Component != "" {
		return ev.Source.Component
	}
	return ev.ReportingController
}
