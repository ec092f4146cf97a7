package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/css"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/profiler"
	"github.com/chromedp/cdproto/tracing"
	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/glassplane/glassplane/web/webtest"
)

// streamTap is installed before the page's own scripts run: it listens on
// the page's websocket ahead of the page's handlers and notes, for each new
// bench pod, when its etcd write began (its create's audit message: the
// request's arrival plus the etcd stage's start, which the API server
// records), the hub's timestamp on its watch message (when the dashboard's
// hub made the message from the API watch event) and when the page received
// that message, so each sample splits into etcd write → hub, hub → page and
// page → rendered. It reads the raw frames (no second JSON.parse) and
// counts the messages.
const streamTap = `(() => {
  window.__recv = new Map(); window.__etcd = new Map(); window.__msgs = 0;
  const WS = window.WebSocket;
  window.WebSocket = class extends WS {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (ev) => {
        const recv = performance.timeOrigin + performance.now();
        window.__msgs += (ev.data.match(/\{"type":"(?:watch|event|audit|etcd|hello|resync)"/g) || []).length;
        for (const m of ev.data.matchAll(/\{"type":"watch","eventType":"ADDED","key":"\/registry\/pods\/default\/(bench-[0-9]+-[0-9]+)"[^{]*?"timestamp":"([^"]+)"/g)) {
          window.__recv.set(m[1], {hub: Date.parse(m[2]), recv});
        }
        for (const m of ev.data.matchAll(/\{"type":"audit","key":"\/registry\/pods\/default\/(bench-[0-9]+-[0-9]+)"[^{]*?"timestamp":"([^"]+)","verb":"create",[^\[]*?"stages":\[[^\]]*?\{"name":"etcd","label":"etcd","state":"ok","startUs":([0-9]+)\}/g)) {
          window.__etcd.set(m[1], Date.parse(m[2]) + Number(m[3]) / 1000);
        }
      });
    }
  };
})()`

// renderProbe records, in the page, when each new bench pod's chip is on
// screen: a MutationObserver sees the chip inserted, and the time is taken
// in the next animation frame, after layout. The pod's name carries the
// time its create request was sent (ms since the epoch), so each chip gives
// two samples: from the etcd write (streamTap's note, once the create's
// audit message has arrived) and from the request. It records the worst
// main-thread lag (a 50 ms timer's lateness) as a measure of the page
// staying responsive.
const renderProbe = `(() => {
  window.__rendered = new Map(); window.__maxLag = 0; window.__msgs0 = window.__msgs;
  new MutationObserver((records) => {
    for (const r of records) for (const n of r.addedNodes) {
      if (n.nodeType !== 1) continue;
      const chips = n.matches?.('[data-testid^="pod-default-bench-"]') ? [n] : [...n.querySelectorAll?.('[data-testid^="pod-default-bench-"]') || []];
      for (const c of chips) {
        const name = c.dataset.name || "";
        if (!(Number(name.split("-").pop()) > 0) || window.__rendered.has(name)) continue;
        requestAnimationFrame(() => window.__rendered.has(name) || window.__rendered.set(name, performance.timeOrigin + performance.now()));
      }
    }
  }).observe(document.body, {childList: true, subtree: true});
  let last = performance.now();
  setInterval(() => { const now = performance.now(); window.__maxLag = Math.max(window.__maxLag, now - last - 50); last = now; }, 50);
  return true;
})()`

// renderSamples joins the page's notes: per rendered chip, the time from
// its etcd write and from its create request to the render, and the etcd
// write → hub, hub → page and page → render parts.
const renderSamples = `(() => {
  const out = {fromWrite: [], fromRequest: [], split: []};
  for (const [name, t] of window.__rendered) {
    out.fromRequest.push(t - Number(name.split("-").pop()));
    const e = window.__etcd.get(name);
    if (e === undefined) continue;
    out.fromWrite.push(t - e);
    const r = window.__recv.get(name);
    if (r) out.split.push([r.hub - e, r.recv - r.hub, t - r.recv, e, Number(name.split("-")[1])]);
  }
  return out;
})()`

// BenchmarkDashboardRenderLatency measures the time from an etcd write to
// the browser's render of it on the overview: with pods (default 1,000) on
// simulated nodes (default 100) and changes per second (default 200: half
// creates, half deletes, so the pod count stays), for a duration (default
// 20s), from when the seeded pods are Running with their Events written
// (settle). It reports the in-page p50/p99 of etcd write → rendered chip (from
// when the create's etcd write began, as its audit event records it) and
// of its three parts (write-hub: the etcd write and the API watch up
// to the dashboard's hub; hub-page: the hub's queue, the websocket and the
// page's task queue; page-render: handling and drawing); the same from
// before the create request (request-render: it adds the API's time to
// authenticate, authorize and admit the pod, which on two shared cores has
// a long tail of its own) and the create's round trip; the messages the page
// received per second, the page's worst main-thread lag, the home page's
// server time, and the CPU and memory of the glassplane process (API
// server, etcd, controllers and dashboard together: they share one
// process), with the CPU of the browser and of the benchmark's own
// client, which share the machine with it (the browser at normal priority,
// as a person's: see webtest.Browser); and the cluster process's garbage
// collections during the churn (gc-cycles/s, gc-marking: the share of the
// time one was marking, gc-cpu-cores, gc-live-MB), from its gctrace. Sizes: GLASSPLANE_BENCH_DASH_PODS, _NODES, _RATE, _SECONDS;
// GLASSPLANE_BENCH_DASH_CPUPROFILE=file writes the page's JavaScript CPU
// profile (a .cpuprofile chromium's DevTools open) for the measured time;
// GLASSPLANE_BENCH_DASH_GOPROFILE=file writes the cluster process's Go CPU
// profile over the run; GLASSPLANE_BENCH_DASH_GOTRACE=file its execution
// trace (go tool trace);
// GLASSPLANE_BENCH_DASH_SAMPLES=file.csv writes each timed chip's etcd
// write time and its three parts, in write order, to see the tail's shape,
// with its pod's number (bench-N-...) to find it in the audit log or the
// cluster's log;
// GLASSPLANE_BENCH_DASH_SCREENSHOT=file.png takes a screenshot of what the
// page shows halfway through;
// GLASSPLANE_BENCH_DASH_CSS=rules adds a style sheet to the page before the
// churn (hiding a region measures what it costs);
// GLASSPLANE_BENCH_DASH_HEAPPROFILE=file writes the cluster process's heap
// profile after the churn, and file.base before it (go tool pprof -base
// file.base file: what the churn allocated); GLASSPLANE_BENCH_DASH_LOG=file writes the
// cluster's log (with its garbage collections: the cluster runs with
// GODEBUG=gctrace=1);
// GLASSPLANE_BENCH_DASH_AUDITLOG=file writes the cluster's audit log (every
// request, with its stage timestamps: what else the API served at a slow
// moment);
// GLASSPLANE_BENCH_DASH_TRACE=file writes chromium's timeline trace (style,
// layout, paint, scripts; DevTools' Performance panel opens it) and logs
// where the page's main thread spent its time (more trace categories, such
// as viz for the display compositor, in
// GLASSPLANE_BENCH_DASH_TRACE_CATEGORIES, space-separated).
func BenchmarkDashboardRenderLatency(b *testing.B) {
	pods := benchEnvInt("GLASSPLANE_BENCH_DASH_PODS", 1000)
	nodes := benchEnvInt("GLASSPLANE_BENCH_DASH_NODES", 100)
	rate := benchEnvInt("GLASSPLANE_BENCH_DASH_RATE", 200)
	seconds := benchEnvInt("GLASSPLANE_BENCH_DASH_SECONDS", 20)
	// The cluster process reports each garbage collection on its log
	// (gcSpan reads them): on two shared cores, the collector's marking
	// is where the render latency's tail comes from.
	b.Setenv("GODEBUG", strings.Trim(os.Getenv("GODEBUG")+",gctrace=1", ","))
	args := []string{"--node-runtime", "none", "--simulated-nodes", strconv.Itoa(nodes)}
	if path := os.Getenv("GLASSPLANE_BENCH_DASH_AUDITLOG"); path != "" {
		args = append(args, "--audit-log-path", path)
	}
	c := NewCluster(b, args...)
	ctx := context.Background()
	// A client whose own rate limit (client-go's default is 5 qps) is not
	// what the benchmark measures.
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst = 2000, 4000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err == nil && len(list.Items) >= nodes {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the %d simulated nodes did not register: %v", nodes, err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	newPod := func(i int) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%d-%d", i, time.Now().UnixMilli()), Namespace: "default"},
			Spec: corev1.PodSpec{
				NodeName:                      fmt.Sprintf("sim-%d", i%nodes+1),
				TerminationGracePeriodSeconds: ptr.To[int64](0),
				Containers:                    []corev1.Container{{Name: "c", Image: "glassplane.local/hello:latest"}},
			},
		}
	}
	// Seed the pods, 8 writers at a time.
	var names []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	work := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				p, err := client.CoreV1().Pods("default").Create(ctx, newPod(i), metav1.CreateOptions{})
				if err != nil {
					b.Errorf("seed pod %d: %v", i, err)
					continue
				}
				mu.Lock()
				names = append(names, p.Name)
				mu.Unlock()
			}
		}()
	}
	for i := range pods {
		work <- i
	}
	close(work)
	wg.Wait()
	settled := settle(b, client, names)
	b.Logf("the %d seeded pods were Running, with their containers' Started Events written, %.1fs after the last create", len(names), settled.Seconds())

	tab := webtest.Browser(b)
	if _, err := chromedp.Call(tab, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: streamTap}); err != nil {
		b.Fatalf("failed to install the stream tap: %v", err)
	}
	webtest.Navigate(b, tab, c.WebURL+"/")
	webtest.WaitLive(b, tab)
	webtest.Eval[bool](b, tab, renderProbe)
	// chromedp follows the DOM, the style sheets and the network of its
	// tab (every websocket frame's payload is copied to it); the
	// measurement reads only what the page's probes note, through Runtime,
	// so these are turned off for the run, as a person's browser has them.
	if _, err := chromedp.Call(tab, dom.Disable, cdp.Empty{}); err != nil {
		b.Fatal(err)
	}
	if _, err := chromedp.Call(tab, css.Disable, cdp.Empty{}); err != nil {
		b.Fatal(err)
	}
	if _, err := chromedp.Call(tab, network.Disable, cdp.Empty{}); err != nil {
		b.Fatal(err)
	}
	if css := os.Getenv("GLASSPLANE_BENCH_DASH_CSS"); css != "" {
		// A constructed style sheet: the page's Content-Security-Policy
		// refuses a <style> element.
		webtest.Eval[bool](b, tab, `(() => { const s = new CSSStyleSheet(); s.replaceSync(`+webtest.JSString(css)+`); document.adoptedStyleSheets = [...document.adoptedStyleSheets, s]; return true; })()`)
	}

	stopTrace := func() {}
	if path := os.Getenv("GLASSPLANE_BENCH_DASH_TRACE"); path != "" {
		stopTrace = startPageTrace(b, tab, path)
	}
	profile := os.Getenv("GLASSPLANE_BENCH_DASH_CPUPROFILE")
	if profile != "" {
		if _, err := chromedp.Call(tab, profiler.Enable, cdp.Empty{}); err != nil {
			b.Fatal(err)
		}
		if _, err := chromedp.Call(tab, profiler.Start, cdp.Empty{}); err != nil {
			b.Fatal(err)
		}
	}
	// The cluster process's CPU profile and execution trace over the run,
	// from its API server's /debug/pprof (as the admin).
	for _, d := range []struct{ env, endpoint, what string }{
		{"GLASSPLANE_BENCH_DASH_GOPROFILE", "profile", "the Go CPU profile"},
		{"GLASSPLANE_BENCH_DASH_GOTRACE", "trace", "the Go execution trace"},
	} {
		if path := os.Getenv(d.env); path != "" {
			done := make(chan struct{})
			defer func() { <-done }()
			go func() {
				defer close(done)
				out, err := c.Client.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/"+d.endpoint).Param("seconds", strconv.Itoa(seconds)).Timeout(time.Duration(seconds+60) * time.Second).DoRaw(context.Background())
				if err == nil {
					err = os.WriteFile(path, out, 0o644)
				}
				if err != nil {
					b.Errorf("%s: %v", d.what, err)
				}
			}()
		}
	}
	if path := os.Getenv("GLASSPLANE_BENCH_DASH_HEAPPROFILE"); path != "" {
		// A base to subtract (go tool pprof -base FILE.base FILE): what
		// the churn allocated without start-up.
		writeHeapProfile(b, c, path+".base")
	}
	cpu0, browser0, self0 := processCPU(b, c.cmd.Process.Pid), browserCPU(), processCPU(b, os.Getpid())
	log0 := c.log.Len()
	b.ResetTimer()
	start := time.Now()
	tick := time.NewTicker(time.Second / time.Duration(max(1, rate/2)))
	defer tick.Stop()
	next := pods
	var churn sync.WaitGroup
	var changes atomic.Int64
	var createMs []float64              // each churn create's round trip, guarded by mu
	inflight := make(chan struct{}, 32) // bounds the writers; a full pool skips the tick
	shot := os.Getenv("GLASSPLANE_BENCH_DASH_SCREENSHOT")
	for time.Since(start) < time.Duration(seconds)*time.Second {
		<-tick.C
		if shot != "" && time.Since(start) > time.Duration(seconds)*time.Second/2 {
			churn.Add(1)
			go func(path string) {
				defer churn.Done()
				png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
				if err == nil {
					err = os.WriteFile(path, png, 0o644)
				}
				if err != nil {
					b.Errorf("the screenshot: %v", err)
				}
			}(shot)
			shot = ""
		}
		mu.Lock()
		if len(names) == 0 {
			mu.Unlock()
			continue
		}
		oldest := names[0]
		names = names[1:]
		mu.Unlock()
		select {
		case inflight <- struct{}{}:
		default:
			mu.Lock()
			names = append([]string{oldest}, names...)
			mu.Unlock()
			continue
		}
		i := next
		next++
		churn.Add(1)
		go func() {
			defer churn.Done()
			defer func() { <-inflight }()
			t0 := time.Now()
			p, err := client.CoreV1().Pods("default").Create(ctx, newPod(i), metav1.CreateOptions{})
			took := float64(time.Since(t0).Microseconds()) / 1000
			if err == nil {
				changes.Add(1)
				mu.Lock()
				createMs = append(createMs, took)
				mu.Unlock()
				mu.Lock()
				names = append(names, p.Name)
				mu.Unlock()
			}
			if client.CoreV1().Pods("default").Delete(ctx, oldest, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}) == nil {
				changes.Add(1)
			}
		}()
	}
	churn.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	cpu := processCPU(b, c.cmd.Process.Pid) - cpu0
	browser, self := browserCPU()-browser0, processCPU(b, os.Getpid())-self0
	gc := gcSpan(c.log.Since(log0))
	// Let the last changes arrive, then read the page's samples.
	time.Sleep(2 * time.Second)
	stopTrace()
	if profile != "" {
		res, err := chromedp.Call(tab, profiler.Stop, cdp.Empty{})
		if err != nil {
			b.Fatal(err)
		}
		raw, err := json.Marshal(res.Profile)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(profile, raw, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	samples := webtest.Eval[struct {
		FromWrite   []float64    `json:"fromWrite"`
		FromRequest []float64    `json:"fromRequest"`
		Split       [][5]float64 `json:"split"`
	}](b, tab, renderSamples)
	lat, fromRequest, split := samples.FromWrite, samples.FromRequest, samples.Split
	msgs := webtest.Eval[float64](b, tab, `window.__msgs - window.__msgs0`)
	maxLag := webtest.Eval[float64](b, tab, `window.__maxLag`)
	if len(fromRequest) == 0 {
		b.Fatal("the page rendered no new pod")
	}
	if len(lat) == 0 {
		b.Fatal("the page saw no etcd write time for the pods it rendered (the creates' audit messages carry none)")
	}
	pct := func(xs []float64, p float64) float64 {
		if len(xs) == 0 {
			return 0
		}
		slices.Sort(xs)
		return xs[min(len(xs)-1, int(p*float64(len(xs))))]
	}
	var parts [3][]float64
	for _, s := range split {
		for i := range parts {
			parts[i] = append(parts[i], s[i])
		}
	}
	if path := os.Getenv("GLASSPLANE_BENCH_DASH_SAMPLES"); path != "" {
		// One line per timed chip, in the order of the etcd writes: the
		// write's time, its three parts and the pod's number.
		slices.SortFunc(split, func(x, y [5]float64) int { return cmp.Compare(x[3], y[3]) })
		var out strings.Builder
		out.WriteString("etcd_write_ms,write_hub_ms,hub_page_ms,page_render_ms,pod\n")
		for _, s := range split {
			fmt.Fprintf(&out, "%.1f,%.1f,%.1f,%.1f,%.0f\n", s[3], s[0], s[1], s[2], s[4])
		}
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			b.Error(err)
		}
	}

	// The home page's server time, over a few requests.
	var home []float64
	for range 20 {
		t0 := time.Now()
		resp, err := http.Get(c.WebURL + "/")
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		home = append(home, float64(time.Since(t0).Microseconds())/1000)
	}
	slices.Sort(home)

	created := next - pods
	slices.Sort(createMs)
	createPct := func(p float64) float64 {
		if len(createMs) == 0 {
			return 0
		}
		return createMs[min(len(createMs)-1, int(p*float64(len(createMs))))]
	}
	// render-* start at the etcd write; request-render-* start before the
	// create request, so they also hold the API's own time to admit the
	// pod (api-create-* is that request's whole round trip).
	b.ReportMetric(createPct(0.50), "api-create-p50-ms")
	b.ReportMetric(createPct(0.99), "api-create-p99-ms")
	b.ReportMetric(float64(changes.Load())/elapsed.Seconds(), "changes/s")
	b.ReportMetric(pct(lat, 0.50), "render-p50-ms")
	b.ReportMetric(pct(lat, 0.99), "render-p99-ms")
	b.ReportMetric(pct(fromRequest, 0.50), "request-render-p50-ms")
	b.ReportMetric(pct(fromRequest, 0.99), "request-render-p99-ms")
	for i, name := range []string{"write-hub", "hub-page", "page-render"} {
		b.ReportMetric(pct(parts[i], 0.50), name+"-p50-ms")
		b.ReportMetric(pct(parts[i], 0.99), name+"-p99-ms")
	}
	b.ReportMetric(msgs/elapsed.Seconds(), "page-msgs/s")
	b.ReportMetric(float64(len(fromRequest))/float64(created), "rendered/created")
	b.ReportMetric(float64(len(lat))/float64(max(1, len(fromRequest))), "write-timed/rendered")
	b.ReportMetric(maxLag, "max-main-thread-lag-ms")
	b.ReportMetric(home[len(home)/2], "home-p50-ms")
	b.ReportMetric(cpu.Seconds()/elapsed.Seconds(), "process-cpu-cores")
	b.ReportMetric(processRSS(b, c.cmd.Process.Pid), "process-rss-MB")
	b.ReportMetric(browser.Seconds()/elapsed.Seconds(), "browser-cpu-cores")
	b.ReportMetric(self.Seconds()/elapsed.Seconds(), "bench-client-cpu-cores")
	// The collections that began during the churn: how often, how much of
	// the time one was marking, the CPU they took (part of
	// process-cpu-cores) and the heap live after the last.
	b.ReportMetric(float64(gc.cycles)/elapsed.Seconds(), "gc-cycles/s")
	b.ReportMetric(gc.markWall.Seconds()/elapsed.Seconds(), "gc-marking")
	b.ReportMetric(gc.cpu.Seconds()/elapsed.Seconds(), "gc-cpu-cores")
	b.ReportMetric(float64(gc.liveMB), "gc-live-MB")
	if path := os.Getenv("GLASSPLANE_BENCH_DASH_HEAPPROFILE"); path != "" {
		writeHeapProfile(b, c, path)
	}
	if path := os.Getenv("GLASSPLANE_BENCH_DASH_LOG"); path != "" {
		if err := os.WriteFile(path, []byte(c.Log()), 0o644); err != nil {
			b.Error(err)
		}
	}
	b.Logf("%d pods on %d nodes, %.0f of %d changes/s for %s: %d creates rendered of %d; etcd write → render p50 %.1f ms, p99 %.1f ms (%d samples); create request → render p50 %.1f ms, p99 %.1f ms; worst main-thread lag %.0f ms; home page p50 %.1f ms",
		pods, nodes, float64(changes.Load())/elapsed.Seconds(), rate, elapsed.Round(time.Second), len(fromRequest), created, pct(lat, 0.5), pct(lat, 0.99), len(lat), pct(fromRequest, 0.5), pct(fromRequest, 0.99), maxLag, home[len(home)/2])
}

// processCPU is the user+system CPU time of pid so far.
// settle waits until every named pod (in default) is Running and each has
// its container's Started Event, and returns how long that took: the churn
// measures its rate on that many running pods, not on top of their start
// (100 nodes reporting a thousand pods' status and three Events each, a
// few seconds' work that the first seconds of the churn would share).
func settle(tb testing.TB, client kubernetes.Interface, names []string) time.Duration {
	tb.Helper()
	ctx := context.Background()
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	start := time.Now()
	deadline := start.Add(3 * time.Minute)
	for {
		running, started := 0, map[string]bool{}
		pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, p := range pods.Items {
				if want[p.Name] && p.Status.Phase == corev1.PodRunning {
					running++
				}
			}
		}
		if err == nil && running == len(want) {
			var events *corev1.EventList
			events, err = client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
			if err == nil {
				for _, e := range events.Items {
					if e.Reason == "Started" && e.InvolvedObject.Kind == "Pod" && want[e.InvolvedObject.Name] {
						started[e.InvolvedObject.Name] = true
					}
				}
				if len(started) == len(want) {
					return time.Since(start)
				}
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the seeded pods did not settle within 3 minutes: %d of %d Running, %d with a Started Event (%v)", running, len(want), len(started), err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func processCPU(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	return statCPU(procStat(tb, pid), 11)
}

// browserCPU is the CPU time so far of the chromium processes running
// (the browser, its renderers, its GPU and utility processes).
func browserCPU() time.Duration {
	var total time.Duration
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil || !strings.HasPrefix(exe, "/usr/lib/chromium/") {
			continue
		}
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // it ended meanwhile
		}
		total += statCPU(strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:])), 11)
	}
	return total
}

// childrenCPU is the user+system CPU time of pid's children that exited
// and were waited for.
func childrenCPU(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	return statCPU(procStat(tb, pid), 13)
}

// statCPU sums the two clock-tick fields of procStat's fields from i.
func statCPU(f []string, i int) time.Duration {
	user, _ := strconv.ParseInt(f[i], 10, 64)
	system, _ := strconv.ParseInt(f[i+1], 10, 64)
	return time.Duration(user+system) * time.Second / 100
}

// machineCPU is the machine's busy CPU time so far, all CPUs together.
func machineCPU(tb testing.TB) time.Duration {
	tb.Helper()
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		tb.Fatal(err)
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	var busy int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, _ := strconv.ParseInt(f[i], 10, 64)
		busy += v
	}
	return time.Duration(busy) * time.Second / 100
}

// procStat is the fields of /proc/pid/stat after the command name.
func procStat(tb testing.TB, pid int) []string {
	tb.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	// The command name may hold spaces; the fields start after ')'.
	return strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
}

// processRSS is pid's resident memory in MB.
func processRSS(tb testing.TB, pid int) float64 {
	tb.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// startPageTrace records chromium's timeline trace of the tab; the function
// it returns ends the trace, writes it to path and logs the time the
// renderer's main thread spent in each kind of work.
func startPageTrace(b *testing.B, tab context.Context, path string) func() {
	b.Helper()
	var mu sync.Mutex
	var events []jsonv2.Value
	done := make(chan struct{})
	if err := chromedp.Listen(tab, func(ev any) {
		switch ev := ev.(type) {
		case *tracing.EventDataCollected:
			mu.Lock()
			events = append(events, ev.Value...)
			mu.Unlock()
		case *tracing.EventTracingComplete:
			close(done)
		}
	}); err != nil {
		b.Fatal(err)
	}
	if _, err := chromedp.Call(tab, tracing.Start, tracing.StartParams{
		TransferMode: tracing.StartTransferModeReportEvents,
		TraceConfig:  &tracing.TraceConfig{IncludedCategories: append([]string{"devtools.timeline", "disabled-by-default-devtools.timeline"}, strings.Fields(os.Getenv("GLASSPLANE_BENCH_DASH_TRACE_CATEGORIES"))...)},
	}); err != nil {
		b.Fatal(err)
	}
	return func() {
		if _, err := chromedp.Call(tab, tracing.End, cdp.Empty{}); err != nil {
			b.Fatal(err)
		}
		select {
		case <-done:
		case <-time.After(time.Minute):
			b.Fatal("the trace did not complete")
		}
		mu.Lock()
		defer mu.Unlock()
		raw, err := json.Marshal(map[string]any{"traceEvents": events})
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			b.Fatal(err)
		}
		// Complete events on the renderer's main thread, by name. Nested
		// events count in their own name and in their parent's (RunTask
		// holds everything the thread did).
		type traceEvent struct {
			Name string  `json:"name"`
			Ph   string  `json:"ph"`
			Pid  int     `json:"pid"`
			Tid  int     `json:"tid"`
			Dur  float64 `json:"dur"`
			Args struct {
				Name string `json:"name"`
			} `json:"args"`
		}
		var parsed []traceEvent
		main := map[[2]int]bool{}
		for _, v := range events {
			var e traceEvent
			if json.Unmarshal(v, &e) != nil {
				continue
			}
			if e.Ph == "M" && e.Name == "thread_name" && e.Args.Name == "CrRendererMain" {
				main[[2]int{e.Pid, e.Tid}] = true
			}
			parsed = append(parsed, e)
		}
		total := map[string]float64{}
		for _, e := range parsed {
			if e.Ph == "X" && main[[2]int{e.Pid, e.Tid}] {
				total[e.Name] += e.Dur / 1000
			}
		}
		names := slices.SortedFunc(maps.Keys(total), func(a, b string) int { return cmp.Compare(total[b], total[a]) })
		var line strings.Builder
		for _, n := range names[:min(len(names), 14)] {
			fmt.Fprintf(&line, " %s %.0f ms;", n, total[n])
		}
		b.Logf("page main thread (trace in %s):%s", path, line.String())
	}
}

// writeHeapProfile writes the cluster process's heap profile, from its API
// server's /debug/pprof (as the admin), to path.
func writeHeapProfile(b *testing.B, c *Cluster, path string) {
	out, err := c.Client.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/heap").DoRaw(context.Background())
	if err == nil {
		err = os.WriteFile(path, out, 0o644)
	}
	if err != nil {
		b.Errorf("the heap profile: %v", err)
	}
}

// gcTrace matches a garbage collection's line of GODEBUG=gctrace=1: its
// clock times (stop, mark, stop), its CPU times (stop, assist/background/
// idle mark, stop) and the heap at start, end and live after it.
var gcTrace = regexp.MustCompile(`(?m)^gc \d+ @[\d.]+s \d+%: ([\d.]+)\+([\d.]+)\+([\d.]+) ms clock, ([\d.]+)\+([\d.]+)/([\d.]+)/([\d.]+)\+([\d.]+) ms cpu, \d+->\d+->(\d+) MB`)

// gcStats sums the collections of a stretch of log.
type gcStats struct {
	cycles   int
	markWall time.Duration // clock time spent marking
	cpu      time.Duration // CPU time of the stops and the marking
	liveMB   int           // heap live after the last collection
}

// gcSpan reads the gctrace lines in log.
func gcSpan(log string) gcStats {
	var st gcStats
	ms := func(s string) time.Duration {
		f, _ := strconv.ParseFloat(s, 64)
		return time.Duration(f * float64(time.Millisecond))
	}
	for _, m := range gcTrace.FindAllStringSubmatch(log, -1) {
		st.cycles++
		st.markWall += ms(m[2])
		for _, c := range m[4:9] {
			st.cpu += ms(c)
		}
		st.liveMB, _ = strconv.Atoi(m[9])
	}
	return st
}
