package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/web/webtest"
)

// podManifest is examples/pod.yaml's pod, named name in namespace ns.
func podManifest(ns, name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s
spec:
  containers:
  - name: mycontainer
    image: glassplane.local/hello:latest
    ports:
    - containerPort: 8080
`, name, ns)
}

// freshNamespace creates a namespace of the test's own, deleted when it ends.
func freshNamespace(t *testing.T, c *Cluster, prefix string) string {
	t.Helper()
	ns := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1_000_000)
	c.MustKubectl(t, "", "create", "namespace", ns)
	t.Cleanup(func() { c.Kubectl(t, "", "delete", "namespace", ns, "--wait=false") })
	return ns
}

// TestBrowserNarrationFollowsTheStudent keeps the overview open for a
// minute as admin (the dashboard checks the admin's rights, nodes renew
// their Leases meanwhile), then applies examples/pod.yaml's pod with
// kubectl: the narration names that apply (who, and which object), the
// Recent steps show it among the first rows with no background step
// around it, the map narrates no background step, and the quiet line
// counts what was left out.
func TestBrowserNarrationFollowsTheStudent(t *testing.T) {
	c := SharedCluster(t)
	tab := webtest.Browser(t)
	out := webtest.OutputDir(t)
	ns := freshNamespace(t, c, "narration")

	loginAdmin(t, c, tab)
	webtest.Navigate(t, tab, c.WebURL+"/")
	webtest.WaitLive(t, tab)
	time.Sleep(time.Minute)
	if n := webtest.Eval[int](t, tab, `Number(document.querySelector('[data-testid="feed-background"]').dataset.count)`); n == 0 {
		t.Error("no background step was counted in a minute (leases, heartbeats, the dashboard's checks)")
	}

	c.MustKubectl(t, podManifest(ns, "mypod"), "apply", "-f", "-")
	target := "pods/" + ns + "/mypod"
	webtest.WaitFor(t, tab, fmt.Sprintf(`document.querySelector('[data-testid="narration-cause"]').dataset.target === %s`, webtest.JSString(target)))
	cause := webtest.Eval[string](t, tab, `document.querySelector('[data-testid="narration-cause"]').textContent`)
	if want := "glassplane-admin created pod " + ns + "/mypod"; !strings.Contains(cause, want) {
		t.Errorf("narration's latest line = %q, want it to say %q", cause, want)
	}
	// The apply's row is among the first few: what follows it (binding,
	// status, Events) may come before it, background steps may not.
	feedRow := fmt.Sprintf(`[...document.querySelectorAll('[data-testid="feed-item"]')].findIndex(li => li.querySelector(".target")?.textContent === %s && li.querySelector(".action")?.textContent === "create pods")`, webtest.JSString(target))
	webtest.WaitFor(t, tab, feedRow+" >= 0")
	if i := webtest.Eval[int](t, tab, feedRow); i > 5 {
		rows := webtest.Eval[[]string](t, tab, `[...document.querySelectorAll('[data-testid="feed-item"]')].slice(0, 12).map(li => li.textContent.replace(/\s+/g, " "))`)
		t.Errorf("the apply is row %d of the Recent steps: %q", i, rows)
	}
	background := webtest.Eval[[]string](t, tab, `[...document.querySelectorAll('[data-testid="feed-item"]')].map(li => li.textContent.replace(/\s+/g, " ")).filter(s => /leases|subjectaccessreviews|selfsubjectreviews|nodes\/status|create events/.test(s))`)
	if len(background) > 0 {
		t.Errorf("the Recent steps list background steps: %q", background)
	}
	// The map narrates the user's request, and no background one.
	webtest.WaitFor(t, tab, fmt.Sprintf(`window.glassplane.steps.some(s => s.kind === "request" && s.label.includes(%s))`, webtest.JSString(target)))
	steps := webtest.Eval[[]string](t, tab, `window.glassplane.steps.map(s => s.label).filter(l => /leases|subjectaccessreviews|selfsubjectreviews/.test(l))`)
	if len(steps) > 0 {
		t.Errorf("the map narrated background steps: %q", steps)
	}
	webtest.Screenshot(t, tab, filepath.Join(out, "narration.png"))

	// In Korean the same line names the same apply.
	click(t, tab, "lang-ko")
	webtest.WaitFor(t, tab, `document.querySelector('[data-testid="narration-cause"]').lang === "ko"`)
	if ko := webtest.Eval[string](t, tab, `document.querySelector('[data-testid="narration-cause"]').textContent`); !strings.Contains(ko, "pod "+ns+"/mypod을(를) 생성했습니다") {
		t.Errorf("Korean narration's latest line = %q", ko)
	}
	click(t, tab, "lang-en")
}

// TestBrowserRequestStoppingStage: the requests page shows where a refused
// request really stopped, live and when rendered, with the reason once: a
// DELETE of a missing pod at storage (not found), a create of an existing
// object at etcd (already exists), an invalid pod at validation.
func TestBrowserRequestStoppingStage(t *testing.T) {
	c := SharedCluster(t)
	tab := webtest.Browser(t)
	ns := freshNamespace(t, c, "stages")

	webtest.Navigate(t, tab, c.WebURL+"/requests")
	webtest.WaitLive(t, tab)

	if _, err := c.Kubectl(t, "", "-n", ns, "delete", "pod", "nosuchpod"); err == nil {
		t.Fatal("deleting a missing pod succeeded")
	}
	c.MustKubectl(t, "", "-n", ns, "create", "configmap", "twice")
	if _, err := c.Kubectl(t, "", "-n", ns, "create", "configmap", "twice"); err == nil {
		t.Fatal("creating an existing configmap succeeded")
	}
	invalid := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: nocontainers\n  namespace: %s\nspec:\n  containers: []\n", ns)
	if _, err := c.Kubectl(t, invalid, "create", "-f", "-"); err == nil {
		t.Fatal("creating a pod without containers succeeded")
	}

	tests := []struct {
		name, verb, target string
		code               int
		stage, detail      string
		message            string
	}{
		{"a 404 DELETE stops at storage", "delete", "pods/" + ns + "/nosuchpod", 404, "etcd", "not found", `pods "nosuchpod" not found`},
		{"a 409 create stops at etcd", "create", "configmaps/" + ns + "/twice", 409, "etcd", "already exists", `configmaps "twice" already exists`},
		{"a 422 stops at validation", "create", "pods/" + ns + "/nocontainers", 422, "admission", "invalid", `spec.containers: Required value`},
	}
	check := func(t *testing.T, when string) {
		for _, tt := range tests {
			t.Run(when+": "+tt.name, func(t *testing.T) {
				row := fmt.Sprintf(`[...document.querySelectorAll('[data-testid="request"][data-code="%d"]')].find(r => r.dataset.verb === %s && r.querySelector(".target")?.textContent === %s)`,
					tt.code, webtest.JSString(tt.verb), webtest.JSString(tt.target))
				webtest.WaitFor(t, tab, row+" !== undefined")
				got := webtest.Eval[map[string]any](t, tab, fmt.Sprintf(`(r => ({
					stopped: r.dataset.failedStage,
					failed: [...r.querySelectorAll('[data-stage][data-state="failed"]')].map(s => s.dataset.stage).join(","),
					detail: r.querySelector('[data-stage][data-state="failed"] .pstage-detail')?.textContent || "",
					authz: r.querySelector('[data-stage="authorization"]')?.dataset.state || "",
					text: r.innerText.replace(/\s+/g, " "),
				}))(%s)`, row))
				if got["stopped"] != tt.stage || got["failed"] != tt.stage || got["detail"] != tt.detail {
					t.Errorf("stopped at %v (failed stages %v, %q), want %s (%q)", got["stopped"], got["failed"], got["detail"], tt.stage, tt.detail)
				}
				if got["authz"] != "ok" {
					t.Errorf("authorization is %v, want ok: RBAC allowed the request", got["authz"])
				}
				// What the row shows (not the folded admission notes) says
				// the reason once.
				text, _ := got["text"].(string)
				if n := strings.Count(text, tt.message); n != 1 {
					t.Errorf("the reason %q is said %d times: %q", tt.message, n, text)
				}
				if all := webtest.Eval[string](t, tab, row+".textContent"); strings.Contains(all, "RBAC: RBAC:") {
					t.Errorf("doubled prefix: %q", all)
				}
			})
		}
	}
	check(t, "live")
	webtest.Navigate(t, tab, c.WebURL+"/requests")
	check(t, "rendered")
}

// TestBrowserTimelineOfARecreatedPod: create mypod, delete it, create it
// again: its page's timeline lists only the new pod's steps, links the
// earlier pod (whose own page lists its delete), and folds repeated reads
// into one row with a count.
func TestBrowserTimelineOfARecreatedPod(t *testing.T) {
	c := SharedCluster(t)
	ctx := context.Background()
	tab := webtest.Browser(t)
	ns := freshNamespace(t, c, "recreate")

	c.MustKubectl(t, podManifest(ns, "mypod"), "apply", "-f", "-")
	old := waitPodPhase(t, c, ns, "mypod", corev1.PodRunning, 2*time.Minute)
	c.MustKubectl(t, "", "-n", ns, "delete", "pod", "mypod")
	c.MustKubectl(t, podManifest(ns, "mypod"), "apply", "-f", "-")
	waitPodPhase(t, c, ns, "mypod", corev1.PodRunning, 2*time.Minute)
	pod, err := c.Client.CoreV1().Pods(ns).Get(ctx, "mypod", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.UID == old.UID {
		t.Fatal("the pod was not created again")
	}

	webtest.Navigate(t, tab, c.WebURL+"/objects/pods/"+ns+"/mypod")
	webtest.WaitLive(t, tab)
	uids := webtest.Eval[[]string](t, tab, `[...document.querySelectorAll('[data-testid="timeline-row"]')].map(r => r.dataset.uid)`)
	named := 0
	for _, uid := range uids {
		switch uid {
		case string(pod.UID):
			named++
		case "":
		default:
			t.Errorf("the timeline lists a step of another pod (uid %s): %q", uid, uids)
		}
	}
	if named == 0 {
		t.Fatalf("the timeline lists no step of the new pod: %q", uids)
	}
	rows := webtest.Eval[[]string](t, tab, `[...document.querySelectorAll('[data-testid="timeline-row"]')].map(r => r.textContent.replace(/\s+/g, " "))`)
	if anyContains(rows, "delete pods") {
		t.Errorf("the new pod's timeline lists the old pod's delete: %q", rows)
	}
	if !anyContains(rows, "create pods") || !anyContains(rows, "Started") {
		t.Errorf("the new pod's timeline lacks its create or its start: %q", rows)
	}
	link := webtest.Eval[string](t, tab, `document.querySelector('[data-testid="earlier-incarnations"] [data-testid="incarnation-link"]')?.getAttribute("href") || ""`)
	if want := "/objects/pods/" + ns + "/mypod?uid=" + string(old.UID); link != want {
		t.Fatalf("earlier pod link = %q, want %q", link, want)
	}

	// Reads fold into one row, live (the admin's client read the pod
	// while waiting for it to run).
	fold := `[...document.querySelectorAll('[data-testid="timeline-row"]')].filter(r => r.dataset.foldKey === "glassplane-admin get pods 200")`
	before := webtest.Eval[int](t, tab, `(rows => rows.length ? Number(rows[0].dataset.count) : 0)(`+fold+`)`)
	for range 3 {
		c.MustKubectl(t, "", "-n", ns, "get", "pod", "mypod")
	}
	webtest.WaitFor(t, tab, fmt.Sprintf(`%s.length === 1 && Number(%s[0].dataset.count) === %d`, fold, fold, before+3))
	if txt, want := webtest.Eval[string](t, tab, fold+`[0].textContent`), fmt.Sprintf("×%d", before+3); !strings.Contains(txt, want) {
		t.Errorf("folded read row = %q, want %s", txt, want)
	}

	// The earlier pod's page lists its own steps, its delete included.
	webtest.Navigate(t, tab, c.WebURL+link)
	webtest.WaitSelector(t, tab, webtest.TestID("past-incarnation"))
	past := webtest.Eval[[]string](t, tab, `[...document.querySelectorAll('[data-testid="timeline-row"]')].map(r => r.dataset.uid + " " + r.textContent.replace(/\s+/g, " "))`)
	if !anyContains(past, "delete pods") || anyContains(past, string(pod.UID)) {
		t.Errorf("the earlier pod's timeline: %q", past)
	}
	if webtest.Eval[string](t, tab, `document.querySelector('[data-testid="current-incarnation"]')?.getAttribute("href") || ""`) != "/objects/pods/"+ns+"/mypod" {
		t.Error("the earlier pod's page does not link the pod stored now")
	}
}
