package web

import (
	"cmp"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/glassplane/glassplane/api/v1alpha1"
	"github.com/glassplane/glassplane/web/source"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/labstack/echo/v5"

	"github.com/glassplane/glassplane/components"
)

// requestsLength is how many requests the pipeline page lists.
const requestsLength = 100

// RequestInfo is what the pipeline page shows of a request beyond the
// common message fields: how it was authenticated, the authorization
// decision and the RBAC rule (or the reason it was denied), what each
// admission plugin did and where it was written.
type RequestInfo struct {
	Authenticator string            `json:"authenticator,omitempty"`
	Groups        []string          `json:"groups,omitempty"`
	Decision      string            `json:"decision,omitempty"`
	Reason        string            `json:"reason,omitempty"`
	FailedStage   string            `json:"failedStage,omitempty"`
	Status        string            `json:"status,omitempty"`
	Admission     []AdmissionResult `json:"admission,omitempty"`
	// Calls are the admission webhook calls and policy evaluations
	// (AnnotationDynamicAdmission); CallsNote says why they could not be
	// read.
	Calls     []components.AdmissionCall `json:"calls,omitempty"`
	CallsNote string                     `json:"callsNote,omitempty"`
	URI       string                     `json:"uri,omitempty"`
}

// AdmissionResult is one admission plugin's note on a request.
type AdmissionResult struct {
	Plugin string `json:"plugin"`
	Result string `json:"result"`
}

// requestInfo reads an audit event's pipeline annotations.
func requestInfo(ev *auditv1.Event) *RequestInfo {
	ri := &RequestInfo{
		Authenticator: ev.Annotations[v1alpha1.AnnotationAuthenticator],
		Groups:        ev.User.Groups,
		Decision:      ev.Annotations[v1alpha1.AnnotationDecision],
		Reason:        rbacReason(ev.Annotations[v1alpha1.AnnotationReason]),
		FailedStage:   stoppedAt(ev),
		URI:           ev.RequestURI,
	}
	if ev.ImpersonatedUser != nil && ev.ImpersonatedUser.Username != "" {
		ri.Groups = ev.ImpersonatedUser.Groups
	}
	if ev.ResponseStatus != nil && ev.ResponseStatus.Code >= 400 {
		ri.Status = ev.ResponseStatus.Message
		// A refusal's Status already says the authorizer's reason.
		if ri.Reason != "" && strings.Contains(ri.Status, ri.Reason) {
			ri.Reason = ""
		}
	}
	for _, k := range sortedKeys(ev.Annotations) {
		if plugin, ok := strings.CutPrefix(k, v1alpha1.AnnotationAdmissionPrefix); ok && k != AnnotationDynamicAdmission {
			ri.Admission = append(ri.Admission, AdmissionResult{Plugin: plugin, Result: ev.Annotations[k]})
		}
	}
	sort.SliceStable(ri.Admission, func(i, j int) bool { return ri.Admission[i].Plugin < ri.Admission[j].Plugin })
	calls, note := admissionCallsOf(ev.Annotations)
	ri.Calls, ri.CallsNote = admissionCallRows(calls), note
	return ri
}

// rbacReason is the authorizer's reason without its "RBAC: " prefix: the
// page labels it already.
func rbacReason(reason string) string {
	return strings.TrimPrefix(reason, "RBAC: ")
}

// requestFilter is what the pipeline page lists: by default the requests
// that change state and every refused one.
type requestFilter struct {
	reads  bool
	failed bool
	user   string
}

func (f requestFilter) match(ev *auditv1.Event) bool {
	if f.user != "" && !strings.Contains(actorOf(ev), f.user) {
		return false
	}
	failed := auditFailed(ev)
	if f.failed && !failed {
		return false
	}
	return f.reads || failed || mutating(ev.Verb)
}

// noAuditMessage is what the request pipeline says of a cluster that
// sends the dashboard no audit events.
const noAuditMessage = "This cluster sends the dashboard no audit events: its API server does not serve auditevents.glassplane.io " +
	"and the dashboard was started without --audit-webhook-listen (point the API server's --audit-webhook-config-file there). " +
	"Everything else works; objects' timelines show their watch events only."

// requests serves /requests: the audit stream, newest first, each request
// with its pipeline stages. A logged-in user sees only their own requests
// unless allowed list on events.audit.k8s.io.
func (d *Dashboard) requests(c *echo.Context) error {
	ctx := c.Request().Context()
	reader := d.readerOf(c.Request())
	f := requestFilter{reads: c.QueryParam("reads") == "1", failed: c.QueryParam("failed") == "1", user: c.QueryParam("user")}
	seq := d.auditSeq()
	vm := components.Requests{ShowReads: f.reads, OnlyFailed: f.failed, User: f.user}
	if d.cfg.Audit == nil {
		vm.Unavailable = noAuditMessage
	} else {
		// Newest first by when the API server received each request, not
		// by when the dashboard did: an API server's audit webhook
		// delivers a batch it could not send earlier late.
		recs := d.cfg.Audit.Since(0)
		slices.SortFunc(recs, func(a, b source.AuditRecord) int {
			return cmp.Or(b.Event.RequestReceivedTimestamp.Compare(a.Event.RequestReceivedTimestamp.Time), cmp.Compare(b.Seq, a.Seq))
		})
		for _, rec := range recs {
			if len(vm.Rows) == requestsLength {
				break
			}
			if rec.Seq > seq || !f.match(rec.Event) || !reader.mayReadAudit(ctx, actorOf(rec.Event)) {
				continue
			}
			vm.Rows = append(vm.Rows, requestRow(rec))
		}
	}
	return render(c, http.StatusOK, components.RequestsPage(d.layout("Requests", components.PageRequests, d.cfg.Store.Revision(), seq), vm))
}

// requestRow is one audit record for the pipeline page.
func requestRow(rec source.AuditRecord) components.RequestRow {
	ev := rec.Event
	m := auditRecordMessage(rec)
	ri := requestInfo(ev)
	row := components.RequestRow{
		Seq: rec.Seq, Time: m.Timestamp, User: actorOf(ev), Groups: strings.Join(ri.Groups, ", "),
		Authenticator: ri.Authenticator, Verb: ev.Verb, Action: m.Action, Target: target(m), Href: m.Href,
		Code: m.Code, Failed: m.Failed, FailedStage: ri.FailedStage, Stages: stagesOf(ev),
		Decision: ri.Decision, Reason: ri.Reason, Status: ri.Status, Key: m.Key, Revision: m.Revision,
	}
	if m.Key != "" {
		row.KeyHref = keyHref(m.Key)
		if m.Revision > 0 {
			row.KeyHref += "&rev=" + strconv.FormatInt(m.Revision, 10)
		}
	}
	for _, a := range ri.Admission {
		row.Admission = append(row.Admission, components.AdmissionNote{Plugin: a.Plugin, Result: a.Result})
	}
	return row
}

// requestHref points at one request on the pipeline page.
func requestHref(seq int64) string {
	return "/requests?reads=1#req-" + strconv.FormatInt(seq, 10)
}
