package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/glassplane/glassplane/controlplane/apiserver/admission"
	"github.com/glassplane/glassplane/controlplane/apiserver/audit"
	"github.com/glassplane/glassplane/controlplane/apiserver/auth"
	"github.com/glassplane/glassplane/controlplane/storage"
)

// Pipeline stage names recorded in pipeline.glassplane.io/stages.
const (
	stageAuthentication = "authentication"
	stageAuthorization  = "authorization"
	stageDecoding       = "decoding"
	stageAdmission      = "admission"
	stageEtcd           = "etcd"
)

// request is one API request on its way through the pipeline.
type request struct {
	s    *Server
	w    *statusWriter
	r    *http.Request
	ctx  context.Context
	info *RequestInfo
	res  *resource
	user *auth.User
	ev   *audit.Event
	// stages are the pipeline stages entered, in order, and starts when
	// each was entered (since the request was received).
	stages []string
	starts []time.Duration
	// audited is set once the event was added to the ring.
	audited bool
	// tableColumnsSent is set once a watch sent its table's columns.
	tableColumnsSent bool
	// listOpts is the query decoded by listOptions.
	listOpts *metav1.ListOptions
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (s *Server) newRequest(w http.ResponseWriter, r *http.Request) *request {
	ev := audit.NewEvent()
	ev.Level = audit.LevelMetadata
	ev.AuditID = types.UID(r.Header.Get("Audit-ID"))
	if ev.AuditID == "" {
		ev.AuditID = uuid.NewUUID()
	}
	now := metav1.NewMicroTime(time.Now())
	ev.RequestReceivedTimestamp = now
	ev.StageTimestamp = now
	ev.Stage = audit.StageRequestReceived
	ev.RequestURI = r.URL.RequestURI()
	ev.UserAgent = r.UserAgent()
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		ev.SourceIPs = []string{host}
	}
	w.Header().Set("Audit-Id", string(ev.AuditID))
	return &request{s: s, w: &statusWriter{ResponseWriter: w}, r: r, ctx: r.Context(), ev: ev}
}

// serve runs the pipeline: authentication, authorization, then the handler.
func (q *request) serve() {
	q.info = parseRequestInfo(q.r)
	q.ev.Verb = q.info.Verb
	if q.info.IsResourceRequest {
		q.ev.ObjectRef = &audit.ObjectReference{
			Resource: q.info.Resource, Namespace: q.info.Namespace, Name: q.info.Name,
			APIGroup: q.info.APIGroup, APIVersion: q.info.APIVersion, Subresource: q.info.Subresource,
		}
	}
	if !q.authenticate() || !q.impersonate() {
		return
	}
	if f := q.s.flow.Load(); f != nil && !q.longRunning() {
		f.dispatch(q, q.serveAuthenticated)
		return
	}
	q.serveAuthenticated()
}

// serveAuthenticated runs the rest of the pipeline for an authenticated
// request: authorization, then the handler.
func (q *request) serveAuthenticated() {
	if !q.authorize() {
		return
	}
	if t := q.s.agg.route(q.info.Path); t != nil {
		q.proxy(t)
		return
	}
	if !q.info.IsResourceRequest {
		q.serveNonResource()
		return
	}
	q.res = q.s.lookup(q.info)
	if q.res == nil {
		q.fail("", errNoRoute())
		return
	}
	if !q.res.Namespaced {
		q.info.Namespace = ""
		q.ev.ObjectRef.Namespace = ""
	}
	if review := q.review(); review != nil {
		if err := q.serveReview(review); err != nil {
			q.fail("", err)
		}
		return
	}
	if q.res.Serve != nil {
		if err := q.res.Serve(q); err != nil {
			q.fail("", err)
		}
		return
	}
	if err := q.serveResource(); err != nil {
		q.fail("", err)
	}
}

// errNoRoute is kube-apiserver's answer for a path it does not serve.
func errNoRoute() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
		Message: "the server could not find the requested resource", Details: &metav1.StatusDetails{},
	}}
}

func (q *request) authenticate() bool {
	q.enter(stageAuthentication)
	if q.info.Path == "/version" {
		q.user = &auth.User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}
	}
	u, err := q.s.authn.Authenticate(q.r)
	switch {
	case err == nil:
		q.user = u
	case q.user != nil:
	default:
		if !errors.Is(err, auth.ErrNoIdentity) {
			q.s.log.Debug("authentication failed", "path", q.info.Path, "err", err)
		}
		q.fail(stageAuthentication, apierrors.NewUnauthorized("Unauthorized"))
		return false
	}
	q.ev.User = audit.UserInfo{Username: q.user.Name, UID: q.user.UID, Groups: q.user.Groups}
	if q.user.Authenticator != "" {
		q.ev.Annotations[audit.AnnotationAuthenticator] = q.user.Authenticator
	}
	q.ctx = auth.WithUser(q.ctx, q.user)
	return true
}

// enter records that the request reached a pipeline stage.
func (q *request) enter(stage string) {
	if len(q.stages) > 0 && q.stages[len(q.stages)-1] == stage {
		return
	}
	q.stages = append(q.stages, stage)
	q.starts = append(q.starts, time.Since(q.ev.RequestReceivedTimestamp.Time))
}

// noteStages writes the stages entered, and when, into the audit event.
func (q *request) noteStages() {
	if len(q.stages) == 0 {
		return
	}
	q.ev.Annotations[audit.AnnotationStages] = strings.Join(q.stages, ",")
	var b strings.Builder
	for i, stage := range q.stages {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(stage)
		b.WriteByte('=')
		b.WriteString(strconv.FormatInt(q.starts[i].Microseconds(), 10))
	}
	q.ev.Annotations[audit.AnnotationStageStarts] = b.String()
}

// fail answers err as a Status. stage names the pipeline stage that refused
// the request ("" means the stage entered last).
func (q *request) fail(stage string, err error) {
	status := toStatus(err)
	switch {
	case errors.Is(err, context.Canceled):
		// Its client went away or the server is stopping: nobody
		// reads the answer, and nothing went wrong here.
		q.s.log.Debug("API request ended before it was answered", "verb", q.info.Verb, "path", q.r.URL.Path, "err", err)
	case apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge):
		// It asked for a resource version ahead of etcd's, which
		// client-go retries: the client is told, and the server did not
		// fail. (Other timeouts, such as etcd's, stay errors.)
		q.s.log.Info("API request for a resource version not reached yet", "verb", q.info.Verb, "path", q.r.URL.Path, "err", err)
	case status.Code >= 500:
		q.s.log.Error("API request failed", "verb", q.info.Verb, "path", q.r.URL.Path, "err", err)
	}
	if stage == "" && len(q.stages) > 0 {
		stage = q.stages[len(q.stages)-1]
	}
	if stage != "" {
		q.enter(stage)
		q.ev.Annotations[audit.AnnotationFailedStage] = stage
	}
	if q.w.code != 0 {
		return
	}
	// As kube-apiserver's ErrorNegotiated, a Status that suggests a retry
	// period says so in Retry-After.
	if status.Details != nil && status.Details.RetryAfterSeconds > 0 {
		q.w.Header().Set("Retry-After", strconv.Itoa(int(status.Details.RetryAfterSeconds)))
	}
	q.writeJSON(int(status.Code), status)
}

// toStatus turns any error into a Status as kube-apiserver would answer it.
func toStatus(err error) *metav1.Status {
	var serr apierrors.APIStatus
	if errors.As(err, &serr) {
		st := serr.Status()
		st.Kind, st.APIVersion = "Status", "v1"
		if st.Code == 0 {
			st.Code = http.StatusInternalServerError
		}
		return &st
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		st := apierrors.NewTimeoutError("request did not complete within the allowed duration", 0).ErrStatus
		st.Kind, st.APIVersion = "Status", "v1"
		return &st
	case errors.Is(err, context.Canceled):
		// As kube-apiserver's request finisher answers a request whose
		// context ended.
		st := apierrors.NewTimeoutError("request did not complete within requested timeout - "+context.Canceled.Error(), 0).ErrStatus
		st.Kind, st.APIVersion = "Status", "v1"
		return &st
	case errors.Is(err, storage.ErrCompacted):
		st := apierrors.NewResourceExpired(err.Error()).ErrStatus
		st.Kind, st.APIVersion = "Status", "v1"
		return &st
	}
	st := apierrors.NewInternalError(err).ErrStatus
	st.Kind, st.APIVersion = "Status", "v1"
	return &st
}

// writeJSON answers obj as JSON with code.
func (q *request) writeJSON(code int, obj any) {
	q.writeJSONAs(code, obj, "application/json")
}

// writeJSONAs answers obj as JSON with code under the given media type.
func (q *request) writeJSONAs(code int, obj any, contentType string) {
	b, err := json.Marshal(obj)
	if err != nil {
		q.s.log.Error("failed to encode response", "type", fmt.Sprintf("%T", obj), "err", err)
		code = http.StatusInternalServerError
		b, _ = json.Marshal(toStatus(apierrors.NewInternalError(err)))
	}
	if st, ok := obj.(*metav1.Status); ok {
		q.ev.ResponseStatus = st
	} else {
		q.ev.ResponseStatus = &metav1.Status{Status: metav1.StatusSuccess, Code: int32(code)}
	}
	q.recordResponse(b)
	q.w.Header().Set("Content-Type", contentType)
	q.w.Header().Set("Cache-Control", "no-cache, private")
	q.w.WriteHeader(code)
	q.w.Write(b)
}

// writeEncoded answers body, obj already encoded in a non-JSON media type;
// the audit event keeps the object's JSON form when its policy asks.
func (q *request) writeEncoded(code int, obj runtime.Object, body []byte, contentType string) {
	q.ev.ResponseStatus = successStatus(code)
	if q.s.audit.WantsResponse(q.ev) {
		if b, err := json.Marshal(obj); err == nil {
			q.recordResponse(b)
		}
	}
	q.w.Header().Set("Content-Type", contentType)
	q.w.Header().Set("Cache-Control", "no-cache, private")
	q.w.WriteHeader(code)
	q.w.Write(body)
}

// recordResponse keeps the response body in the audit event when the audit
// policy asks for RequestResponse: never a Secret's, nor an issued token.
func (q *request) recordResponse(body []byte) {
	if len(body) > maxAuditedObjectBytes || !q.s.audit.WantsResponse(q.ev) {
		return
	}
	if q.res != nil && (q.res.Resource == "secrets" || q.info.Subresource == "token") {
		return
	}
	q.ev.ResponseObject = &runtime.Unknown{Raw: body, ContentType: runtime.ContentTypeJSON}
}

// maxAuditedObjectBytes bounds the request objects kept in audit events, so
// that the ring's memory stays modest.
const maxAuditedObjectBytes = 32 << 10

// recordObject keeps the request object in the audit event at level Request
// (never a Secret's).
func (q *request) recordObject(raw []byte) {
	if q.res != nil && q.res.Resource == "secrets" {
		return
	}
	if len(raw) > maxAuditedObjectBytes {
		return
	}
	q.ev.Level = audit.LevelRequest
	q.ev.RequestObject = &runtime.Unknown{Raw: raw, ContentType: runtime.ContentTypeJSON}
}

// recordAdmission writes each admission step into the audit annotations.
func (q *request) recordAdmission(steps []admission.Step) {
	for _, st := range steps {
		val := st.Patch
		if st.Error != "" {
			val = "error: " + st.Error
		}
		if val == "" {
			val = st.Phase
		}
		q.ev.Annotations[audit.AnnotationAdmissionPrefix+st.Plugin] = val
	}
}

// recordWrite notes the etcd key, revision and size written, and tells the
// lookup caches this server is ahead of them for key.
func (q *request) recordWrite(key string, rev int64, size int) {
	q.s.lookups.wrote(q.res, key, rev)
	q.ev.Annotations[audit.AnnotationEtcdKey] = key
	q.ev.Annotations[audit.AnnotationEtcdRevision] = strconv.FormatInt(rev, 10)
	q.ev.Annotations[audit.AnnotationEtcdValueSize] = strconv.Itoa(size)
}

// auditStarted records the event at ResponseStarted (for watches).
func (q *request) auditStarted() {
	q.ev.Stage = audit.StageResponseStarted
	q.ev.StageTimestamp = metav1.NewMicroTime(time.Now())
	q.noteStages()
	ev := *q.ev
	ev.Annotations = make(map[string]string, len(q.ev.Annotations))
	for k, v := range q.ev.Annotations {
		ev.Annotations[k] = v
	}
	q.s.audit.Add(&ev)
	q.audited = true
}

// finish records the event at ResponseComplete.
func (q *request) finish() {
	if q.audited {
		return
	}
	if q.ev.Stage != audit.StagePanic {
		q.ev.Stage = audit.StageResponseComplete
	}
	q.ev.StageTimestamp = metav1.NewMicroTime(time.Now())
	q.noteStages()
	if q.ev.ResponseStatus == nil {
		code := q.w.code
		if code == 0 {
			code = http.StatusOK
		}
		q.ev.ResponseStatus = &metav1.Status{Code: int32(code)}
	}
	q.s.audit.Add(q.ev)
}
