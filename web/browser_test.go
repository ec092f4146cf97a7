package web

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/glassplane/glassplane/api/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/web/webtest"
)

// TestBrowser drives the dashboard in chromium over the real store: pods
// appear under their node and change phase without a reload, the etcd
// explorer finds the key, and the object page's timeline grows live.
func TestBrowser(t *testing.T) {
	e := newEnv(t)
	ctx := webtest.Browser(t)
	out := webtest.OutputDir(t)
	e.put(t, "/registry/minions/node1", node("node1", corev1.ConditionTrue))
	e.put(t, "/registry/minions/node2", node("node2", corev1.ConditionTrue))

	webtest.Navigate(t, ctx, e.srv.URL+"/")
	webtest.WaitSelector(t, ctx, webtest.TestID("node-node1"))
	webtest.WaitLive(t, ctx)

	chip := webtest.TestID("node-node1") + " " + webtest.TestID("pod-default-web")
	t.Run("a new pod appears under its node", func(t *testing.T) {
		e.put(t, "/registry/pods/default/web", pod("default", "web", "node1", corev1.PodPending))
		webtest.WaitSelector(t, ctx, chip+`[data-phase="Pending"]`)
	})
	t.Run("its phase changes live", func(t *testing.T) {
		e.put(t, "/registry/pods/default/web", pod("default", "web", "node1", corev1.PodRunning))
		webtest.WaitSelector(t, ctx, chip+`[data-phase="Running"]`)
	})
	t.Run("a hostile name stays text", func(t *testing.T) {
		e.put(t, "/registry/pods/default/"+hostileName, pod("default", hostileName, "node2", corev1.PodPending))
		webtest.WaitSelector(t, ctx, webtest.TestID("pod-default-"+hostileName))
		if n := webtest.Eval[int](t, ctx, `document.querySelectorAll("img").length`); n != 0 {
			t.Errorf("found %d <img> elements", n)
		}
		name := webtest.Eval[string](t, ctx, `document.querySelector(`+webtest.JSString(webtest.TestID("pod-default-"+hostileName))+` + " .pod-name").textContent`)
		if name != hostileName {
			t.Errorf("chip text = %q", name)
		}
	})
	t.Run("the feed shows requests", func(t *testing.T) {
		e.ring.Add(auditEvent("create", "pods", "binding", "default", "web", "system:kube-scheduler", time.Now(),
			map[string]string{v1alpha1.AnnotationStages: "authentication,authorization,admission,etcd"}))
		webtest.WaitSelector(t, ctx, webtest.TestID("feed-item")+` [data-stage="etcd"][data-state="ok"]`)
	})
	webtest.Screenshot(t, ctx, filepath.Join(out, "dashboard-overview.png"))

	t.Run("etcd explorer finds the key", func(t *testing.T) {
		webtest.Navigate(t, ctx, e.srv.URL+"/etcd")
		key := `[data-testid="etcd-key"][data-key="/registry/pods/default/web"]`
		webtest.WaitSelector(t, ctx, key)
		webtest.Navigate(t, ctx, e.srv.URL+"/etcd?key=/registry/pods/default/web")
		webtest.WaitFor(t, ctx, `document.querySelector('[data-testid="etcd-json"]').textContent.includes('"name": "web"')`)
		webtest.WaitLive(t, ctx)
		e.put(t, "/registry/pods/default/web", pod("default", "web", "node1", corev1.PodSucceeded))
		webtest.WaitSelector(t, ctx, `[data-testid="etcd-change"][data-key="/registry/pods/default/web"]`)
		webtest.WaitFor(t, ctx, `document.querySelector('[data-testid="etcd-json"]').textContent.includes('"phase": "Succeeded"')`)
		webtest.Screenshot(t, ctx, filepath.Join(out, "dashboard-etcd.png"))
	})
	t.Run("object timeline grows live", func(t *testing.T) {
		webtest.Navigate(t, ctx, e.srv.URL+"/objects/pods/default/web")
		webtest.WaitSelector(t, ctx, webtest.TestID("timeline-row"))
		webtest.WaitLive(t, ctx)
		before := webtest.Eval[int](t, ctx, `document.querySelectorAll('[data-testid="timeline-row"]').length`)
		ev := coreEvent("web.1", pod("default", "web", "", ""), "Started", "kubelet", "Started container c", time.Now())
		ev.EventTime = metav1MicroNow()
		e.put(t, "/registry/events/default/web.1", ev)
		webtest.WaitFor(t, ctx, `document.querySelectorAll('[data-testid="timeline-row"]').length === `+itoa(int64(before+1)))
		webtest.Screenshot(t, ctx, filepath.Join(out, "dashboard-object.png"))
	})
}

const hostileName = `<img src=x onerror=alert(1)>`

func metav1MicroNow() metav1.MicroTime { return metav1.NewMicroTime(time.Now()) }
