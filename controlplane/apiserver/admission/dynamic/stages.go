package dynamic

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	admissionv1 "k8s.io/api/admission/v1"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/rest"

	"github.com/glassplane/glassplane/controlplane/apiserver/admission"
	"github.com/glassplane/glassplane/controlplane/apiserver/audit"
)

// Stage kinds and results of the audit.AnnotationDynamicAdmission entries.
const (
	KindMutatingWebhook           = "MutatingWebhook"
	KindValidatingWebhook         = "ValidatingWebhook"
	KindMutatingAdmissionPolicy   = "MutatingAdmissionPolicy"
	KindValidatingAdmissionPolicy = "ValidatingAdmissionPolicy"

	ResultAllowed      = "allowed"
	ResultDenied       = "denied"
	ResultPatched      = "patched"
	ResultErrorIgnored = "error-ignored"
	ResultError        = "error"
)

// A Stage is one webhook call or one policy binding evaluated for a
// request: one entry of the audit.AnnotationDynamicAdmission annotation.
type Stage struct {
	Kind           string          `json:"kind"`
	Configuration  string          `json:"configuration"`
	Name           string          `json:"name"`
	DurationMicros int64           `json:"durationMicros"`
	Result         string          `json:"result"`
	Message        string          `json:"message"`
	Patch          json.RawMessage `json:"patch,omitempty"`
}

// appendStages adds stages to the request's AnnotationDynamicAdmission.
func appendStages(a *admission.Attributes, stages []Stage) {
	if len(stages) == 0 {
		return
	}
	var all []Stage
	if prev := a.AuditAnnotations[audit.AnnotationDynamicAdmission]; prev != "" {
		_ = json.Unmarshal([]byte(prev), &all)
	}
	b, err := json.Marshal(append(all, stages...))
	if err != nil {
		return
	}
	if a.AuditAnnotations == nil {
		a.AuditAnnotations = map[string]string{}
	}
	a.AuditAnnotations[audit.AnnotationDynamicAdmission] = string(b)
}

// The webhook plugins open an OpenTelemetry span around each webhook call
// ("Call mutating webhook" with the configuration and webhook names), from
// the tracer provider of the span in their context. webhookCalls puts a
// span there whose provider records each call as a Stage; the webhooks'
// transport (stageTransport) finds the call's span in its request's context
// and records what came back.
type webhookCalls struct {
	mu     sync.Mutex
	stages []*callSpan
}

// withWebhookCalls returns ctx with a span recording webhook calls into l.
func withWebhookCalls(ctx context.Context) (context.Context, *webhookCalls) {
	l := &webhookCalls{}
	return trace.ContextWithSpan(ctx, parentSpan{calls: l}), l
}

type callsProvider struct {
	noop.TracerProvider
	calls *webhookCalls
}

func (p callsProvider) Tracer(string, ...trace.TracerOption) trace.Tracer {
	return callsTracer{calls: p.calls}
}

type callsTracer struct {
	noop.Tracer
	calls *webhookCalls
}

// Start implements trace.Tracer: a webhook call's span is recorded, any
// other passes the recording on to its children.
func (t callsTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	kind := ""
	switch name {
	case "Call mutating webhook":
		kind = KindMutatingWebhook
	case "Call validating webhook":
		kind = KindValidatingWebhook
	default:
		return trace.ContextWithSpan(ctx, parentSpan{calls: t.calls}), parentSpan{calls: t.calls}
	}
	// Until its transport sees the call, the webhook was not reached.
	s := &callSpan{calls: t.calls, start: time.Now(), stage: Stage{Kind: kind, Result: ResultError, Message: notCalled}}
	cfg := trace.NewSpanStartConfig(opts...)
	for _, kv := range cfg.Attributes() {
		switch kv.Key {
		case "configuration":
			s.stage.Configuration = kv.Value.AsString()
		case "webhook":
			s.stage.Name = kv.Value.AsString()
		}
	}
	t.calls.mu.Lock()
	t.calls.stages = append(t.calls.stages, s)
	t.calls.mu.Unlock()
	return trace.ContextWithSpan(ctx, s), s
}

// parentSpan carries the recording provider.
type parentSpan struct {
	noop.Span
	calls *webhookCalls
}

func (s parentSpan) TracerProvider() trace.TracerProvider { return callsProvider{calls: s.calls} }

// callSpan is one webhook call; its fields are guarded by calls.mu.
type callSpan struct {
	noop.Span
	calls *webhookCalls
	start time.Time
	ended bool
	stage Stage
}

func (s *callSpan) TracerProvider() trace.TracerProvider { return callsProvider{calls: s.calls} }

// End implements trace.Span: the call's duration.
func (s *callSpan) End(...trace.SpanEndOption) {
	s.calls.mu.Lock()
	defer s.calls.mu.Unlock()
	if !s.ended {
		s.ended = true
		s.stage.DurationMicros = time.Since(s.start).Microseconds()
	}
}

// observe records the webhook's answer (or the failure to get one).
func (s *callSpan) observe(resp *http.Response, err error) {
	result, message, patch := ResultError, "", json.RawMessage(nil)
	switch {
	case err != nil:
		message = err.Error()
	case resp.StatusCode != http.StatusOK:
		message = "the webhook answered " + resp.Status
	default:
		body, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		result, message, patch = reviewOutcome(body, rerr)
	}
	s.calls.mu.Lock()
	defer s.calls.mu.Unlock()
	s.stage.Result, s.stage.Message, s.stage.Patch = result, message, patch
}

// reviewOutcome reads an AdmissionReview response.
func reviewOutcome(body []byte, err error) (result, message string, patch json.RawMessage) {
	if err != nil {
		return ResultError, err.Error(), nil
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Response == nil {
		return ResultError, "the webhook's answer is not an AdmissionReview", nil
	}
	r := review.Response
	switch {
	case !r.Allowed:
		if r.Result != nil {
			message = r.Result.Message
		}
		return ResultDenied, message, nil
	case len(r.Patch) > 0 && json.Valid(r.Patch):
		return ResultPatched, "", json.RawMessage(r.Patch)
	}
	return ResultAllowed, "", nil
}

// notCalled is the message of a call its transport never saw.
const notCalled = "the webhook was not called"

// finish returns the recorded calls. A call that failed and that the
// plugin reported failing open (its failed-open.* annotation naming the
// webhook) was ignored; a call that never reached the transport says why
// when whyNotCalled knows (a Service without a ready endpoint); a refusal
// no call explains (a patch that does not apply, a dry run the webhook
// does not support) makes the webhook it names an error stage.
func (l *webhookCalls) finish(kind string, annotations map[string]string, err error, whyNotCalled func(Stage) string) []Stage {
	l.mu.Lock()
	defer l.mu.Unlock()
	failedOpen := map[string]bool{}
	for k, v := range annotations {
		if strings.HasPrefix(k, "failed-open.") {
			failedOpen[v] = true
		}
	}
	stages := make([]Stage, 0, len(l.stages))
	explained := false
	for _, s := range l.stages {
		st := s.stage
		if !s.ended {
			st.DurationMicros = time.Since(s.start).Microseconds()
		}
		if st.Result == ResultError && st.Message == notCalled {
			if why := whyNotCalled(st); why != "" {
				st.Message = notCalled + ": " + why
			}
		}
		if st.Result == ResultError && failedOpen[st.Name] {
			st.Result = ResultErrorIgnored
		}
		explained = explained || st.Result == ResultDenied || st.Result == ResultError
		stages = append(stages, st)
	}
	if err != nil && !explained {
		// The plugin refused after an answer it could not use (a patch
		// that does not apply) or before calling: the webhook its error
		// names failed.
		name := ""
		if m := webhookInError.FindStringSubmatch(err.Error()); m != nil {
			name = m[1]
		}
		for i := len(stages) - 1; i >= 0; i-- {
			if stages[i].Name == name {
				stages[i].Result, stages[i].Message, stages[i].Patch = ResultError, err.Error(), nil
				return stages
			}
		}
		stages = append(stages, Stage{Kind: kind, Name: name, Result: ResultError, Message: err.Error()})
	}
	return stages
}

// webhookInError finds the webhook k8s.io/apiserver's errors name.
var webhookInError = regexp.MustCompile(`webhook "([^"]+)"`)

// stageTransport records each webhook call's answer on its span.
type stageTransport struct{ next http.RoundTripper }

func (t stageTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if s, ok := trace.SpanFromContext(req.Context()).(*callSpan); ok {
		s.observe(resp, err)
	}
	return resp, err
}

// stageResolver wraps the webhooks' client configurations with stageTransport.
func stageResolver(next webhookutil.AuthenticationInfoResolver) webhookutil.AuthenticationInfoResolver {
	wrap := func(cfg *rest.Config, err error) (*rest.Config, error) {
		if err != nil {
			return nil, err
		}
		cfg = rest.CopyConfig(cfg)
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return stageTransport{rt} })
		return cfg, nil
	}
	return &webhookutil.AuthenticationInfoResolverDelegator{
		ClientConfigForFunc: func(hostPort string) (*rest.Config, error) { return wrap(next.ClientConfigFor(hostPort)) },
		ClientConfigForServiceFunc: func(name, namespace string, port int) (*rest.Config, error) {
			return wrap(next.ClientConfigForService(name, namespace, port))
		},
	}
}
