package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/web/webtest"
)

// The map's step labels are checked once it drew minFitLabels of them, for
// at most maxFitLabelPods pods created one after the other.
const minFitLabels, maxFitLabelPods = 4, 6

// fitSizes are the screens a class projects the dashboard on.
var fitSizes = []struct{ w, h int64 }{{1280, 800}, {1440, 900}, {1920, 1080}}

// overflowJS reports what sticks out: the page wider than the window, and
// on an object page any element of the timeline or stored-object column
// whose right edge passes its column's (outside a box that scrolls).
const overflowJS = `(() => {
  const d = document.documentElement, out = [];
  if (d.scrollWidth > d.clientWidth) out.push("page " + d.scrollWidth + " > " + d.clientWidth);
  for (const col of document.querySelectorAll(".timeline-panel, .stored-panel")) {
    const right = col.getBoundingClientRect().right + 1;
    for (const el of col.querySelectorAll("*")) {
      // What a scrolling box holds may be wider than the box.
      let scroller = el.parentElement;
      while (scroller !== col && !["auto", "scroll"].includes(getComputedStyle(scroller).overflowX)) scroller = scroller.parentElement;
      if (scroller !== col) continue;
      const r = el.getBoundingClientRect();
      if (r.width && r.right > right) { out.push(col.className + " > " + el.tagName.toLowerCase() + "." + el.className + " right " + Math.round(r.right) + " > " + Math.round(right)); break; }
    }
  }
  return out;
})()`

// boxFitJS lists the map's box titles wider than their box.
const boxFitJS = `[...document.querySelectorAll("#cluster-map .map-box")].filter((g) => {
  const t = g.querySelector(".box-label").getBBox();
  return t.width > +g.dataset.w - 4;
}).map((g) => g.dataset.box)`

// watchLabelsJS records, for every step label the map draws, whether it
// covers a component box's title.
const watchLabelsJS = `(() => {
  window.__labels = 0; window.__overlaps = [];
  const hit = (a, b) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
  new MutationObserver((records) => {
    for (const rec of records) for (const n of rec.addedNodes) {
      if (!n.classList?.contains("packet-label")) continue;
      window.__labels++;
      const r = n.getBBox();
      for (const t of document.querySelectorAll("#cluster-map .box-label")) {
        if (hit(r, t.getBBox())) window.__overlaps.push(n.textContent + " over " + t.textContent);
      }
    }
  }).observe(document.getElementById("map-packets"), { childList: true });
  return true;
})()`

// TestBrowserPagesFit visits every page at three screen sizes, in normal
// and presenter mode, and checks that nothing sticks out sideways; that
// presenter mode enlarges the map, whose titles stay inside their boxes
// and under no step's label; that an unknown URL gets the dashboard's 404
// page; and that Korean reaches the tempo panel.
func TestBrowserPagesFit(t *testing.T) {
	c := SharedCluster(t)
	ctx := context.Background()
	ns := "fit-test"
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	tab := webtest.Browser(t)
	out := webtest.OutputDir(t)
	loginAdmin(t, c, tab)

	// The map draws the steps of pods created while it is open. It draws
	// no labels while it is behind (condensed, or listing late steps),
	// which a loaded machine makes it: pods are created one at a time, each
	// on an idle map, until it drew enough labels to check.
	webtest.Navigate(t, tab, c.WebURL+"/")
	webtest.WaitLive(t, tab)
	webtest.Eval[bool](t, tab, watchLabelsJS)
	var pod *corev1.Pod
	for i := 1; webtest.Eval[int](t, tab, `window.__labels`) < minFitLabels; i++ {
		if i > maxFitLabelPods {
			t.Fatalf("the map drew %d step labels for %d pods, each created on an idle map; want at least %d",
				webtest.Eval[int](t, tab, `window.__labels`), maxFitLabelPods, minFitLabels)
		}
		webtest.WaitFor(t, tab, `window.glassplane.mapIdle()`)
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fit-pod-with-a-rather-long-name-for-the-timeline-%d", i), Namespace: ns},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "glassplane.local/hello:latest"}}},
		}
		if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if pod == nil {
			pod = p
		}
		webtest.WaitFor(t, tab, fmt.Sprintf(`window.glassplane.steps.some((s) => s.pod === %s && s.kind === "running")`, webtest.JSString(p.Name)))
		webtest.WaitFor(t, tab, `window.glassplane.mapIdle()`)
		t.Logf("after %d pods the map drew %d step labels", i, webtest.Eval[int](t, tab, `window.__labels`))
	}
	var node string
	deadline := time.Now().Add(time.Minute)
	for node == "" && time.Now().Before(deadline) {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		node = p.Spec.NodeName
		time.Sleep(200 * time.Millisecond)
	}
	if node == "" {
		t.Fatal("the pod was not scheduled")
	}
	t.Run("step labels leave the box titles readable", func(t *testing.T) {
		if overlaps := webtest.Eval[[]string](t, tab, `window.__overlaps`); len(overlaps) > 0 {
			t.Errorf("labels over box titles: %q", overlaps)
		}
	})

	pages := []string{
		"/", "/objects/pods/" + ns + "/" + pod.Name, "/objects/nodes/" + node, "/scheduler/" + ns + "/" + pod.Name,
		"/requests", "/etcd", "/events", "/nodes", "/apply", "/demos", "/login",
	}
	for _, size := range fitSizes {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			if err := chromedp.Do(tab, chromedp.EmulateViewport(size.w, size.h)); err != nil {
				t.Fatal(err)
			}
			var mapWidth [2]float64
			for i, presenter := range []bool{false, true} {
				mode := map[bool]string{false: "off", true: "on"}[presenter]
				webtest.Navigate(t, tab, c.WebURL+"/")
				webtest.Eval[bool](t, tab, `localStorage.setItem("glassplane.presenter", "`+mode+`") || true`)
				for _, path := range pages {
					webtest.Navigate(t, tab, c.WebURL+path)
					webtest.WaitSelector(t, tab, "main.main > *")
					if over := webtest.Eval[[]string](t, tab, overflowJS); len(over) > 0 {
						t.Errorf("%s (presenter %s) overflows: %q", path, mode, over)
					}
					if path == "/" {
						mapWidth[i] = webtest.Eval[float64](t, tab, `document.getElementById("cluster-map").getBoundingClientRect().width`)
						if wide := webtest.Eval[[]string](t, tab, boxFitJS); len(wide) > 0 {
							t.Errorf("presenter %s: titles wider than their box: %q", mode, wide)
						}
					}
					if size.w == 1440 && (path == "/" || path == pages[1]) {
						webtest.Screenshot(t, tab, filepath.Join(out, fmt.Sprintf("fit-%s-presenter-%s.png", map[bool]string{true: "overview", false: "pod"}[path == "/"], mode)))
					}
				}
			}
			if mapWidth[1] <= mapWidth[0]*1.05 {
				t.Errorf("presenter mode does not enlarge the map: %.0f px, normal %.0f px", mapWidth[1], mapWidth[0])
			}
		})
	}
	webtest.Eval[bool](t, tab, `localStorage.setItem("glassplane.presenter", "off") || true`)

	t.Run("an unknown URL gets the dashboard's 404 page", func(t *testing.T) {
		webtest.Navigate(t, tab, c.WebURL+"/no/such/page")
		webtest.WaitSelector(t, tab, webtest.TestID("error-page"))
		if got := webtest.Eval[string](t, tab, `document.querySelector('[data-testid="error-page"]').dataset.status`); got != "404" {
			t.Errorf("status shown = %q, want 404", got)
		}
		if webtest.Eval[int](t, tab, `document.querySelectorAll('[data-testid="nav"]').length`) != 1 {
			t.Error("the 404 page is not in the dashboard's layout")
		}
	})

	t.Run("Korean reaches the tempo panel", func(t *testing.T) {
		webtest.Navigate(t, tab, c.WebURL+"/")
		webtest.Eval[bool](t, tab, `localStorage.setItem("glassplane.lang", "ko") || true`)
		defer webtest.Eval[bool](t, tab, `localStorage.setItem("glassplane.lang", "en") || true`)
		webtest.Navigate(t, tab, c.WebURL+"/")
		webtest.WaitFor(t, tab, `document.querySelector('[data-testid="tempo-heading"]').textContent === "진행 속도"`)
		webtest.WaitFor(t, tab, `document.querySelector('[data-testid="nav-overview"]').textContent === "개요"`)
	})
}
