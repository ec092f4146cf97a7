package web

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/glassplane/glassplane/api/v1alpha1"

	"golang.org/x/net/html"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRequestsPage(t *testing.T) {
	e := newEnv(t)
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	allowed := auditEvent("create", "pods", "", "default", "mypod", "kubernetes-admin", t0, map[string]string{
		v1alpha1.AnnotationStages:                             "authentication,authorization,decoding,admission,etcd",
		v1alpha1.AnnotationStageStarts:                        "authentication=3,authorization=41,decoding=60,admission=96,etcd=1388",
		v1alpha1.AnnotationAuthenticator:                      "x509",
		v1alpha1.AnnotationDecision:                           "allow",
		v1alpha1.AnnotationReason:                             `RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" to Group "system:masters"`,
		v1alpha1.AnnotationEtcdKey:                            "/registry/pods/default/mypod",
		v1alpha1.AnnotationEtcdRevision:                       "42",
		v1alpha1.AnnotationAdmissionPrefix + "DefaultPodSpec": `[{"op":"add","path":"/spec/restartPolicy","value":"Always"}]`,
	})
	denied := auditEvent("create", "pods", "", "default", hostileName, "jane", t0.Add(time.Second), map[string]string{
		v1alpha1.AnnotationStages:      "authentication,authorization",
		v1alpha1.AnnotationFailedStage: "authorization",
		v1alpha1.AnnotationDecision:    "forbid",
	})
	denied.ResponseStatus = &metav1.Status{Code: 403, Message: `pods is forbidden: User "jane" cannot create resource "pods" in API group "" in the namespace "default"`}
	read := auditEvent("list", "pods", "", "default", "", "system:kube-scheduler", t0.Add(2*time.Second), nil)
	e.ring.Add(allowed)
	e.ring.Add(denied)
	e.ring.Add(read)

	tests := []struct {
		name, query string
		want        int
	}{
		{"writes and refusals by default", "", 2},
		{"reads when asked", "?reads=1", 3},
		{"refused only", "?failed=1", 1},
		{"by user", "?user=admin", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, _ := e.get(t, "/requests"+tt.query)
			if n := len(byTestID(doc, "request")); n != tt.want {
				t.Errorf("requests = %d, want %d", n, tt.want)
			}
		})
	}
	doc, raw := e.get(t, "/requests")
	rows := byTestID(doc, "request")
	t.Run("a refused request stops red at authorization with the reason", func(t *testing.T) {
		r := rows[0]
		if attr(r, "data-failed-stage") != "authorization" || attr(r, "data-code") != "403" {
			t.Fatalf("row attributes %v", r.Attr)
		}
		stages := findAll(r, func(n *html.Node) bool { return attr(n, "data-stage") != "" })
		var got []string
		for _, s := range stages {
			got = append(got, attr(s, "data-stage")+"="+attr(s, "data-state"))
		}
		if strings.Join(got, " ") != "authentication=ok authorization=failed admission=skipped etcd=skipped" {
			t.Errorf("stages = %v", got)
		}
		if reason := text(byTestID(r, "request-reason")[0]); !strings.Contains(reason, `cannot create resource "pods"`) {
			t.Errorf("reason = %q", reason)
		}
	})
	t.Run("an allowed request names its RBAC rule, admission and etcd revision", func(t *testing.T) {
		r := rows[1]
		if got := text(byTestID(r, "request-rbac")[0]); !strings.Contains(got, `ClusterRoleBinding "cluster-admin"`) {
			t.Errorf("rbac = %q", got)
		}
		if got := attr(byTestID(r, "request-key")[0], "href"); got != "/etcd?key=%2Fregistry%2Fpods%2Fdefault%2Fmypod&rev=42" {
			t.Errorf("key link = %q", got)
		}
		if !strings.Contains(text(r), "DefaultPodSpec") || !strings.Contains(text(r), "decoding") {
			t.Errorf("row text = %q", text(r))
		}
		etcd := findAll(r, func(n *html.Node) bool { return attr(n, "data-stage") == "etcd" })
		if len(etcd) != 1 || !strings.Contains(text(etcd[0]), "+1.39 ms") {
			t.Errorf("the etcd stage does not say it was entered 1.39 ms after the request arrived: %v", etcd)
		}
	})
	t.Run("a stage without a recorded start shows no time", func(t *testing.T) {
		if strings.Contains(text(rows[0]), " ms") {
			t.Errorf("refused row text = %q", text(rows[0]))
		}
	})
	t.Run("hostile names are text", func(t *testing.T) {
		if strings.Contains(raw, hostileName) {
			t.Error("raw HTML contains the unescaped name")
		}
	})
}

func TestStageStarts(t *testing.T) {
	tests := []struct {
		in   string
		want map[string]time.Duration
	}{
		{"", nil},
		{"authentication=3,etcd=1388", map[string]time.Duration{"authentication": 3 * time.Microsecond, "etcd": 1388 * time.Microsecond}},
		{"authentication=3,admission,etcd=x,decoding=-4,authorization=7", map[string]time.Duration{"authentication": 3 * time.Microsecond, "authorization": 7 * time.Microsecond}},
	}
	for _, tt := range tests {
		got := stageStarts(tt.in)
		if len(got) != len(tt.want) {
			t.Errorf("stageStarts(%q) = %v, want %v", tt.in, got, tt.want)
			continue
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("stageStarts(%q)[%s] = %v, want %v", tt.in, k, got[k], v)
			}
		}
	}
}

// TestRequestsNewestFirstByReceipt: the pipeline lists requests newest
// first by when the API server received them, so that a batch an audit
// webhook delivers late does not push newer requests off the page.
func TestRequestsNewestFirstByReceipt(t *testing.T) {
	e := newEnv(t)
	t0 := time.Now()
	newer := auditEvent("create", "pods", "", "default", "newer", "kubernetes-admin", t0, nil)
	e.ring.Add(newer)
	// A late batch of requests received before it, more than the page shows.
	for i := range requestsLength {
		e.ring.Add(auditEvent("create", "configmaps", "", "default", fmt.Sprintf("old-%d", i), "system:apiserver", t0.Add(-time.Minute+time.Duration(i)*time.Millisecond), nil))
	}
	doc, _ := e.get(t, "/requests")
	rows := byTestID(doc, "request")
	if len(rows) != requestsLength {
		t.Fatalf("rows = %d, want %d", len(rows), requestsLength)
	}
	// newer was the first event the dashboard got (seq 1).
	if got := attr(rows[0], "data-seq"); got != "1" {
		t.Errorf("the first row is seq %s (%v), want the newest request's, seq 1", got, rows[0].Attr)
	}
}
