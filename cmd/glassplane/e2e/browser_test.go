package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/web/webtest"
)

// TestBrowserApplyWatchTimelineEtcd drives the dashboard in Debian's
// chromium: paste a pod manifest, submit, watch the pod appear on its node
// and turn Running in another tab without a reload, open its timeline, and
// find its key in the etcd explorer.
func TestBrowserApplyWatchTimelineEtcd(t *testing.T) {
	c := SharedCluster(t)
	overview := webtest.Browser(t)
	out := webtest.OutputDir(t)

	webtest.Navigate(t, overview, c.WebURL+"/")
	webtest.WaitSelector(t, overview, webtest.TestID("nodes"))
	webtest.WaitLive(t, overview)
	// A marker that a reload would wipe.
	webtest.Eval[bool](t, overview, `window.__noReload = true`)

	// A second tab pastes the manifest into the apply form.
	form, cancel := chromedp.NewContext(overview)
	defer cancel()
	// A tab lives as long as the context of its first action: open it on
	// form itself, not on a shorter-lived child.
	if err := chromedp.Do(form, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("failed to open a second tab: %v", err)
	}
	manifest := `apiVersion: v1
kind: Pod
metadata:
  name: browserpod
  namespace: default
spec:
  containers:
  - name: web
    image: glassplane.local/hello:latest
`
	loginAdmin(t, c, form)
	webtest.Navigate(t, form, c.WebURL+"/apply")
	webtest.WaitSelector(t, form, webtest.TestID("manifest"))
	ctx, cancelRun := context.WithTimeout(form, webtest.Timeout)
	defer cancelRun()
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(webtest.TestID("manifest")), manifest),
		chromedp.Click(chromedp.CSS(webtest.TestID("apply-submit"))),
	); err != nil {
		t.Fatalf("failed to submit the apply form: %v", err)
	}
	webtest.WaitSelector(t, form, webtest.TestID("apply-result"))
	if got := webtest.Eval[string](t, form, `document.querySelector('[data-testid="apply-result"]').textContent`); !strings.Contains(got, "pod/browserpod created") {
		t.Fatalf("apply result = %q, want pod/browserpod created", got)
	}

	// The overview, never reloaded, shows the pod inside its node, Running.
	pod := waitPodPhase(t, c, "default", "browserpod", corev1.PodRunning, 2*time.Minute)
	chip := fmt.Sprintf(`[data-testid="node-%s"] [data-testid="pod-default-browserpod"]`, pod.Spec.NodeName)
	webtest.WaitFor(t, overview, fmt.Sprintf(`(() => { const e = document.querySelector(%s); return e && e.dataset.phase === "Running"; })()`, webtest.JSString(chip)))
	if !webtest.Eval[bool](t, overview, `window.__noReload === true`) {
		t.Fatal("the overview reloaded instead of updating live")
	}
	webtest.Screenshot(t, overview, filepath.Join(out, "dashboard.png"))

	// The timeline lists the create request, the bind and the node's events.
	webtest.Navigate(t, form, c.WebURL+"/objects/pods/default/browserpod")
	webtest.WaitSelector(t, form, webtest.TestID("timeline"))
	webtest.WaitFor(t, form, `[...document.querySelectorAll('[data-testid="timeline-row"]')].some(r => r.textContent.includes("Started"))`)
	rows := webtest.Eval[[]string](t, form, `[...document.querySelectorAll('[data-testid="timeline-row"]')].map(r => r.textContent.replace(/\s+/g, " "))`)
	for _, want := range []string{"create", "binding", "Scheduled", "Created", "Started"} {
		if !anyContains(rows, want) {
			t.Errorf("timeline has no %q row: %q", want, rows)
		}
	}
	webtest.Screenshot(t, form, filepath.Join(out, "timeline.png"))

	// The etcd explorer has the key, at the pod's current revision.
	webtest.Navigate(t, form, c.WebURL+"/etcd?key=/registry/pods/default/browserpod")
	webtest.WaitSelector(t, form, `[data-testid="etcd-key"][data-key="/registry/pods/default/browserpod"]`)
	if got := webtest.Eval[string](t, form, `document.querySelector('[data-testid="etcd-value-key"]').textContent`); got != "/registry/pods/default/browserpod" {
		t.Fatalf("selected etcd key = %q", got)
	}
	webtest.Screenshot(t, form, filepath.Join(out, "etcd.png"))

	if err := c.Client.CoreV1().Pods("default").Delete(context.Background(), "browserpod", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	webtest.WaitFor(t, overview, fmt.Sprintf(`document.querySelector(%s) === null`, webtest.JSString(`[data-testid="pod-default-browserpod"]`)))
}

func anyContains(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// click clicks the element with data-testid id.
func click(t *testing.T, tab context.Context, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, webtest.Timeout)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(webtest.TestID(id)))); err != nil {
		t.Fatalf("failed to click %s: %v", id, err)
	}
}

// TestBrowserTempoStepHoldsTheScheduler switches the classroom tempo to step
// on the overview's tempo panel: a new pod is not bound while the scheduler
// waits (the panel and the map show it waiting), one Next lets the
// scheduler bind it and no more, the next Next lets the node agent start
// its container. Without a login the control is disabled; the admin (by
// the one-time link) changes it. A ServiceAccount without rights, logged in
// with its token, sees the control disabled and gets RBAC's Forbidden when
// it tries.
func TestBrowserTempoStepHoldsTheScheduler(t *testing.T) {
	c := SharedCluster(t)
	ctx := context.Background()
	tab := webtest.Browser(t)
	out := webtest.OutputDir(t)
	t.Cleanup(func() {
		c.Kubectl(t, "", "-n", "kube-system", "patch", "configmap", "glassplane-tempo", "--type", "merge", "-p", `{"data":{"mode":"realtime"}}`)
	})

	webtest.Navigate(t, tab, c.WebURL+"/")
	webtest.WaitSelector(t, tab, webtest.TestID("tempo"))
	if webtest.Eval[string](t, tab, `document.querySelector('[data-testid="tempo"]').dataset.canChange`) != "false" {
		t.Fatal("the tempo control is enabled without a login")
	}
	loginAdmin(t, c, tab)
	webtest.WaitSelector(t, tab, webtest.TestID("tempo"))
	webtest.WaitLive(t, tab)
	if webtest.Eval[string](t, tab, `document.querySelector('[data-testid="tempo"]').dataset.canChange`) != "true" {
		t.Fatal("the admin may not change the tempo")
	}
	click(t, tab, "tempo-mode-step")
	webtest.WaitFor(t, tab, `document.querySelector('[data-testid="tempo"]').dataset.mode === "step"`)
	if msg := webtest.Eval[string](t, tab, `(e => e.hidden ? "" : e.textContent)(document.querySelector('[data-testid="tempo-error"]'))`); msg != "" {
		t.Fatalf("the tempo panel shows an error: %q", msg)
	}
	cm, err := c.Client.CoreV1().ConfigMaps("kube-system").Get(ctx, "glassplane-tempo", metav1.GetOptions{})
	if err != nil || cm.Data["mode"] != "step" {
		t.Fatalf("tempo object after choosing step: %v %v", cm.Data, err)
	}

	c.MustKubectl(t, "", "run", "steppod", "--image=glassplane.local/hello:latest", "--restart=Never")
	t.Cleanup(func() { c.Kubectl(t, "", "delete", "pod", "steppod", "--wait=false") })
	webtest.WaitFor(t, tab, `[...document.querySelectorAll('[data-testid="tempo-waiting-item"]')].some(li => li.textContent === "scheduler: schedule pod default/steppod")`)
	webtest.WaitFor(t, tab, `document.querySelector('[data-testid="map-box-scheduler"]').classList.contains("tempo-waiting-box")`)
	webtest.Screenshot(t, tab, filepath.Join(out, "tempo-step.png"))
	// The scheduler holds the pod as long as no step is released.
	time.Sleep(2 * time.Second)
	pod, err := c.Client.CoreV1().Pods("default").Get(ctx, "steppod", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Spec.NodeName != "" {
		t.Fatalf("pod bound to %q in step mode before any step was released", pod.Spec.NodeName)
	}

	click(t, tab, "tempo-next")
	Eventually(t, time.Minute, "the pod is bound after one step", func() error {
		p, err := c.Client.CoreV1().Pods("default").Get(ctx, "steppod", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Spec.NodeName == "" {
			return fmt.Errorf("not bound")
		}
		pod = p
		return nil
	})
	// One step, one action: the node agent now waits to start the container.
	if err := waitJS(tab, fmt.Sprintf(`[...document.querySelectorAll('[data-testid="tempo-waiting-item"]')].some(li => li.textContent === %s)`,
		webtest.JSString("node/"+pod.Spec.NodeName+": start container steppod of pod default/steppod"))); err != nil {
		cm, _ := c.Client.CoreV1().ConfigMaps("kube-system").Get(ctx, "glassplane-tempo", metav1.GetOptions{})
		p, _ := c.Client.CoreV1().Pods("default").Get(ctx, "steppod", metav1.GetOptions{})
		shown := webtest.Eval[[]string](t, tab, `[...document.querySelectorAll('[data-testid="tempo-waiting-item"]')].map(li => li.textContent)`)
		t.Fatalf("the node agent is not shown waiting: %v; page shows %q; tempo %v; pod phase %s\n%s", err, shown, cm.Data, p.Status.Phase, tail(c.Log(), 60))
	}
	webtest.WaitFor(t, tab, `document.querySelector('[data-testid="tempo-last"]').textContent.includes("scheduler: schedule pod default/steppod")`)
	if p, _ := c.Client.CoreV1().Pods("default").Get(ctx, "steppod", metav1.GetOptions{}); p != nil && p.Status.Phase == corev1.PodRunning {
		t.Fatal("the pod started although only one step was released")
	}
	click(t, tab, "tempo-next")
	waitPodPhase(t, c, "default", "steppod", corev1.PodRunning, 2*time.Minute)

	click(t, tab, "tempo-mode-realtime")
	webtest.WaitFor(t, tab, `document.querySelector('[data-testid="tempo"]').dataset.mode === "realtime"`)

	// A user without rights: the control is disabled and the API says why.
	c.MustKubectl(t, "", "create", "serviceaccount", "tempo-viewer")
	token := strings.TrimSpace(c.MustKubectl(t, "", "create", "token", "tempo-viewer"))
	viewer := newTab(t, tab)
	webtest.Navigate(t, viewer, c.WebURL+"/login")
	lctx, cancel := context.WithTimeout(viewer, webtest.Timeout)
	defer cancel()
	if err := chromedp.Do(lctx,
		chromedp.SetValue(chromedp.CSS(webtest.TestID("login-token")), token),
		chromedp.Click(chromedp.CSS(webtest.TestID("login-submit"))),
	); err != nil {
		t.Fatalf("failed to log in: %v", err)
	}
	webtest.WaitSelector(t, viewer, webtest.TestID("tempo"))
	if got := webtest.Eval[string](t, viewer, `document.querySelector('[data-testid="tempo-acting-as"]').textContent`); !strings.Contains(got, "system:serviceaccount:default:tempo-viewer") {
		t.Fatalf("acting as %q, want the ServiceAccount", got)
	}
	if !webtest.Eval[bool](t, viewer, `document.querySelector('[data-testid="tempo-set"]').disabled`) {
		t.Fatal("the tempo control is enabled for a user RBAC does not allow to update it")
	}
	// Sending the form anyway (as a script could) gets RBAC's answer.
	webtest.Eval[bool](t, viewer, `(() => {
		const f = document.querySelector('[data-testid="tempo-form"]');
		const body = new URLSearchParams(new FormData(f)); body.set("mode", "step");
		fetch("/tempo", {method: "POST", body, headers: {Accept: "application/json"}})
			.then(async r => { window.__tempoAnswer = r.status + " " + (await r.json()).message; });
		return true;
	})()`)
	webtest.WaitFor(t, viewer, `typeof window.__tempoAnswer === "string"`)
	msg := webtest.Eval[string](t, viewer, `window.__tempoAnswer`)
	if !strings.HasPrefix(msg, "403 ") || !strings.Contains(msg, `configmaps "glassplane-tempo" is forbidden: User "system:serviceaccount:default:tempo-viewer" cannot get resource "configmaps"`) {
		t.Fatalf("a forbidden tempo change answered %q", msg)
	}
	cm, err = c.Client.CoreV1().ConfigMaps("kube-system").Get(ctx, "glassplane-tempo", metav1.GetOptions{})
	if err != nil || cm.Data["mode"] != "realtime" {
		t.Fatalf("tempo after a forbidden change: %v %v", cm.Data, err)
	}
}

// loginAs logs the browser in to the dashboard with an API bearer token.
func loginAs(t *testing.T, c *Cluster, tab context.Context, token string) {
	t.Helper()
	webtest.Navigate(t, tab, c.WebURL+"/login")
	ctx, cancel := context.WithTimeout(tab, webtest.Timeout)
	defer cancel()
	// Mark the login page, so the wait below sees the page the login led
	// to (the login page has a nav of its own).
	webtest.Eval[bool](t, tab, `(document.body.dataset.stale = "1") === "1"`)
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(webtest.TestID("login-token")), token),
		chromedp.Click(chromedp.CSS(webtest.TestID("login-submit"))),
	); err != nil {
		t.Fatalf("failed to log in: %v", err)
	}
	// Poll by hand: a poll running in the page dies with the navigation.
	deadline := time.Now().Add(webtest.Timeout)
	for {
		ectx, cancel := context.WithTimeout(tab, 5*time.Second)
		done, err := chromedp.Run(ectx, chromedp.Evaluate[bool](`document.readyState === "complete" && document.body.dataset.stale !== "1" && !location.pathname.startsWith("/login") && document.querySelector('[data-testid="nav"]') !== null`))
		cancel()
		if err == nil && done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the login did not lead to a dashboard page: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// fillAndClick puts manifest into the apply form and presses the button
// with data-testid button.
func fillAndClick(t *testing.T, tab context.Context, manifest, button string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, webtest.Timeout)
	defer cancel()
	// Mark the page, so the wait below sees the answer's page, not this one.
	webtest.Eval[bool](t, tab, `(document.body.dataset.stale = "1") === "1"`)
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(webtest.TestID("manifest")), manifest),
		chromedp.Click(chromedp.CSS(webtest.TestID(button))),
	); err != nil {
		t.Fatalf("failed to press %s: %v", button, err)
	}
	// Poll by hand: a poll running in the page dies with the navigation.
	deadline := time.Now().Add(webtest.Timeout)
	for {
		ectx, cancel := context.WithTimeout(tab, 5*time.Second)
		done, err := chromedp.Run(ectx, chromedp.Evaluate[bool](`document.readyState === "complete" && document.body.dataset.stale !== "1" && document.querySelector('[data-testid="apply-result"]') !== null`))
		cancel()
		if err == nil && done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer page after pressing %s: %v", button, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestBrowserApplyDryRunFieldErrorsAndForbidden: the apply page's dry run
// shows what defaulting adds and stores nothing; Apply then creates; an
// invalid name is reported on its field with the line selected in the
// editor; and a user without rights, logged in with a ServiceAccount token,
// gets RBAC's Forbidden message for their own identity.
func TestBrowserApplyDryRunFieldErrorsAndForbidden(t *testing.T) {
	c := SharedCluster(t)
	ctx := context.Background()
	tab := webtest.Browser(t)
	out := webtest.OutputDir(t)
	manifest := strings.Replace(seedPod, "seed-mypod", "dryrunpod", 1)
	t.Cleanup(func() { c.Kubectl(t, "", "delete", "pod", "dryrunpod", "--wait=false") })

	loginAdmin(t, c, tab)
	webtest.Navigate(t, tab, c.WebURL+"/apply")
	fillAndClick(t, tab, manifest, "apply-dryrun")
	if got := webtest.Eval[string](t, tab, `document.querySelector('[data-testid="apply-result"]').dataset.action`); got != "created (server dry run)" {
		t.Fatalf("dry run result %q", got)
	}
	added := webtest.Eval[[]string](t, tab, `[...document.querySelectorAll('[data-testid="added-field"]')].map(r => r.dataset.path)`)
	for _, want := range []string{"spec.containers[0].imagePullPolicy", "spec.restartPolicy", "metadata.creationTimestamp"} {
		if !slices.Contains(added, want) {
			t.Errorf("the dry run's diff lacks %s: %q", want, added)
		}
	}
	webtest.Screenshot(t, tab, filepath.Join(out, "apply-dry-run.png"))
	if _, err := c.Client.CoreV1().Pods("default").Get(ctx, "dryrunpod", metav1.GetOptions{}); err == nil {
		t.Fatal("the dry run stored the pod")
	}
	fillAndClick(t, tab, manifest, "apply-submit")
	if got := webtest.Eval[string](t, tab, `document.querySelector('[data-testid="apply-result"]').dataset.action`); got != "created" {
		t.Fatalf("apply result %q", got)
	}
	if _, err := c.Client.CoreV1().Pods("default").Get(ctx, "dryrunpod", metav1.GetOptions{}); err != nil {
		t.Fatalf("Apply did not store the pod: %v", err)
	}

	invalid := strings.Replace(seedPod, "seed-mypod", "My_Pod", 1)
	fillAndClick(t, tab, invalid, "apply-dryrun")
	webtest.WaitSelector(t, tab, `[data-testid="field-error"][data-path="metadata.name"][data-line="4"]`)
	webtest.WaitFor(t, tab, `document.getElementById("manifest").dataset.selectedLine === "4"`)
	if sel := webtest.Eval[string](t, tab, `(() => { const e = document.getElementById("manifest"); return e.value.slice(e.selectionStart, e.selectionEnd); })()`); sel != "  name: My_Pod" {
		t.Errorf("the editor selected %q, want the name line", sel)
	}
	if !webtest.Eval[bool](t, tab, `document.querySelector('[data-testid="manifest-lines"] li[data-line="4"]').dataset.error === "true"`) {
		t.Error("the numbered manifest does not mark line 4")
	}
	webtest.Screenshot(t, tab, filepath.Join(out, "apply-field-error.png"))

	c.MustKubectl(t, "", "create", "serviceaccount", "apply-viewer")
	// It may read (the object page needs get on the pod), not write.
	c.MustKubectl(t, "", "create", "rolebinding", "apply-viewer-view", "--clusterrole=view", "--serviceaccount=default:apply-viewer")
	t.Cleanup(func() { c.Kubectl(t, "", "delete", "rolebinding", "apply-viewer-view", "--ignore-not-found") })
	token := strings.TrimSpace(c.MustKubectl(t, "", "create", "token", "apply-viewer"))
	loginAs(t, c, tab, token)
	webtest.Navigate(t, tab, c.WebURL+"/apply")
	if got := webtest.Eval[string](t, tab, `document.querySelector('[data-testid="apply-acting-as"]').textContent`); !strings.Contains(got, "system:serviceaccount:default:apply-viewer") {
		t.Fatalf("acting as %q", got)
	}
	fillAndClick(t, tab, strings.Replace(seedPod, "seed-mypod", "viewerpod", 1), "apply-submit")
	msg := webtest.Eval[string](t, tab, `document.querySelector('[data-testid="apply-result-error"]')?.textContent ?? ""`)
	if !strings.Contains(msg, `is forbidden: User "system:serviceaccount:default:apply-viewer" cannot create resource "pods"`) {
		t.Fatalf("a user without rights saw %q", msg)
	}
	webtest.Screenshot(t, tab, filepath.Join(out, "apply-forbidden.png"))
	if _, err := c.Client.CoreV1().Pods("default").Get(ctx, "viewerpod", metav1.GetOptions{}); err == nil {
		t.Fatal("a user without rights created a pod through the dashboard")
	}
	// Delete, too, is theirs: refused with the API's words, the pod stays.
	webtest.Navigate(t, tab, c.WebURL+"/objects/pods/default/dryrunpod")
	click(t, tab, "object-delete")
	webtest.WaitSelector(t, tab, webtest.TestID("object-delete-error"))
	if msg := webtest.Eval[string](t, tab, `document.querySelector('[data-testid="object-delete-error"]').textContent`); !strings.Contains(msg, `pods "dryrunpod" is forbidden: User "system:serviceaccount:default:apply-viewer" cannot delete resource "pods"`) {
		t.Fatalf("a forbidden delete showed %q", msg)
	}
	if _, err := c.Client.CoreV1().Pods("default").Get(ctx, "dryrunpod", metav1.GetOptions{}); err != nil {
		t.Fatalf("the pod is gone after a forbidden delete: %v", err)
	}
}

// TestBrowserDemosPage starts a classroom demo from the dashboard, in
// Korean, and follows its narrated steps to the scheduler's verdict.
func TestBrowserDemosPage(t *testing.T) {
	c := SharedCluster(t)
	tab := webtest.Browser(t)
	out := webtest.OutputDir(t)
	loginAdmin(t, c, tab)
	webtest.Navigate(t, tab, c.WebURL+"/demos?lang=ko")
	for _, name := range []string{"pod-lifecycle", "deployment-rollout", "unschedulable", "toleration", "preemption", "crash-loop", "node-failure", "rbac-denied"} {
		webtest.WaitSelector(t, tab, webtest.TestID("demo-"+name))
	}
	if got := webtest.Eval[string](t, tab, `document.querySelector('[data-testid="demo-unschedulable"]').textContent`); !strings.Contains(got, "어느 노드에도 들어가지 않는 Pod") {
		t.Fatalf("the demo's title is not in Korean: %q", got)
	}
	click(t, tab, "demo-run-unschedulable")
	webtest.WaitSelector(t, tab, `[data-testid="demo-run"][data-done="true"]`)
	steps := webtest.Eval[[]string](t, tab, `[...document.querySelectorAll('[data-testid="demo-run"] [data-testid="demo-step"]')].map(s => s.textContent)`)
	if len(steps) != 2 || !strings.Contains(steps[0], "CPU 1000개를 요청하는 Pod") || !strings.Contains(steps[1], "FailedScheduling: 0/") || !strings.Contains(steps[1], "Insufficient cpu") {
		t.Fatalf("the run's steps: %q", steps)
	}
	if webtest.Eval[bool](t, tab, `document.querySelector('[data-testid="demo-run-error"]') !== null`) {
		t.Fatal("the demo failed")
	}
	webtest.Screenshot(t, tab, filepath.Join(out, "demos.png"))
}
