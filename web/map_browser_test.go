package web

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/web/webtest"
)

// TestBrowserMapEndpointsChain plays the endpoints chain to the cluster
// map in chromium: a pod turning Ready (the EndpointSlice controller's
// watch), the controller's EndpointSlice write and the node proxy's
// EndpointsProgrammed Event each become a step from the component that
// acted, narrated in English and in Korean.
func TestBrowserMapEndpointsChain(t *testing.T) {
	e := newEnv(t)
	ctx := webtest.Browser(t)
	e.put(t, "/registry/minions/vm", node("vm", corev1.ConditionTrue))
	web := pod("default", "web-1", "vm", corev1.PodRunning)
	e.put(t, "/registry/pods/default/web-1", web)

	webtest.Navigate(t, ctx, e.srv.URL+"/")
	webtest.WaitSelector(t, ctx, webtest.TestID("node-vm"))
	webtest.WaitLive(t, ctx)

	steps := `window.glassplane.steps.map(s => s.kind + " " + s.from + "→" + s.to)`
	waitStep := func(t *testing.T, want string) {
		t.Helper()
		webtest.WaitFor(t, ctx, steps+`.includes(`+webtest.JSString(want)+`)`)
	}
	narration := func() string {
		return webtest.Eval[string](t, ctx, `document.getElementById("narration-text").textContent`)
	}

	t.Run("a pod turns Ready", func(t *testing.T) {
		web.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		e.put(t, "/registry/pods/default/web-1", web)
		waitStep(t, "pod-ready apiserver→controller-manager")
	})
	t.Run("the EndpointSlice controller writes the slice", func(t *testing.T) {
		e.ring.Add(auditEvent("create", "endpointslices", "", "default", "web-abcde", "system:kube-controller-manager", time.Now(), nil))
		waitStep(t, "endpointslice controller-manager→apiserver")
	})
	t.Run("the node's proxy programs the endpoints", func(t *testing.T) {
		now := time.Now()
		e.put(t, "/registry/events/default/web.programmed", &corev1.Event{
			TypeMeta:       metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
			ObjectMeta:     metav1.ObjectMeta{Namespace: "default", Name: "web.programmed"},
			InvolvedObject: corev1.ObjectReference{Kind: "Service", APIVersion: "v1", Namespace: "default", Name: "web", UID: "uid-web"},
			Reason:         "EndpointsProgrammed", Message: "Programmed 1 ready endpoints for 10.96.12.3:80/TCP on node vm (nftables, 3ms)",
			Type: corev1.EventTypeNormal, Source: corev1.EventSource{Component: "glassplane-proxy", Host: "vm"},
			FirstTimestamp: metav1.NewTime(now), LastTimestamp: metav1.NewTime(now),
		})
		waitStep(t, "endpoints-programmed node:vm→apiserver")
		webtest.WaitFor(t, ctx, `document.getElementById("narration-text").dataset.kind === "endpoints-programmed"`)
		if got := narration(); !strings.Contains(got, "The service proxy on vm") || !strings.Contains(got, "default/web") || !strings.Contains(got, "Programmed 1 ready endpoints") {
			t.Errorf("English narration %q", got)
		}
		webtest.Eval[bool](t, ctx, `(document.querySelector('[data-testid="lang-ko"]').click(), true)`)
		webtest.WaitFor(t, ctx, `document.getElementById("narration-text").lang === "ko"`)
		if got := narration(); !strings.Contains(got, "vm 노드의 서비스 프록시가") || !strings.Contains(got, "다시 설정했습니다") {
			t.Errorf("Korean narration %q", got)
		}
		webtest.Eval[bool](t, ctx, `(document.querySelector('[data-testid="lang-en"]').click(), true)`)
	})
}

// TestBrowserMapManyNodesScrolls checks that a map of many nodes keeps a
// readable size and scrolls sideways in its panel, for the nodes the page
// was rendered with and for those that register while it is open, and
// that a map of a few nodes still fills its panel.
func TestBrowserMapManyNodesScrolls(t *testing.T) {
	e := newEnv(t)
	ctx := webtest.Browser(t)
	e.put(t, "/registry/minions/n-01", node("n-01", corev1.ConditionTrue))

	webtest.Navigate(t, ctx, e.srv.URL+"/")
	webtest.WaitSelector(t, ctx, webtest.TestID("node-n-01"))
	webtest.WaitLive(t, ctx)
	type size struct{ Width, Height, Panel, ScrollWidth float64 }
	measure := func() size {
		return webtest.Eval[size](t, ctx, `(() => {
		  const r = document.getElementById("cluster-map").getBoundingClientRect();
		  const wrap = document.querySelector('[data-testid="cluster-map-wrap"]');
		  return {Width: r.width, Height: r.height, Panel: wrap.clientWidth, ScrollWidth: wrap.scrollWidth};
		})()`)
	}
	few := measure()
	if few.ScrollWidth > few.Panel+1 || few.Width < few.Panel-20 {
		t.Errorf("one node: the map is %.0f px wide (scrolls to %.0f) in a panel of %.0f px; want it to fill the panel", few.Width, few.ScrollWidth, few.Panel)
	}

	// Nodes that register while the page is open are added by the script.
	for i := 2; i <= 12; i++ {
		name := fmt.Sprintf("n-%02d", i)
		e.put(t, "/registry/minions/"+name, node(name, corev1.ConditionTrue))
	}
	webtest.WaitSelector(t, ctx, webtest.TestID("map-node-n-12"))
	// 12 nodes: a viewBox of 20 + 12 × 244 = 2948 units, drawn at 75%.
	live := measure()
	if live.Width < 2200 || live.ScrollWidth <= live.Panel {
		t.Errorf("12 nodes added live: the map is %.0f px wide, its panel %.0f px scrolling to %.0f; want a map of about 2211 px that scrolls", live.Width, live.Panel, live.ScrollWidth)
	}
	if live.Height < 300 {
		t.Errorf("12 nodes added live: the map is %.0f px high; want it readable (at least 300 px), not shrunk to a strip", live.Height)
	}

	// The same page rendered by the server with the 12 nodes.
	webtest.Navigate(t, ctx, e.srv.URL+"/")
	webtest.WaitSelector(t, ctx, webtest.TestID("map-node-n-12"))
	rendered := measure()
	if rendered.Width < 2200 || rendered.Height < 300 || rendered.ScrollWidth <= rendered.Panel {
		t.Errorf("12 nodes rendered by the server: the map is %.0f × %.0f px in a panel of %.0f px scrolling to %.0f; want about 2211 × 375 px, scrolling", rendered.Width, rendered.Height, rendered.Panel, rendered.ScrollWidth)
	}
}

// TestBrowserMapStaysCondensed checks the map's pace under a stream of
// steps faster than it can animate: once condensed, it lists the steps
// without animating any for as long as they keep coming (well past one
// condensed spell of 2 s), and animates the next step once they stopped.
func TestBrowserMapStaysCondensed(t *testing.T) {
	e := newEnv(t)
	ctx := webtest.Browser(t)
	webtest.Navigate(t, ctx, e.srv.URL+"/")
	webtest.WaitLive(t, ctx)
	// Every packet the map sends along an edge is an animated step.
	webtest.Eval[bool](t, ctx, `(() => {
	  window.__packets = 0;
	  new MutationObserver((records) => {
	    for (const r of records) for (const n of r.addedNodes) if (n.classList?.contains("packet")) window.__packets++;
	  }).observe(document.getElementById("map-packets"), {childList: true});
	  return true;
	})()`)
	n := 0
	send := func(count int) {
		for range count {
			n++
			e.ring.Add(auditEvent("create", "configmaps", "", "default", fmt.Sprintf("cm-%d", n), "alice", time.Now(), nil))
		}
	}
	steps := func() int { return webtest.Eval[int](t, ctx, `window.glassplane.steps.length`) }

	// A burst condenses the map (it may animate the first step before the
	// rest queue up).
	send(40)
	webtest.WaitFor(t, ctx, `window.glassplane.steps.length >= 40`)
	before := webtest.Eval[int](t, ctx, `window.__packets`)
	// Then 10 steps every 100 ms for 5 s: 100 a second, where an animated
	// step takes 120 ms at least.
	for range 50 {
		send(10)
		time.Sleep(100 * time.Millisecond)
	}
	webtest.WaitFor(t, ctx, `window.glassplane.steps.length >= 400`) // MAX_STEPS keeps the newest 400
	if got := webtest.Eval[int](t, ctx, `window.__packets`); got != before {
		t.Errorf("the map animated %d steps while 100 steps a second kept coming; want none once condensed (%d recorded)", got-before, steps())
	}
	// Once the steps stop, the condensed spell ends and a lone step is
	// animated again.
	webtest.WaitFor(t, ctx, `window.glassplane.mapIdle()`)
	send(1)
	webtest.WaitFor(t, ctx, fmt.Sprintf(`window.__packets > %d`, before))
}
