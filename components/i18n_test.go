package components

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/a-h/templ"
	"golang.org/x/net/html"

	"github.com/glassplane/glassplane/static"
)

// korean reads the Korean dictionary, static/js/ko.js, as the browser
// gets it: a module whose one export is a JSON object.
func korean(t *testing.T) map[string]string {
	t.Helper()
	src, err := static.FS.ReadFile("js/ko.js")
	if err != nil {
		t.Fatal(err)
	}
	const start = "export const KO = "
	s := string(src)
	i := strings.Index(s, start)
	if i < 0 || !strings.HasSuffix(strings.TrimSpace(s), ";") {
		t.Fatalf("ko.js has no %q…; export", start)
	}
	var ko map[string]string
	if err := json.Unmarshal([]byte(strings.TrimSuffix(strings.TrimSpace(s[i+len(start):]), ";")), &ko); err != nil {
		t.Fatalf("ko.js's object is not JSON: %v", err)
	}
	return ko
}

// i18nPages renders every page with enough in it to show its tables,
// notes, buttons and labels.
func i18nPages() map[string]templ.Component {
	object := Object{
		Resource: "pods", Namespace: "default", Name: "mypod", Kind: "Pod", UID: "u1", Key: "/registry/pods/default/mypod",
		CSRFToken: "c", Found: true, ResourceVersion: 12, FieldOwners: []FieldOwner{{Manager: "kubectl", Operation: "Apply", APIVersion: "v1", Time: "2026-01-02 03:04:05", Fields: []string{".spec.replicas"}}},
		Owners:     []ObjectLink{{Kind: "ReplicaSet", Name: "rs", Href: "/objects/replicasets/default/rs", Controller: true}},
		Dependents: []TimelineGroup{{Object: ObjectLink{Kind: "Event", Name: "e", Href: "/x"}}},
		Incarnations: []Incarnation{
			{UID: "u0", Created: "2026-01-02T03:04:00Z", Href: "/x?uid=u0", Earlier: true},
		},
		Timeline: []TimelineRow{{Source: "audit", Time: "2026-01-02T03:04:05Z", Actor: "admin", Action: "create pods", AuditHref: "/requests#req-1"}},
		Decision: &Decision{Attempt: 1, Node: "node1", Plugins: []string{"NodeResourcesFit"},
			Filter: []FilterRow{{Node: "node1", Passed: true}, {Node: "node2", Plugin: "TaintToleration", Reason: "taint"}},
			Scores: []ScoreRow{{Node: "node1", Chosen: true, Total: 100, Cells: []ScoreCell{{Present: true, Normalized: 100, Weight: 1, Weighted: 100}}}}},
	}
	past := object
	past.Past, past.StoredUID, past.Decision = true, "u2", nil
	past.Incarnations = []Incarnation{{UID: "u2", Created: "2026-01-02T03:05:00Z", Href: "/x", Current: true}}
	matrix := &AttemptMatrix{
		Attempt: 2, Time: "2026-01-02T03:04:05Z", Node: "node1", Nodes: 4, Evaluated: 3, Feasible: 2, NominatedNode: "node1", Victims: []string{"low"},
		FilterPlugins: []string{"TaintToleration"}, ScorePlugins: []ScorePluginHead{{Name: "NodeResourcesFit", Weight: 1}}, Omitted: 1,
		Rows: []MatrixRow{{Node: "node1", Passed: true, Winner: true, Scored: true, Total: 100, Filter: []FilterCell{{State: "pass"}},
			Scores: []MatrixScore{{Present: true, Raw: 5, Normalized: 100, Weight: 1, Weighted: 100}}}},
	}
	return map[string]templ.Component{
		"overview":    OverviewPage(layout(PageOverview), Overview{Background: 12}),
		"object":      ObjectPage(layout(PageObject), object),
		"past object": ObjectPage(layout(PageObject), past),
		"gone object": ObjectPage(layout(PageObject), Object{Resource: "pods", Namespace: "default", Name: "x", Kind: "Pod",
			Incarnations: []Incarnation{{UID: "u2", Href: "/x", Current: true}}}),
		"service": ObjectPage(layout(PageObject), Object{Resource: "services", Namespace: "default", Name: "x", Kind: "Service", Found: true,
			Service: &Service{Type: "ClusterIP", ClusterIPs: []string{"10.96.0.20"}, SessionAffinity: "None",
				Ports:  []ServicePort{{Name: "http", Protocol: "TCP", Port: 80, TargetPort: "8080"}},
				Slices: []EndpointSlice{{Name: "x-abcde", Href: "/x", AddressType: "IPv4"}, {Name: "x-fghij", Href: "/x", AddressType: "IPv4", Endpoints: []Endpoint{{Addresses: []string{"10.88.0.5"}, Pod: "x", Ready: "true", Serving: "true", Terminating: "false"}}}},
				DNS:    []DNSName{{Name: "x", Type: "A", Answer: "10.96.0.20", Note: "short form", NoteKey: "service.dns.short"}},
				Rules:  []NodeRules{{Node: "node1", Href: "/x", Error: "no"}}}}),
		"pvc": ObjectPage(layout(PageObject), Object{Resource: "persistentvolumeclaims", Namespace: "default", Name: "x", Kind: "PersistentVolumeClaim", Found: true,
			PVC: &PVC{Phase: "Bound", Volume: &PersistentVolume{Name: "pv"}, Pods: []ClaimPod{{Name: "db-0", Node: "sim-1", NodeHref: "/n"}}}}),
		"pvc, unbound": ObjectPage(layout(PageObject), Object{Resource: "persistentvolumeclaims", Namespace: "default", Name: "x", Kind: "PersistentVolumeClaim", Found: true,
			PVC: &PVC{Phase: "Pending"}}),
		"cronjob": ObjectPage(layout(PageObject), Object{Resource: "cronjobs", Namespace: "default", Name: "x", Kind: "CronJob", Found: true,
			CronJob: &CronJob{Schedule: "*/1 * * * *", Suspend: true, Jobs: []CronJobRun{{Name: "x-1", Status: "Complete"}}}}),
		"cronjob, no jobs": ObjectPage(layout(PageObject), Object{Resource: "cronjobs", Namespace: "default", Name: "x", Kind: "CronJob", Found: true,
			CronJob: &CronJob{Schedule: "*/1 * * * *"}}),
		"hpa": ObjectPage(layout(PageObject), Object{Resource: "horizontalpodautoscalers", Namespace: "default", Name: "x", Kind: "HorizontalPodAutoscaler", Found: true,
			HPA: &HPA{Metrics: []HPAMetric{{Name: "cpu"}}, Chart: &MetricChart{Metric: "cpu", Target: 50, Unit: "%"},
				Decisions: []ScalingDecision{{NewSize: 4, Reason: "cpu resource utilization (percentage of request) above target"}}}}),
		"hpa, no decisions": ObjectPage(layout(PageObject), Object{Resource: "horizontalpodautoscalers", Namespace: "default", Name: "x", Kind: "HorizontalPodAutoscaler", Found: true,
			HPA: &HPA{}}),
		"ingress": ObjectPage(layout(PageObject), Object{Resource: "ingresses", Namespace: "default", Name: "x", Kind: "Ingress", Found: true,
			DataPathNote: "not routed", DataPathNoteKey: "datapath.ingress"}),
		"networkpolicy": ObjectPage(layout(PageObject), Object{Resource: "networkpolicies", Namespace: "default", Name: "x", Kind: "NetworkPolicy", Found: true,
			DataPathNote: "not enforced", DataPathNoteKey: "datapath.networkpolicy"}),
		"service, simulated": ObjectPage(layout(PageObject), Object{Resource: "services", Namespace: "default", Name: "x", Kind: "Service", Found: true,
			Service: &Service{Type: "ClusterIP", Selector: nil}}),
		"requests": RequestsPage(layout(PageRequests), Requests{}),
		"request rows": RequestsPage(layout(PageRequests), Requests{Rows: []RequestRow{{Seq: 1, Verb: "create",
			Stages:    []Stage{{Name: "authentication", State: "ok"}, {Name: "admission", State: "ok"}, {Name: "etcd", State: "ok"}},
			Admission: []AdmissionNote{{Plugin: "DefaultTolerationSeconds", Result: "mutated"}}}}}),
		"events": EventsPage(layout(PageEvents), Events{}),
		"nodes":  NodesPage(layout(PageNodes), Nodes{}),
		"etcd":   EtcdPage(layout(PageEtcd), Etcd{Total: 3, Revision: 9}),
		"etcd key": EtcdPage(layout(PageEtcd), Etcd{Total: 3, Revision: 9, At: 5,
			Selected:    &EtcdValue{Key: "/registry/pods/default/mypod", ModRevision: 4, ObjectHref: "/x"},
			History:     []EtcdVersion{{ModRevision: 4, Href: "/e", DiffHref: "/d"}},
			HistoryNote: "created at revision 3", HistoryNoteKey: "etcd.note.created", HistoryNoteRevision: 3}),
		"etcd missing key": EtcdPage(layout(PageEtcd), Etcd{Missing: "/registry/pods/default/gone"}),
		"apply": ApplyPage(layout(PageApply), Apply{ActingAs: "admin", Examples: []Example{{Name: "pod", Label: "Pod"}},
			Results: []ApplyResult{{Ref: "pod/x", Fields: []FieldError{{Path: "spec", Line: 3, Message: "Required value"}},
				Added: []FieldChange{{Path: "spec.dnsPolicy", Value: "ClusterFirst", Added: true}}}}}),
		"demos": DemosPage(layout(PageDemos), Demos{Lang: "en", ActingAs: "admin", Demos: []DemoInfo{{Name: "pod-lifecycle", Title: "t", Steps: 4}},
			Runs: []DemoRun{{ID: "1", Name: "pod-lifecycle", By: "admin"}}}),
		"login": LoginPage(layout(PageLogin), Login{Remote: true}),
		"scheduler": SchedulerPage(layout(PageScheduler), SchedulerExplain{Namespace: "default", Name: "mypod", PodFound: true, Dropped: 1,
			Attempts: []AttemptLink{{Attempt: 1}, {Attempt: 2, Node: "node1", Selected: true}}, Chosen: matrix}),
		"scheduler, nothing yet": SchedulerPage(layout(PageScheduler), SchedulerExplain{Namespace: "default", Name: "mypod", NoRecord: true}),
		"scheduler, events": SchedulerPage(layout(PageScheduler), SchedulerExplain{Namespace: "default", Name: "mypod", NoRecord: true, Events: []SchedulingEvent{
			{Time: "2026-01-02T03:04:05Z", Warning: true, Reason: "FailedScheduling", From: "default-scheduler", Count: 3, Message: "0/3 nodes are available"},
			{Time: "2026-01-02T03:04:09Z", Reason: "Scheduled", From: "default-scheduler", Message: "Successfully assigned default/mypod to node1",
				Summary: &EventSummary{Nodes: 3, Evaluated: 3, Feasible: 1, Rejected: []PluginCount{{Plugin: "NodeResourcesFit", Nodes: 2}}}},
		}}),
		"scheduler, events unread": SchedulerPage(layout(PageScheduler), SchedulerExplain{Namespace: "default", Name: "mypod", Error: "forbidden", EventsError: "forbidden"}),
		"404":                      ErrorPage(layout(PageError), HTTPError{Status: 404, Title: "Not Found", Message: "m", MessageKey: "error.not-found"}),
		"forbidden":                ForbiddenPage(layout(""), Forbidden{Message: "forbidden", Hint: "h", HintKey: "forbidden.etcd"}),
	}
}

// kubernetesWords are texts the pages show as Kubernetes writes them (a
// field, a resource, an extension point, etcd) and the names of
// i18nPages' objects, nodes, plugins and keys, in Korean too.
var kubernetesWords = map[string]bool{
	"cpu": true, "taints": true, "+ms": true, "filter": true, "uid": true, "resourceVersion": true, "pod": true,
	"create revision": true, "mod revision": true, "version": true, "kind": true, "etcd": true,
	"type": true, "clusterIPs": true, "selector": true, "sessionAffinity": true, "port": true, "protocol": true,
	"targetPort": true, "nodePort": true, "ready": true, "serving": true, "terminating": true,
	// The fields of a claim's, a CronJob's and an HPA's part.
	"accessModes": true, "capacity": true, "concurrencyPolicy": true, "currentReplicas": true, "desiredReplicas": true,
	"failedJobsHistoryLimit": true, "successfulJobsHistoryLimit": true, "lastScaleTime": true, "lastScheduleTime": true,
	"lastSuccessfulTime": true, "minReplicas / maxReplicas": true, "nodeAffinity": true, "persistentVolumeReclaimPolicy": true,
	"requests.storage": true, "scaleTargetRef": true, "schedule": true, "storageClassName": true, "suspend": true, "timeZone": true,
	"Job": true, "active": true, "completionTime": true, "startTime": true, "failed": true, "succeeded": true, "lastTransitionTime": true,
	"message": true, "phase": true, "reason": true, "status": true, "scheduled": true, "volume": true,
	"mypod": true, "x": true, "node1": true, "NodeResourcesFit": true, "TaintToleration": true, "/registry/pods/default/mypod": true,
}

// TestPagesSpeakKorean checks that what a student reads on each page
// carries an i18n key, and that every key a page uses has its Korean, with
// the placeholders its element can fill.
func TestPagesSpeakKorean(t *testing.T) {
	ko := korean(t)
	placeholder := regexp.MustCompile(`\{(\w+)\}`)
	for name, page := range i18nPages() {
		t.Run(name, func(t *testing.T) {
			doc, _ := render(t, page)
			for _, n := range findAll(doc, func(*html.Node) bool { return true }) {
				for _, a := range []string{"data-i18n", "data-i18n-title", "data-i18n-placeholder", "data-i18n-aria-label"} {
					key, ok := attr(n, a)
					if !ok {
						continue
					}
					text, found := ko[key]
					if !found {
						t.Errorf("<%s %s=%q> has no Korean", n.Data, a, key)
						continue
					}
					if a != "data-i18n" {
						continue
					}
					elements := 0
					for c := n.FirstChild; c != nil; c = c.NextSibling {
						if c.Type == html.ElementNode {
							elements++
						}
					}
					for _, m := range placeholder.FindAllStringSubmatch(text, -1) {
						if slot, ok := strings.CutPrefix(m[0], "{"); ok && slot[0] >= '0' && slot[0] <= '9' {
							if int(slot[0]-'0') >= elements {
								t.Errorf("%s: %s has no child element for %s", key, n.Data, m[0])
							}
						} else if _, ok := attr(n, "data-"+kebab(m[1])); !ok {
							t.Errorf("%s: %s has no data-%s for %s", key, n.Data, kebab(m[1]), m[0])
						}
					}
				}
			}
			// What a student reads: headers, buttons, labels, notes.
			read := findAll(doc, func(n *html.Node) bool {
				class, _ := attr(n, "class")
				switch {
				case n.Data == "th" || n.Data == "button" || n.Data == "h1" || n.Data == "h2" || n.Data == "dt" || n.Data == "summary":
					return true
				case n.Data == "p":
					return strings.Contains(class, "lead") || strings.Contains(class, "notice") || strings.Contains(class, "empty") || class == "muted"
				}
				return false
			})
			for _, n := range read {
				if class, _ := attr(n, "class"); strings.Contains(class, "lang-btn") {
					continue
				}
				if _, ok := attr(n, "data-i18n"); ok {
					continue
				}
				if own := ownText(n); own != "" && !kubernetesWords[own] && !translatedInside(n) {
					t.Errorf("<%s> %q carries no data-i18n", n.Data, own)
				}
			}
		})
	}
}

// ownText is n's text outside its child elements.
func ownText(n *html.Node) string {
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// translatedInside tells whether n's words are in children carrying keys
// (its own text only punctuation between them).
func translatedInside(n *html.Node) bool {
	return strings.Trim(ownText(n), " ;:,.()") == "" && len(findAll(n, func(c *html.Node) bool { _, ok := attr(c, "data-i18n"); return ok })) > 0
}

// kebab turns a placeholder's name into its data attribute's: lastStep → last-step.
func kebab(name string) string {
	var b strings.Builder
	for _, r := range name {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('-')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
