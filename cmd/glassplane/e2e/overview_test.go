package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/glassplane/glassplane/web/webtest"
)

// TestOverviewOffscreenNodes checks the overview's node boxes off screen:
// the browser skips rendering them (content-visibility: auto), so a pod
// placed on one gets its chip without a highlight, while a pod placed on a
// box on screen flashes; scrolled into view, the box shows its chip and
// the chip flashes on its next change.
func TestOverviewOffscreenNodes(t *testing.T) {
	// The browser renders boxes up to one and a half window heights below
	// the window; a hundred boxes reach well past that.
	const nodes = 100
	c := NewCluster(t, "--node-runtime", "none", "--simulated-nodes", fmt.Sprint(nodes))
	ctx := context.Background()
	waitForNodeCount(t, c, nodes)

	tab := webtest.Browser(t)
	webtest.Navigate(t, tab, c.WebURL+"/")
	webtest.WaitLive(t, tab)
	webtest.WaitFor(t, tab, fmt.Sprintf(`document.querySelectorAll(".nodes .node[data-node]").length === %d`, nodes))
	// Every chip that ever wears the flash class, and the steps of its
	// flash's fade (0 for .flash alone, n for .flash-n, -1 once it ended),
	// each with its ring's opacity as drawn.
	webtest.Eval[bool](t, tab, `(() => {
	  window.__flashed = new Set(); window.__steps = {};
	  new MutationObserver((records) => {
	    for (const r of records) {
	      const c = r.target.classList;
	      if (!c.contains("pod")) continue;
	      const name = r.target.dataset.name;
	      if (c.contains("flash")) window.__flashed.add(name);
	      if (!window.__flashed.has(name)) continue;
	      const n = [1, 2, 3].find((n) => c.contains("flash-" + n)) || 0;
	      const step = c.contains("flash") ? n : n ? 99 : -1;
	      const steps = (window.__steps[name] ||= []);
	      if (steps.at(-1)?.[0] !== step) steps.push([step, Number(getComputedStyle(r.target, "::after").opacity)]);
	    }
	  }).observe(document.body, {subtree: true, attributes: true, attributeFilter: ["class"]});
	  return true;
	})()`)
	// The highest box on screen and the lowest, off screen.
	boxes := webtest.Eval[[]string](t, tab, `(() => {
	  const boxes = [...document.querySelectorAll(".nodes .node[data-node]")];
	  boxes.sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top);
	  const top = boxes[0], bottom = boxes[boxes.length - 1];
	  return [top.dataset.node, bottom.dataset.node, String(top.getBoundingClientRect().bottom <= innerHeight), String(bottom.getBoundingClientRect().top > innerHeight)];
	})()`)
	onScreen, offScreen := boxes[0], boxes[1]
	if boxes[2] != "true" || boxes[3] != "true" {
		t.Fatalf("the page does not have a box on screen (%s: %s) and one below it (%s: %s); %d nodes do not reach that far below a 1440×900 window", onScreen, boxes[2], offScreen, boxes[3], nodes)
	}

	place := func(name, node string) {
		t.Helper()
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PodSpec{
				NodeName:                      node,
				TerminationGracePeriodSeconds: ptr.To[int64](0),
				Containers:                    []corev1.Container{{Name: "c", Image: "glassplane.local/hello:latest"}},
			},
		}
		if _, err := c.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	chipRunning := func(name, node string) string {
		return fmt.Sprintf(`document.querySelector('[data-node=%q] .pods [data-testid="pod-default-%s"]')?.dataset.phase === "Running"`, node, name)
	}
	place("seen", onScreen)
	place("unseen", offScreen)
	webtest.WaitFor(t, tab, chipRunning("seen", onScreen))
	webtest.WaitFor(t, tab, chipRunning("unseen", offScreen))
	// Flashes start in the next animation frame.
	nextFrames(t, tab)
	if !webtest.Eval[bool](t, tab, `window.__flashed.has("seen")`) {
		t.Errorf("the chip of a pod on %s, a box on screen, did not flash", onScreen)
	}
	if webtest.Eval[bool](t, tab, `window.__flashed.has("unseen")`) {
		t.Errorf("the chip of a pod on %s, a box off screen, flashed", offScreen)
	}
	// The flash fades in steps, each drawn fainter, and ends with its
	// classes off (a late timer may skip a step, never go back one; the
	// chip may flash again for a later change).
	webtest.WaitFor(t, tab, `!!window.__steps.seen?.some((s) => s[0] === -1)`)
	steps := webtest.Eval[[][2]float64](t, tab, `window.__steps.seen`)
	if steps[0] != [2]float64{0, 1} {
		t.Errorf("the chip's flash began as step %v at opacity %v, want the full ring (steps: %v)", steps[0][0], steps[0][1], steps)
	}
	for i := 1; i < len(steps); i++ {
		prev, cur := steps[i-1], steps[i]
		switch {
		case cur[0] == 99:
			t.Errorf("the chip's flash ended with a step's class left on (steps: %v)", steps)
		case prev[0] == -1 && cur[0] != 0:
			t.Errorf("the chip's next flash began as step %v, want 0 (steps: %v)", cur[0], steps)
		case prev[0] != -1 && cur[0] != -1 && (cur[0] <= prev[0] || cur[1] >= prev[1]):
			t.Errorf("the chip's flash went from step %v (opacity %v) to step %v (opacity %v); want a later step, drawn fainter (steps: %v)", prev[0], prev[1], cur[0], cur[1], steps)
		}
	}

	// Scrolled into view, the box draws the chip, which flashes when the
	// pod changes.
	webtest.Eval[bool](t, tab, fmt.Sprintf(`(document.querySelector('.nodes .node[data-node=%q]').scrollIntoView({block: "center"}), true)`, offScreen))
	webtest.WaitFor(t, tab, `document.querySelector('[data-testid="pod-default-unseen"]').checkVisibility({contentVisibilityAuto: true})`)
	// Let the browser note the box is on screen before the change arrives.
	nextFrames(t, tab)
	patch := []byte(`{"metadata":{"labels":{"seen":"now"}}}`)
	if _, err := c.Client.CoreV1().Pods("default").Patch(ctx, "unseen", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !webtest.Eval[bool](t, tab, `window.__flashed.has("unseen")`) {
		if time.Now().After(deadline) {
			t.Fatalf("the chip of a pod on %s did not flash after its box was scrolled into view and the pod changed", offScreen)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// nextFrames waits until the page has drawn two more frames.
func nextFrames(t *testing.T, tab context.Context) {
	t.Helper()
	webtest.Eval[bool](t, tab, `(window.__frames = 0, requestAnimationFrame(() => requestAnimationFrame(() => { window.__frames = 2; })), true)`)
	webtest.WaitFor(t, tab, `window.__frames === 2`)
}

// waitForNodeCount waits until the API lists n nodes.
func waitForNodeCount(t *testing.T, c *Cluster, n int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		list, err := c.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		if err == nil && len(list.Items) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the %d nodes did not register: %v", n, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestMapDotsKeepTheirSeats checks the cluster map's pod dots: a dot keeps
// its place in its node while its pod lives, a pod that leaves does not
// move the others, and the next pod to arrive takes the place it freed.
func TestMapDotsKeepTheirSeats(t *testing.T) {
	c := NewCluster(t, "--node-runtime", "none", "--simulated-nodes", "1")
	ctx := context.Background()
	waitForNodeCount(t, c, 1)
	tab := webtest.Browser(t)
	webtest.Navigate(t, tab, c.WebURL+"/")
	webtest.WaitLive(t, tab)

	place := func(name string) {
		t.Helper()
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PodSpec{
				NodeName:                      "sim-1",
				TerminationGracePeriodSeconds: ptr.To[int64](0),
				Containers:                    []corev1.Container{{Name: "c", Image: "glassplane.local/hello:latest"}},
			},
		}
		if _, err := c.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		webtest.WaitFor(t, tab, fmt.Sprintf(`document.querySelector('[data-testid="map-node-sim-1"] [data-testid="map-pod-default-%s"]')?.dataset.phase === "Running"`, name))
	}
	seat := func(name string) string {
		t.Helper()
		return webtest.Eval[string](t, tab, fmt.Sprintf(`(() => { const d = document.querySelector('[data-testid="map-pod-default-%s"]'); return d.getAttribute("cx") + "," + d.getAttribute("cy"); })()`, name))
	}
	for _, name := range []string{"first", "second", "third"} {
		place(name)
	}
	first, second, third := seat("first"), seat("second"), seat("third")
	if first == second || second == third || first == third {
		t.Fatalf("three pods share places on the map: %s, %s, %s", first, second, third)
	}
	if err := c.Client.CoreV1().Pods("default").Delete(ctx, "first", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	webtest.WaitFor(t, tab, `!document.querySelector('[data-testid="map-pod-default-first"]')`)
	if got := seat("second"); got != second {
		t.Errorf("the second pod's dot moved from %s to %s when the first pod left", second, got)
	}
	if got := seat("third"); got != third {
		t.Errorf("the third pod's dot moved from %s to %s when the first pod left", third, got)
	}
	place("fourth")
	if got := seat("fourth"); got != first {
		t.Errorf("the fourth pod's dot is at %s, not in the place the first pod freed (%s)", got, first)
	}
}
