package e2e

import (
	"context"
	"fmt"
	"path/filepath"
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
	webtest.WaitFor(t, overview, `document.querySelector('[data-testid="connection"]').dataset.state === "live"`)
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
