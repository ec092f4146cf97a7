package web

import (
	"strings"
	"testing"
	"time"

	"github.com/glassplane/glassplane/api/v1alpha1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStoppedAt reads where a request stopped from its status and the API
// server's stage annotations: the annotation names the last stage entered,
// which for a handler's refusal (a DELETE that finds nothing) is before the
// stage that refused it.
func TestStoppedAt(t *testing.T) {
	tests := []struct {
		name      string
		verb      string
		resource  string
		code      int32
		reason    metav1.StatusReason
		entered   string
		annotated string
		want      string
		stages    string
		detail    string
	}{
		{"a 404 DELETE stops at storage", "delete", "pods", 404, metav1.StatusReasonNotFound,
			"authentication,authorization", "authorization", "etcd",
			"authentication=ok authorization=ok admission=skipped etcd=failed", "not found"},
		{"a 409 create stops at etcd", "create", "pods", 409, metav1.StatusReasonAlreadyExists,
			"authentication,authorization,decoding,admission,etcd", "etcd", "etcd",
			"authentication=ok authorization=ok decoding=ok admission=ok etcd=failed", "already exists"},
		{"a 409 conflict found before etcd was entered stops at etcd", "update", "configmaps", 409, metav1.StatusReasonConflict,
			"authentication,authorization,decoding,admission", "admission", "etcd",
			"authentication=ok authorization=ok decoding=ok admission=ok etcd=failed", "conflict"},
		{"a 422 stops at validation", "create", "pods", 422, metav1.StatusReasonInvalid,
			"authentication,authorization,decoding,admission", "admission", "admission",
			"authentication=ok authorization=ok decoding=ok admission=failed etcd=skipped", "invalid"},
		{"a 422 found while decoding stops at validation", "create", "pods", 422, metav1.StatusReasonInvalid,
			"authentication,authorization,decoding", "decoding", "admission",
			"authentication=ok authorization=ok decoding=ok admission=failed etcd=skipped", "invalid"},
		{"a 403 stops at authorization", "create", "pods", 403, metav1.StatusReasonForbidden,
			"authentication,authorization", "authorization", "authorization",
			"authentication=ok authorization=failed admission=skipped etcd=skipped", "forbidden"},
		{"a 403 from admission stops at admission", "create", "pods", 403, metav1.StatusReasonForbidden,
			"authentication,authorization,decoding,admission", "admission", "admission",
			"authentication=ok authorization=ok decoding=ok admission=failed etcd=skipped", "forbidden"},
		{"a 401 stops at authentication", "list", "pods", 401, metav1.StatusReasonUnauthorized,
			"authentication", "authentication", "authentication",
			"authentication=failed authorization=skipped admission=skipped etcd=skipped", "who are you? unknown"},
		{"a 400 stops at decoding", "create", "pods", 400, metav1.StatusReasonBadRequest,
			"authentication,authorization", "authorization", "decoding",
			"authentication=ok authorization=ok decoding=failed admission=skipped etcd=skipped", "bad request"},
		{"a malformed impersonation header stops at authentication", "get", "pods", 400, metav1.StatusReasonBadRequest,
			"authentication", "authentication", "authentication",
			"authentication=failed authorization=skipped admission=skipped etcd=skipped", "bad request"},
		{"a 404 for no resource keeps the annotated stage", "get", "", 404, metav1.StatusReasonNotFound,
			"authentication,authorization", "authorization", "authorization",
			"authentication=ok authorization=failed admission=skipped etcd=skipped", "not found"},
		{"a 500 keeps the annotated stage", "create", "pods", 500, metav1.StatusReasonInternalError,
			"authentication,authorization,decoding,admission,etcd", "etcd", "etcd",
			"authentication=ok authorization=ok decoding=ok admission=ok etcd=failed", "internal error"},
		{"a 201 went through", "create", "pods", 201, "",
			"authentication,authorization,decoding,admission,etcd", "", "",
			"authentication=ok authorization=ok decoding=ok admission=ok etcd=ok", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ann := map[string]string{v1alpha1.AnnotationStages: tt.entered}
			if tt.annotated != "" {
				ann[v1alpha1.AnnotationFailedStage] = tt.annotated
			}
			ev := auditEvent(tt.verb, tt.resource, "", "default", "mypod", "glassplane-admin", time.Now(), ann)
			ev.ResponseStatus = &metav1.Status{Code: tt.code, Reason: tt.reason}
			if got := stoppedAt(ev); got != tt.want {
				t.Errorf("stoppedAt = %q, want %q", got, tt.want)
			}
			var got []string
			detail := ""
			for _, s := range stagesOf(ev) {
				got = append(got, s.Name+"="+s.State)
				if s.Detail != "" {
					if detail != "" {
						t.Errorf("more than one stage says why: %q and %q", detail, s.Detail)
					}
					detail = s.Detail
				}
			}
			if strings.Join(got, " ") != tt.stages {
				t.Errorf("stages = %q, want %q", strings.Join(got, " "), tt.stages)
			}
			if detail != tt.detail {
				t.Errorf("detail = %q, want %q", detail, tt.detail)
			}
		})
	}
}

// TestRequestInfoSaysTheReasonOnce: the RBAC rule is shown under an "RBAC:"
// label without the authorizer's own prefix, and a refusal whose Status
// already carries the reason does not repeat it.
func TestRequestInfoSaysTheReasonOnce(t *testing.T) {
	allowed := auditEvent("delete", "pods", "", "default", "gone", "glassplane-admin", time.Now(), map[string]string{
		v1alpha1.AnnotationStages: "authentication,authorization", v1alpha1.AnnotationFailedStage: "authorization",
		v1alpha1.AnnotationDecision: "allow", v1alpha1.AnnotationReason: `RBAC: allowed by ClusterRoleBinding "cluster-admin"`,
	})
	allowed.ResponseStatus = &metav1.Status{Code: 404, Reason: metav1.StatusReasonNotFound, Message: `pods "gone" not found`}
	if ri := requestInfo(allowed); ri.Reason != `allowed by ClusterRoleBinding "cluster-admin"` || ri.FailedStage != "etcd" {
		t.Errorf("allowed 404: reason %q, failed stage %q", ri.Reason, ri.FailedStage)
	}
	denied := auditEvent("create", "pods", "", "default", "x", "jane", time.Now(), map[string]string{
		v1alpha1.AnnotationStages: "authentication,authorization", v1alpha1.AnnotationFailedStage: "authorization",
		v1alpha1.AnnotationDecision: "forbid", v1alpha1.AnnotationReason: "RBAC: role.rbac.authorization.k8s.io \"r\" not found",
	})
	denied.ResponseStatus = &metav1.Status{Code: 403, Reason: metav1.StatusReasonForbidden,
		Message: `pods is forbidden: User "jane" cannot create resource "pods" in API group "" in the namespace "default": RBAC: role.rbac.authorization.k8s.io "r" not found`}
	if ri := requestInfo(denied); ri.Reason != "" || strings.Count(ri.Status, "RBAC:") != 1 {
		t.Errorf("denied: reason %q, status %q", ri.Reason, ri.Status)
	}
}
