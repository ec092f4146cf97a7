package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/glassplane/glassplane/web/webtest"
)

// TestBrowserRequestsPageUnderCSP follows live requests on the requests
// page: the pipeline's stages are staggered by class (their --i custom
// property comes from app.css), and the page draws them without anything
// the Content-Security-Policy refuses.
func TestBrowserRequestsPageUnderCSP(t *testing.T) {
	c := SharedCluster(t)
	tab := webtest.Browser(t)
	webtest.Navigate(t, tab, c.WebURL+"/requests")
	webtest.WaitLive(t, tab)
	webtest.Eval[bool](t, tab, `(() => {
		window.__csp = [];
		document.addEventListener("securitypolicyviolation", e => window.__csp.push(e.violatedDirective + " at " + (e.target.id || e.target.nodeName)));
		return true;
	})()`)
	before := webtest.Eval[int](t, tab, `document.querySelectorAll('.request.fresh').length`)
	c.MustKubectl(t, "", "create", "configmap", "csp-probe", "--from-literal=k=v")
	t.Cleanup(func() { c.Kubectl(t, "", "delete", "configmap", "csp-probe") })
	webtest.WaitFor(t, tab, `document.querySelectorAll('.request.fresh [data-testid="pipeline"] .pstage').length > 0 && document.querySelectorAll('.request.fresh').length > `+strconv.Itoa(before))

	// The create's stages each say when the request entered them, in order,
	// the etcd write last.
	webtest.WaitFor(t, tab, `[...document.querySelectorAll('.request.fresh')].some(r => r.textContent.includes("csp-probe"))`)
	starts := webtest.Eval[[]string](t, tab, `(() => {
		const r = [...document.querySelectorAll('.request.fresh')].find(r => r.textContent.includes("csp-probe"));
		return [...r.querySelectorAll('.pstage[data-state="ok"]')].map(s => s.dataset.stage + "=" + (s.querySelector(".pstage-time")?.textContent || ""));
	})()`)
	last := -1.0
	for _, st := range starts {
		name, at, _ := strings.Cut(st, "=")
		var ms float64
		if _, err := fmt.Sscanf(at, "+%f ms", &ms); err != nil || ms < last {
			t.Errorf("stage %s says it began at %q, want +N.NN ms after the previous stage's %.2f (all: %v)", name, at, last, starts)
		}
		last = ms
	}
	if len(starts) == 0 || !strings.HasPrefix(starts[len(starts)-1], "etcd=") {
		t.Errorf("the create's stages %v do not end with the etcd write", starts)
	}
	if n := webtest.Eval[int](t, tab, `document.querySelectorAll('[data-testid="pipeline"] [style]').length`); n != 0 {
		t.Errorf("%d pipeline elements carry an inline style", n)
	}
	delays := webtest.Eval[[]string](t, tab, `[...document.querySelector('.request.fresh [data-testid="pipeline"]').querySelectorAll('.pstage')].map(s => getComputedStyle(s).getPropertyValue("--i").trim() || "0")`)
	for i, d := range delays {
		if d != strconv.Itoa(i) {
			t.Errorf("stage %d has --i %q, want %d (delays %v)", i, d, i, delays)
		}
	}
	// Violations are reported asynchronously and in order: a canary
	// inline style, which the policy refuses, comes after any the page
	// caused, and proves the listener hears the policy.
	webtest.Eval[bool](t, tab, `(() => { const s = document.createElement("span"); s.id = "csp-canary"; s.setAttribute("style", "color: red"); document.body.append(s); return true; })()`)
	webtest.WaitFor(t, tab, `window.__csp.some(v => v.startsWith("style-src") && v.endsWith(" at csp-canary"))`)
	if v := webtest.Eval[[]string](t, tab, `window.__csp`); len(v) != 1 {
		t.Errorf("Content-Security-Policy violations besides the canary's: %v", v)
	}
}

// TestBrowserHeaderViewerAndLogout logs in with a ServiceAccount's token:
// every page's header names the user (groups on hover), and its logout
// button ends the session, after which the header names nobody.
func TestBrowserHeaderViewerAndLogout(t *testing.T) {
	c := SharedCluster(t)
	tab := webtest.Browser(t)
	webtest.Navigate(t, tab, c.WebURL+"/requests")
	if webtest.Eval[bool](t, tab, `document.querySelector('[data-testid="viewer"]') !== null`) {
		t.Fatal("a dashboard without a login names a viewer")
	}
	c.MustKubectl(t, "", "create", "serviceaccount", "header-viewer")
	t.Cleanup(func() { c.Kubectl(t, "", "delete", "serviceaccount", "header-viewer") })
	token := strings.TrimSpace(c.MustKubectl(t, "", "create", "token", "header-viewer"))
	loginAs(t, c, tab, token)

	const user = "system:serviceaccount:default:header-viewer"
	for _, path := range []string{"/requests", "/demos", "/etcd"} {
		webtest.Navigate(t, tab, c.WebURL+path)
		webtest.WaitSelector(t, tab, webtest.TestID("viewer"))
		if got := webtest.Eval[string](t, tab, `document.querySelector('[data-testid="viewer"]').textContent`); got != user {
			t.Errorf("%s: the header names %q, want %q", path, got, user)
		}
	}
	webtest.Screenshot(t, tab, filepath.Join(webtest.OutputDir(t), "header-viewer.png"))
	title := webtest.Eval[string](t, tab, `document.querySelector('[data-testid="viewer"]').title`)
	if !strings.Contains(title, "groups: ") || !strings.Contains(title, "system:serviceaccounts:default") {
		t.Errorf("the viewer's hover text %q lacks the groups", title)
	}

	webtest.Eval[bool](t, tab, `(document.body.dataset.stale = "1") === "1"`)
	click(t, tab, "logout")
	deadline := time.Now().Add(webtest.Timeout)
	for {
		ctx, cancel := context.WithTimeout(tab, 5*time.Second)
		path, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body && document.body.dataset.stale !== "1" ? location.pathname : ""`))
		cancel()
		if err == nil && path == "/login" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("logout did not lead to the login form (at %q, %v)", path, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	webtest.Navigate(t, tab, c.WebURL+"/demos")
	webtest.WaitSelector(t, tab, webtest.TestID("demos"))
	if webtest.Eval[bool](t, tab, `document.querySelector('[data-testid="viewer"]') !== null`) {
		t.Error("the header still names a viewer after logout")
	}
	if got := webtest.Eval[string](t, tab, `document.querySelector('[data-testid="demos-acting-as"]').textContent`); strings.Contains(got, "header-viewer") {
		t.Errorf("the dashboard still acts as %q after logout", got)
	}
}
