package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/web/webtest"
)

// seedPod is the seed notes' pod (their nginx image is replaced by the image
// every node has, since tests run offline).
const seedPod = `apiVersion: v1
kind: Pod
metadata:
  name: seed-mypod
  namespace: default
spec:
  containers:
  - name: mycontainer
    image: glassplane.local/hello:latest
`

// mapStep is one step the cluster map rendered (window.glassplane.steps).
type mapStep struct {
	Kind  string `json:"kind"`
	Label string `json:"label"`
	From  string `json:"from"`
	To    string `json:"to"`
	Pod   string `json:"pod"`
}

// TestDashboardTeaches applies the seed's pod from the form and follows it
// through every page that explains it: the cluster map animates the steps in
// the order they happened and narrates them (in Korean when chosen), the
// timeline lists the pipeline and the kubelet's steps, the request page
// shows the pipeline, and the etcd explorer shows the key's history.
func TestDashboardTeaches(t *testing.T) {
	c := SharedCluster(t)
	home := webtest.Browser(t)
	out := webtest.OutputDir(t)

	webtest.Navigate(t, home, c.WebURL+"/")
	webtest.WaitSelector(t, home, webtest.TestID("cluster-map"))
	webtest.WaitLive(t, home)
	webtest.WaitSelector(t, home, webtest.TestID("map-box-apiserver"))

	form := newTab(t, home)
	loginAdmin(t, c, form)
	webtest.Navigate(t, form, c.WebURL+"/apply")
	webtest.WaitSelector(t, form, webtest.TestID("manifest"))
	submit(t, form, seedPod)
	if got := webtest.Eval[string](t, form, `document.querySelector('[data-testid="apply-result"]').textContent`); !strings.Contains(got, "pod/seed-mypod created") {
		t.Fatalf("apply result = %q, want pod/seed-mypod created", got)
	}
	t.Cleanup(func() {
		c.Client.CoreV1().Pods("default").Delete(context.Background(), "seed-mypod", metav1.DeleteOptions{})
	})
	pod := waitPodPhase(t, c, "default", "seed-mypod", corev1.PodRunning, 2*time.Minute)

	t.Run("the cluster map animates the steps in order", func(t *testing.T) {
		want := []string{"request", "etcd", "watch-scheduler", "bind", "etcd", "watch-node", "runtime-created", "runtime-started", "running"}
		var steps []mapStep
		waitErr := waitJS(home, `(window.glassplane?.steps || []).some(s => s.kind === "running" && s.pod === "seed-mypod")`)
		raw := webtest.Eval[string](t, home, `JSON.stringify(window.glassplane.steps)`)
		if err := json.Unmarshal([]byte(raw), &steps); err != nil {
			t.Fatal(err)
		}
		if waitErr != nil {
			t.Fatalf("the map never showed seed-mypod Running: %v; steps: %+v", waitErr, steps)
		}
		steps = slices.DeleteFunc(steps, func(s mapStep) bool { return s.Pod != "seed-mypod" })
		kinds := make([]string, len(steps))
		for i, s := range steps {
			kinds[i] = s.Kind
		}
		if !subsequence(kinds, want) {
			t.Fatalf("map steps %v do not contain %v in order", kinds, want)
		}
		for _, s := range steps {
			switch s.Kind {
			case "request":
				if s.From != "user" || s.To != "apiserver" {
					t.Errorf("request travels %s → %s, want user → apiserver", s.From, s.To)
				}
			case "bind":
				if s.From != "scheduler" || !strings.Contains(s.Label, pod.Spec.NodeName) {
					t.Errorf("bind step %+v, want from scheduler naming %s", s, pod.Spec.NodeName)
				}
			case "watch-node", "runtime-started":
				if !strings.Contains(s.From+s.To, pod.Spec.NodeName) {
					t.Errorf("%s step %+v does not involve node %s", s.Kind, s, pod.Spec.NodeName)
				}
			}
		}
		dot := fmt.Sprintf(`[data-testid="map-node-%s"] [data-testid="map-pod-default-seed-mypod"]`, pod.Spec.NodeName)
		webtest.WaitFor(t, home, fmt.Sprintf(`document.querySelector(%s)?.dataset.phase === "Running"`, webtest.JSString(dot)))
		webtest.Screenshot(t, home, filepath.Join(out, "overview-map.png"))
	})

	t.Run("the narration speaks Korean when chosen", func(t *testing.T) {
		// The list keeps the newest steps only, and the shared cluster's
		// other work may have pushed the seed pod's out: a fresh pod's bind
		// (or, in a burst, the watch that brought it to the scheduler)
		// narrates the scheduler.
		listed := `document.querySelector('[data-testid="steps"] [data-kind="bind"], [data-testid="steps"] [data-kind="watch-scheduler"]') !== null`
		if !webtest.Eval[bool](t, home, listed) {
			// A map still condensed from the earlier work would list
			// only the newest few of the fresh pod's steps in one
			// update, maybe not its bind: the pod is made once the map
			// animates each step again, on a live page.
			webtest.WaitLive(t, home)
			webtest.WaitFor(t, home, `window.glassplane.mapIdle()`)
			webtest.Eval[bool](t, home, `document.getElementById("steps").replaceChildren() || true`)
			ko := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "seed-ko"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "glassplane.local/hello:latest"}}}}
			if _, err := c.Client.CoreV1().Pods("default").Create(context.Background(), ko, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				c.Client.CoreV1().Pods("default").Delete(context.Background(), "seed-ko", metav1.DeleteOptions{})
			})
			wctx, cancel := context.WithTimeout(home, webtest.Timeout)
			err := chromedp.Do(wctx, chromedp.Poll[chromedp.Void](listed, chromedp.WithPollingInterval(100*time.Millisecond)))
			cancel()
			if err != nil {
				p, perr := c.Client.CoreV1().Pods("default").Get(context.Background(), "seed-ko", metav1.GetOptions{})
				if perr == nil {
					t.Fatalf("seed-ko's bind was not listed: %v; the pod: node %q, phase %s; the map: %s", err, p.Spec.NodeName, p.Status.Phase, mapState(t, home))
				}
				t.Fatalf("seed-ko's bind was not listed: %v; the pod: %v; the map: %s", err, perr, mapState(t, home))
			}
		}
		webtest.Eval[bool](t, home, `(document.querySelector('[data-testid="steps"] [data-kind="bind"]') || document.querySelector('[data-testid="steps"] [data-kind="watch-scheduler"]')).click() || true`)
		en := webtest.Eval[string](t, home, `document.getElementById("narration-text").textContent`)
		if !strings.Contains(en, "scheduler") {
			t.Errorf("English narration of the bind = %q", en)
		}
		webtest.Eval[bool](t, home, `document.querySelector('[data-testid="lang-ko"]').click() || true`)
		webtest.WaitFor(t, home, `document.getElementById("narration-text").textContent.includes("스케줄러")`)
		// The choice is remembered across page loads. The other tab hears
		// of it once the browser has stored it: a reload before that could
		// read the old value.
		webtest.WaitFor(t, form, `document.querySelector('[data-testid="lang-ko"]').getAttribute("aria-pressed") === "true"`)
		webtest.Navigate(t, home, c.WebURL+"/")
		webtest.WaitSelector(t, home, webtest.TestID("narration-text"))
		webtest.WaitFor(t, home, `document.querySelector('[data-testid="lang-ko"]').getAttribute("aria-pressed") === "true"`)
		webtest.Screenshot(t, home, filepath.Join(out, "overview-korean.png"))
		webtest.Eval[bool](t, home, `document.querySelector('[data-testid="lang-en"]').click() || true`)
	})

	t.Run("the request page shows the pipeline and where requests stop", func(t *testing.T) {
		// The page is live once its websocket opened; a page that missed it
		// (a resync racing the load on a busy machine) is loaded again.
		for attempt := 1; ; attempt++ {
			webtest.Navigate(t, form, c.WebURL+"/requests")
			webtest.WaitSelector(t, form, webtest.TestID("request-list"))
			err := pollJS(form, `document.getElementById("conn").dataset.state === "live"`, 20*time.Second)
			if err == nil {
				break
			}
			if attempt == 3 {
				t.Fatalf("the requests page never went live: %v", err)
			}
		}
		// An invalid object is refused by admission (422) ...
		bad := newTab(t, home)
		webtest.Navigate(t, bad, c.WebURL+"/apply")
		webtest.WaitSelector(t, bad, webtest.TestID("manifest"))
		submit(t, bad, strings.Replace(seedPod, "seed-mypod", "Seed_MyPod", 1))
		// ... and a request without credentials by authentication (401).
		if _, err := insecureGet(c.APIURL + "/api/v1/namespaces/default/pods"); err != nil {
			t.Fatal(err)
		}
		webtest.WaitSelector(t, form, `[data-testid="request"][data-code="422"] [data-stage="admission"][data-state="failed"]`)
		webtest.WaitSelector(t, form, `[data-testid="request"][data-code="401"] [data-stage="authentication"][data-state="failed"]`)
		reason := webtest.Eval[string](t, form, `document.querySelector('[data-testid="request"][data-code="422"] [data-testid="request-reason"]').textContent`)
		if !strings.Contains(reason, "Seed_MyPod") {
			t.Errorf("422 reason = %q, want the Status message naming the object", reason)
		}
		// The seed pod's create, which the dashboard sent as the admin who
		// logged in by the link, went all the way to etcd.
		webtest.Navigate(t, form, c.WebURL+"/requests?user=glassplane-admin")
		webtest.WaitSelector(t, form, `[data-testid="request"][data-code="201"] [data-stage="etcd"][data-state="ok"]`)
		webtest.Navigate(t, form, c.WebURL+"/requests?user=glassplane-admin")
		webtest.WaitSelector(t, form, `[data-testid="request"][data-code="422"]`)
		webtest.Screenshot(t, form, filepath.Join(out, "requests.png"))
	})

	t.Run("the etcd explorer shows the key's history and a diff", func(t *testing.T) {
		key := "/registry/pods/default/seed-mypod"
		webtest.Navigate(t, form, c.WebURL+"/etcd?key="+key)
		webtest.WaitSelector(t, form, webtest.TestID("etcd-history"))
		revs := webtest.Eval[[]string](t, form, `[...document.querySelectorAll('[data-testid="etcd-version-item"]')].map(v => v.dataset.revision)`)
		// Created by the form, bound by the scheduler, Running by the kubelet.
		if len(revs) < 3 {
			t.Fatalf("history has %d revisions (%v), want at least 3", len(revs), revs)
		}
		diff := webtest.Eval[string](t, form, `document.querySelector('[data-testid="etcd-diff"]').textContent`)
		if !strings.Contains(diff, "+") || !strings.Contains(diff, "Running") {
			t.Errorf("newest diff = %q, want the change to Running", diff)
		}
		first := revs[len(revs)-1]
		webtest.Navigate(t, form, c.WebURL+"/etcd?key="+key+"&rev="+first+"&from="+first+"&to="+revs[0])
		webtest.WaitSelector(t, form, webtest.TestID("etcd-past"))
		value := webtest.Eval[string](t, form, `document.querySelector('[data-testid="etcd-json"]').textContent`)
		if strings.Contains(value, `"nodeName"`) {
			t.Errorf("the value at the creating revision %s already has a node: %s", first, value)
		}
		diff = webtest.Eval[string](t, form, `document.querySelector('[data-testid="etcd-diff"]').textContent`)
		if !strings.Contains(diff, `"nodeName": "`+pod.Spec.NodeName+`"`) {
			t.Errorf("diff from creation to now = %q, want the nodeName added", diff)
		}
		webtest.Screenshot(t, form, filepath.Join(out, "etcd-history.png"))
		webtest.Navigate(t, form, c.WebURL+"/etcd?at="+first)
		webtest.WaitSelector(t, form, webtest.TestID("at-banner"))
		webtest.WaitSelector(t, form, `[data-testid="etcd-key"][data-key="`+key+`"]`)
	})

	t.Run("the timeline lists the pipeline and the kubelet's steps in order", func(t *testing.T) {
		webtest.Navigate(t, form, c.WebURL+"/objects/pods/default/seed-mypod")
		webtest.WaitSelector(t, form, webtest.TestID("timeline"))
		webtest.WaitFor(t, form, `[...document.querySelectorAll('#timeline-rows [data-testid="timeline-row"]')].some(r => r.textContent.includes("Started"))`)
		rows := webtest.Eval[[]string](t, form, `[...document.querySelectorAll('#timeline-rows [data-testid="timeline-row"]')].map(r => r.querySelector(".action").textContent.trim().split(/\s+/).slice(0, 2).join(" "))`)
		// Scheduled is recorded after the bind, through client-go's
		// asynchronous recorder, so the kubelet's steps may come first.
		for _, want := range [][]string{
			{"create pods", "create pods/binding", "Pulled", "Created", "Started"},
			{"create pods", "create pods/binding", "Scheduled"},
		} {
			if !subsequence(rows, want) {
				t.Errorf("timeline actions %q do not contain %q in order", rows, want)
			}
		}
		stages := webtest.Eval[[]string](t, form, `[...[...document.querySelectorAll('#timeline-rows [data-testid="timeline-row"]')].find(r => r.querySelector(".action").textContent.trim().split(/\s+/).slice(0, 2).join(" ") === "create pods").querySelectorAll("[data-stage]")].map(s => s.dataset.stage + "=" + s.dataset.state)`)
		if got := strings.Join(slices.DeleteFunc(stages, func(s string) bool { return strings.HasPrefix(s, "decoding") }), " "); got != "authentication=ok authorization=ok admission=ok etcd=ok" {
			t.Errorf("the create's stages = %s", got)
		}
		if n := webtest.Eval[int](t, form, `document.querySelectorAll('[data-testid="row-etcd-link"]').length`); n == 0 {
			t.Error("no timeline row links its etcd revision")
		}
		webtest.Screenshot(t, form, filepath.Join(out, "timeline.png"))
	})

	t.Run("hostile text renders as text on every page", func(t *testing.T) {
		const hostile = `<img src=x onerror=window.__xss=1>`
		ctx := context.Background()
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "hostile", Namespace: "default", Annotations: map[string]string{"note": hostile}},
			Data:       map[string]string{"html": hostile},
		}
		if _, err := c.Client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			c.Client.CoreV1().ConfigMaps("default").Delete(context.Background(), "hostile", metav1.DeleteOptions{})
		})
		ev := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "seed-mypod.hostile", Namespace: "default"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "default", Name: "seed-mypod", UID: pod.UID},
			Reason:         "Hostile", Message: hostile, Type: corev1.EventTypeNormal, Source: corev1.EventSource{Component: "e2e"},
			FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1,
		}
		if _, err := c.Client.CoreV1().Events("default").Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pages := []struct {
			path  string
			shown bool
		}{
			{"/", true},
			{"/requests", false},
			{"/etcd?key=/registry/configmaps/default/hostile", true},
			{"/objects/configmaps/default/hostile", true},
			{"/objects/pods/default/seed-mypod", true},
		}
		for _, p := range pages {
			path := p.path
			webtest.Navigate(t, form, c.WebURL+path)
			webtest.WaitLive(t, form)
			if p.shown {
				if err := waitJS(form, `document.body.textContent.includes(`+webtest.JSString(hostile)+`)`); err != nil {
					t.Errorf("%s does not show the hostile text as text: %v", path, err)
				}
			}
			if n := webtest.Eval[int](t, form, `document.querySelectorAll("img").length`); n != 0 {
				t.Errorf("%s has %d <img> elements", path, n)
			}
			if webtest.Eval[bool](t, form, `window.__xss === 1`) {
				t.Errorf("%s ran the hostile handler", path)
			}
		}
	})

	t.Run("events and nodes pages filter; presenter mode steps with the keyboard", func(t *testing.T) {
		webtest.Navigate(t, form, c.WebURL+"/events?reason=Scheduled&q=seed-mypod")
		webtest.WaitSelector(t, form, `[data-testid="event-row"][data-reason="Scheduled"]`)
		if n := webtest.Eval[int](t, form, `document.querySelectorAll('[data-testid="event-row"]:not([data-reason="Scheduled"])').length`); n != 0 {
			t.Errorf("the reason filter let %d other events through", n)
		}
		webtest.Navigate(t, form, c.WebURL+"/nodes?q="+pod.Spec.NodeName)
		webtest.WaitSelector(t, form, `[data-testid="node-row"][data-node="`+pod.Spec.NodeName+`"]`)

		webtest.Navigate(t, home, c.WebURL+"/")
		webtest.WaitLive(t, home)
		webtest.Eval[bool](t, home, `document.querySelector('[data-testid="presenter-toggle"]').click() || true`)
		webtest.WaitFor(t, home, `document.documentElement.classList.contains("presenter")`)
		// A fresh page has no steps yet: make one, then step back to it.
		if _, err := c.Client.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "presenter-step"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			c.Client.CoreV1().ConfigMaps("default").Delete(context.Background(), "presenter-step", metav1.DeleteOptions{})
		})
		webtest.WaitFor(t, home, `window.glassplane.steps.some(s => s.label.includes("presenter-step"))`)
		webtest.Eval[bool](t, home, `document.dispatchEvent(new KeyboardEvent("keydown", {key: "ArrowLeft"})) || true`)
		webtest.WaitSelector(t, home, `[data-testid="step"].current`)
		webtest.Screenshot(t, home, filepath.Join(out, "presenter.png"))
		webtest.Eval[bool](t, home, `document.querySelector('[data-testid="presenter-toggle"]').click() || true`)
	})
}

// mapState is what the overview's map lists and recorded last, its
// connection and the page's uncaught errors: a failure's report.
func mapState(t *testing.T, tab context.Context) string {
	t.Helper()
	return webtest.Eval[string](t, tab, `JSON.stringify({
		connection: document.querySelector('[data-testid="connection"]')?.dataset.state,
		idle: window.glassplane.mapIdle(),
		listed: [...document.querySelectorAll('[data-testid="steps"] [data-kind]')].slice(-12).map(e => e.dataset.kind + ": " + e.textContent),
		recorded: window.glassplane.steps.slice(-12).map(s => s.kind + ": " + s.label),
		errors: window.__pageErrors,
	})`)
}

// newTab opens a second tab in the browser of parent.
func newTab(t *testing.T, parent context.Context) context.Context {
	t.Helper()
	tab, cancel := chromedp.NewContext(parent)
	t.Cleanup(cancel)
	// A tab lives as long as the context of its first action.
	if err := chromedp.Do(tab, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("failed to open a tab: %v", err)
	}
	return tab
}

// submit pastes manifest into the apply form and waits for the outcome.
func submit(t *testing.T, tab context.Context, manifest string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, webtest.Timeout)
	defer cancel()
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(webtest.TestID("manifest")), manifest),
		chromedp.Click(chromedp.CSS(webtest.TestID("apply-submit"))),
	); err != nil {
		t.Fatalf("failed to submit the apply form: %v", err)
	}
	webtest.WaitSelector(t, tab, webtest.TestID("apply-result"))
}

// subsequence reports whether want appears in got in order (not
// necessarily adjacent).
func subsequence(got, want []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// waitJS polls a JavaScript condition like webtest.WaitFor but returns the
// failure, so the test can report what the page did see.
// pollJS waits up to timeout for expression to hold in tab.
func pollJS(tab context.Context, expression string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(tab, timeout+5*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expression,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(timeout)))
	return err
}

func waitJS(tab context.Context, expression string) error {
	ctx, cancel := context.WithTimeout(tab, webtest.Timeout+5*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expression,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(webtest.Timeout)))
	return err
}

// TestDemoCommand runs every classroom demo through the binary against the
// shared cluster, as a presenter would, and checks each narrated outcome.
func TestDemoCommand(t *testing.T) {
	c := SharedCluster(t)
	const ns = "demo-e2e"
	c.MustKubectl(t, "", "create", "namespace", ns)
	t.Cleanup(func() { c.Kubectl(t, "", "delete", "namespace", ns, "--wait=false") })

	demo := func(t *testing.T, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, binary, append([]string{"demo"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("glassplane demo %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	list := demo(t, "list")
	for _, name := range []string{"pod-lifecycle", "deployment-rollout", "unschedulable", "toleration", "preemption", "crash-loop", "node-failure", "rbac-denied"} {
		if !strings.Contains(list, name) {
			t.Errorf("demo list has no %s:\n%s", name, list)
		}
	}
	if ko := demo(t, "list", "--lang", "ko"); !strings.Contains(ko, "스터디 노트의 Pod") {
		t.Errorf("demo list --lang ko is not in Korean:\n%s", ko)
	}

	tests := []struct {
		name string
		lang string
		want []string
	}{
		{"pod-lifecycle", "en", []string{"[1/4] kubectl apply -f pod.yaml", "pod/mypod created: etcd key /registry/pods/demo-e2e/mypod", "pod/mypod bound to node ", "pod/mypod Running on ", "pod/mypod deleted"}},
		{"pod-lifecycle", "ko", []string{"매니페스트가 kube-apiserver로 전송됩니다", "→ Pod를 만들었습니다: pod/mypod, etcd 키 /registry/pods/demo-e2e/mypod", "에서 실행 중입니다(Running): pod/mypod", "→ Pod를 삭제했습니다: pod/mypod"}},
		{"deployment-rollout", "en", []string{"deployment.apps/hello successfully rolled out", "3/3 ready", "0/0 ready", "its ReplicaSets and Pods followed"}},
		{"unschedulable", "en", []string{"pod/toobig Pending, FailedScheduling: 0/", "Insufficient cpu"}},
		{"toleration", "en", []string{" tainted", "pod/no-toleration Pending, FailedScheduling: ", "untolerated taint", "pod/with-toleration bound to node "}},
		{"rbac-denied", "en", []string{`Error from server (Forbidden): pods is forbidden: User "student" cannot create resource "pods"`, "rolebinding.rbac.authorization.k8s.io/student-edit created", "pod/student-pod created by student"}},
	}
	for _, tc := range tests {
		t.Run(tc.name+"-"+tc.lang, func(t *testing.T) {
			out := demo(t, "run", tc.name, "--kubeconfig", c.Kubeconfig, "-n", ns, "--lang", tc.lang)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	// Each demo removed what it made: no pods, no binding, no taint.
	expectNoPods(t, c, ns)
	nodes, err := c.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		for _, taint := range n.Spec.Taints {
			if taint.Key == "glassplane.io/demo" {
				t.Errorf("node %s kept the demo's taint", n.Name)
			}
		}
	}
	if _, err := c.Kubectl(t, "", "-n", "demo-e2e", "get", "rolebinding", "student-edit"); err == nil {
		t.Error("the RBAC demo left its RoleBinding")
	}
	if out, err := exec.Command(binary, "demo", "run", "no-such-demo", "--kubeconfig", c.Kubeconfig).CombinedOutput(); err == nil || !strings.Contains(string(out), `no demo "no-such-demo"`) {
		t.Errorf("an unknown demo: err %v, output %s", err, out)
	}
}

// TestTempoStepModeThroughTheAPI drives the classroom tempo with kubectl
// alone, as any client may: in step mode a new pod is not bound while the
// scheduler waits (listed in the tempo object), one released step lets the
// scheduler bind it and the node agent then waits in turn.
func TestTempoStepModeThroughTheAPI(t *testing.T) {
	c := SharedCluster(t)
	ctx := context.Background()
	cms := c.Client.CoreV1().ConfigMaps("kube-system")
	patch := func(data string) {
		t.Helper()
		c.MustKubectl(t, "", "-n", "kube-system", "patch", "configmap", "glassplane-tempo", "--type", "merge", "-p", `{"data":`+data+`}`)
	}
	waitingFor := func(what string) {
		t.Helper()
		Eventually(t, time.Minute, "the tempo to list "+what, func() error {
			cm, err := cms.Get(ctx, "glassplane-tempo", metav1.GetOptions{})
			if err != nil {
				return err
			}
			for k, v := range cm.Data {
				if strings.HasPrefix(k, "waiting.") && v == what {
					return nil
				}
			}
			return fmt.Errorf("waiting: %v", cm.Data)
		})
	}
	patch(`{"mode":"step"}`)
	t.Cleanup(func() {
		c.Kubectl(t, "", "-n", "kube-system", "patch", "configmap", "glassplane-tempo", "--type", "merge", "-p", `{"data":{"mode":"realtime"}}`)
		c.Kubectl(t, "", "delete", "pod", "tempo-api-pod", "--wait=false")
	})
	c.MustKubectl(t, "", "run", "tempo-api-pod", "--image=glassplane.local/hello:latest", "--restart=Never")
	waitingFor("scheduler: schedule pod default/tempo-api-pod")
	if p, err := c.Client.CoreV1().Pods("default").Get(ctx, "tempo-api-pod", metav1.GetOptions{}); err != nil || p.Spec.NodeName != "" {
		t.Fatalf("pod bound while the scheduler waits for a step: %v %v", p.Spec.NodeName, err)
	}
	// On the shared cluster, other tests' components may wait in the same
	// step queue, and a step may go to one of them: step on until the
	// pod's next state, releasing a step only while the component that
	// moves the pod there waits (mayStep), and only on the tempo object as
	// it was read (a conditional update: a step taken meanwhile changes it),
	// so no step is left over for the component the test looks at next.
	releaseIf := func(cm *corev1.ConfigMap) {
		t.Helper()
		taken, _ := strconv.Atoi(cm.Data["taken"])
		next := cm.DeepCopy()
		next.Data["released"] = strconv.Itoa(taken + 1)
		if _, err := cms.Update(ctx, next, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
			t.Fatal(err)
		}
	}
	stepUntil := func(what string, mayStep func(waiting string) bool, reached func(*corev1.Pod) bool) *corev1.Pod {
		t.Helper()
		var pod *corev1.Pod
		Eventually(t, 2*time.Minute, what, func() error {
			p, err := c.Client.CoreV1().Pods("default").Get(ctx, "tempo-api-pod", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if reached(p) {
				pod = p
				return nil
			}
			cm, err := cms.Get(ctx, "glassplane-tempo", metav1.GetOptions{})
			if err != nil {
				return err
			}
			for k, v := range cm.Data {
				if strings.HasPrefix(k, "waiting.") && mayStep(v) {
					releaseIf(cm)
					break
				}
			}
			return fmt.Errorf("node %q, phase %s", p.Spec.NodeName, p.Status.Phase)
		})
		return pod
	}
	node := stepUntil("the pod to be bound after the scheduler's step",
		func(w string) bool { return w == "scheduler: schedule pod default/tempo-api-pod" },
		func(p *corev1.Pod) bool { return p.Spec.NodeName != "" }).Spec.NodeName
	waitingFor("node/" + node + ": start container tempo-api-pod of pod default/tempo-api-pod")
	stepUntil("the pod to run after its node's step",
		func(w string) bool { return strings.Contains(w, "tempo-api-pod") },
		func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
}
