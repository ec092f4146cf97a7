package web

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/web/demo"
	"github.com/glassplane/glassplane/web/webtest"
)

// mapDNSAttempts bounds how many ServiceReached Events the test posts,
// each on an idle map, until it saw the three packets animated: a loaded
// machine makes the map list a step it is late for without animating it.
const mapDNSAttempts = 5

// watchPacketsJS records each packet the map draws: its kind and where
// its last frame put it (the step's end, exactly).
const watchPacketsJS = `(() => {
  window.__packets = [];
  const seen = new Map();
  new MutationObserver((records) => {
    for (const rec of records) {
      if (rec.type === "childList") {
        for (const n of rec.addedNodes) {
          if (!n.classList?.contains("packet")) continue;
          const p = { kind: n.dataset.kind, end: "" };
          seen.set(n, p);
          window.__packets.push(p);
        }
      } else if (seen.has(rec.target)) {
        seen.get(rec.target).end = rec.target.getAttribute("transform");
      }
    }
  }).observe(document.getElementById("map-packets"), { childList: true, subtree: true, attributes: true, attributeFilter: ["transform"] });
  return true;
})()`

// centreJS is the JavaScript for the "translate(x y)" of the centre of
// the map element matching selector (a pod's dot or a box).
func centreJS(selector string) string {
	return `(() => {
  const n = document.querySelector(` + webtest.JSString(selector) + `);
  if (n.tagName === "circle") return "translate(" + n.getAttribute("cx") + " " + n.getAttribute("cy") + ")";
  const d = n.dataset;
  return "translate(" + (+d.x + +d.w / 2) + " " + (+d.y + +d.h / 2) + ")";
})()`
}

// TestBrowserMapPlaysAServiceReached posts, through a real API server,
// the ServiceReached Event the service-dns demo records when its client
// pod got a reply, and watches the cluster map in chromium play it: the
// client's dot asks the cluster DNS box, the box answers the dot with the
// Service's address, and the dot connects to the dot of the pod that
// answered; each step is listed and narrated, in English and in Korean.
// An Event of that reason whose message has another shape plays nothing.
func TestBrowserMapPlaysAServiceReached(t *testing.T) {
	e := newAPIEnv(t)
	ctx := webtest.Browser(t)
	const ns, fqdn, address = "default", "hello.default.svc.cluster.local", "10.96.0.57"
	if _, err := e.client.CoreV1().Nodes().Create(e.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "vm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := map[string]*corev1.Pod{}
	for _, name := range []string{"client", "hello-2"} {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       corev1.PodSpec{NodeName: "vm", Containers: []corev1.Container{{Name: "c", Image: demo.Image}}},
		}
		created, err := e.client.CoreV1().Pods(ns).Create(e.ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods[name] = created
	}
	reached := func(n int, message string) {
		t.Helper()
		now := metav1.Now()
		client, replica := pods["client"], pods["hello-2"]
		ev := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("client.probe-%d", n), Namespace: ns},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: ns, Name: client.Name, UID: client.UID},
			Related:        &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: ns, Name: replica.Name, UID: replica.UID},
			Reason:         demo.ReasonServiceReached, Message: message, Type: corev1.EventTypeNormal,
			Source: corev1.EventSource{Component: demo.EventSource}, ReportingController: demo.EventSource,
			FirstTimestamp: now, LastTimestamp: now, Count: 1,
		}
		if _, err := e.client.CoreV1().Events(ns).Create(e.ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create event %s: %v", ev.Name, err)
		}
	}

	webtest.Navigate(t, ctx, e.srv.URL+"/")
	webtest.WaitSelector(t, ctx, webtest.TestID("map-box-dns"))
	webtest.WaitSelector(t, ctx, webtest.TestID("map-pod-default-client"))
	webtest.WaitSelector(t, ctx, webtest.TestID("map-pod-default-hello-2"))
	webtest.WaitLive(t, ctx)
	webtest.Eval[bool](t, ctx, watchPacketsJS)

	steps := `window.glassplane.steps.filter(s => ["dns-lookup", "dns-answer", "service-connect"].includes(s.kind))`
	stepText := steps + `.map(s => s.kind + " " + s.from + "→" + s.to + " " + s.label)`
	want := []string{
		"dns-lookup pod:default/client→dns DNS " + fqdn + "?",
		"dns-answer dns→pod:default/client A " + address,
		"service-connect pod:default/client→pod:default/hello-2 connect hello:80 → hello-2",
	}
	// The packet's last frame is the centre of where the step ends.
	ends := map[string]string{
		"dns-lookup":      webtest.Eval[string](t, ctx, centreJS(webtest.TestID("map-box-dns"))),
		"dns-answer":      webtest.Eval[string](t, ctx, centreJS(webtest.TestID("map-pod-default-client"))),
		"service-connect": webtest.Eval[string](t, ctx, centreJS(webtest.TestID("map-pod-default-hello-2"))),
	}
	type packet struct{ Kind, End string }

	webtest.WaitFor(t, ctx, `window.glassplane.mapIdle()`)
	reached(0, "nslookup "+fqdn+" timed out")
	posted := 0
	for {
		posted++
		if posted > mapDNSAttempts {
			t.Fatalf("after %d ServiceReached Events, each on an idle map, the map drew packets %v; want one of each of %v ending at %v",
				mapDNSAttempts, webtest.Eval[[]packet](t, ctx, `window.__packets`), want, ends)
		}
		webtest.WaitFor(t, ctx, `window.glassplane.mapIdle()`)
		reached(posted, demo.ServiceReachedMessage(fqdn, address, "hello-2"))
		webtest.WaitFor(t, ctx, fmt.Sprintf(`%s.length === %d`, steps, 3*posted))
		webtest.WaitFor(t, ctx, `window.glassplane.mapIdle()`)
		got := webtest.Eval[[]string](t, ctx, stepText)
		for i, s := range got {
			if s != want[i%3] {
				t.Fatalf("steps %q, want %q for each Event (none for the one of another shape)", got, want)
			}
		}
		drawn := map[string]bool{}
		for _, p := range webtest.Eval[[]packet](t, ctx, `window.__packets`) {
			end, ok := ends[p.Kind]
			if !ok {
				continue
			}
			if p.End != end {
				t.Fatalf("the %s packet ended at %q, want %q", p.Kind, p.End, end)
			}
			drawn[p.Kind] = true
		}
		if len(drawn) == len(ends) {
			break
		}
		t.Logf("after %d Events the map drew packets %v", posted, drawn)
	}
	narration := func() string {
		return webtest.Eval[string](t, ctx, `document.getElementById("narration-text").textContent`)
	}
	t.Run("the connection is narrated", func(t *testing.T) {
		webtest.WaitFor(t, ctx, `document.getElementById("narration-text").dataset.kind === "service-connect"`)
		if got := narration(); !strings.Contains(got, "Pod client connects to hello:80 at "+address+", and pod hello-2 answers") {
			t.Errorf("English narration %q", got)
		}
	})
	t.Run("in Korean, the lookup and the cluster DNS box", func(t *testing.T) {
		webtest.Eval[bool](t, ctx, `(document.querySelector('[data-testid="lang-ko"]').click(), true)`)
		t.Cleanup(func() {
			webtest.Eval[bool](t, ctx, `(document.querySelector('[data-testid="lang-en"]').click(), true)`)
		})
		webtest.WaitFor(t, ctx, `document.getElementById("narration-text").lang === "ko"`)
		if got := narration(); !strings.Contains(got, "pod client가 "+address+"의 hello:80로 연결하고, pod hello-2가 응답합니다") {
			t.Errorf("Korean narration of the connection %q", got)
		}
		webtest.Eval[bool](t, ctx, `(document.querySelector('[data-testid="step"][data-kind="dns-lookup"]').click(), true)`)
		webtest.WaitFor(t, ctx, `document.getElementById("narration-text").dataset.kind === "dns-lookup"`)
		if got := narration(); !strings.Contains(got, "pod client가 "+fqdn+"을(를) 조회합니다") || !strings.Contains(got, "클러스터 DNS는 CoreDNS이며") {
			t.Errorf("Korean narration of the lookup %q", got)
		}
		if got := webtest.Eval[string](t, ctx, `document.querySelector('[data-testid="map-box-dns"] .box-label').textContent`); got != "클러스터 DNS" {
			t.Errorf("the cluster DNS box reads %q in Korean", got)
		}
	})
	webtest.Screenshot(t, ctx, filepath.Join(webtest.OutputDir(t), "dashboard-map-dns.png"))
}
