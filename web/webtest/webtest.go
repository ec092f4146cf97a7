package webtest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

const (
	// ChromiumPath is where Debian installs chromium.
	ChromiumPath = "/usr/bin/chromium"
	// Timeout bounds every wait; generous because test machines are shared.
	Timeout = 60 * time.Second
	// OutputEnv names the directory screenshots are written to.
	OutputEnv = "GLASSPLANE_TEST_OUTPUT"
)

// Browser starts a headless chromium with a fresh profile and returns a tab.
// The browser stops when the test ends. Without chromium the test fails when
// CI=true and is skipped otherwise.
func Browser(t testing.TB) context.Context {
	t.Helper()
	if _, err := os.Stat(ChromiumPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium is required in CI: %v", err)
		}
		t.Skipf("skipping the browser test: chromium not found at %s", ChromiumPath)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(ChromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1440, 900),
		chromedp.UserDataDir(t.TempDir()),
	}
	if setpriv, ok := dropNice(); ok {
		opts = append(opts, chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			cmd.Args = append([]string{setpriv, "--bounding-set", "-sys_nice", "--inh-caps", "-sys_nice", cmd.Path}, cmd.Args[1:]...)
			cmd.Path = setpriv
			// This func replaces chromedp's own, which kills the browser
			// when the test process dies; so does this one.
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		}))
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// The first action starts the browser, which lives as long as the
	// context of that action: it must be ctx itself, not a shorter one.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("failed to start chromium: %v", err)
	}
	// Every page of the tab keeps its uncaught errors, for WaitLive's
	// report.
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: pageErrorsScript}); err != nil {
		t.Fatalf("failed to install the page error recorder: %v", err)
	}
	return ctx
}

// dropNice returns util-linux's setpriv when this process runs as root:
// chromium is then started without CAP_SYS_NICE, as a person's browser runs.
// With it, chromium raises its browser and GPU processes to nice -8
// ("display" priority), which an unprivileged user's chromium cannot, and
// they take the CPU from the cluster under test on a shared machine.
func dropNice() (string, bool) {
	if os.Geteuid() != 0 {
		return "", false
	}
	path, err := exec.LookPath("setpriv")
	return path, err == nil
}

// pageErrorsScript records a page's uncaught exceptions and rejections
// in window.__pageErrors.
const pageErrorsScript = `(() => {
  window.__pageErrors = [];
  const keep = (s) => { if (window.__pageErrors.length < 20) window.__pageErrors.push(String(s)); };
  window.addEventListener("error", (e) => keep((e.error && e.error.stack) || e.message));
  window.addEventListener("unhandledrejection", (e) => keep((e.reason && e.reason.stack) || e.reason));
})()`

// TestID is a CSS selector for the element whose data-testid is id.
func TestID(id string) string {
	return `[data-testid=` + strconv.Quote(id) + `]`
}

// Navigate opens url in the tab and waits for the page to load.
func Navigate(t testing.TB, ctx context.Context, url string) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	if err := chromedp.Do(wctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("failed to open %s: %v", url, err)
	}
}

// WaitSelector waits until an element matching the CSS selector exists.
func WaitSelector(t testing.TB, ctx context.Context, selector string) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	if err := chromedp.Do(wctx, chromedp.WaitReady(chromedp.CSS(selector))); err != nil {
		t.Fatalf("element %s did not appear: %v", selector, err)
	}
}

// WaitFor waits until the JavaScript expression is truthy in the page.
func WaitFor(t testing.TB, ctx context.Context, expression string) {
	t.Helper()
	if err := poll(ctx, expression); err != nil {
		t.Fatalf("condition %s did not hold: %v", expression, err)
	}
}

// poll waits until expression is truthy in the page, for up to Timeout. A
// poll whose page replaced its JavaScript context meanwhile (a navigation
// that had just begun: chromedp then reports the old context's id as not
// found) starts again in the new one.
func poll(ctx context.Context, expression string) error {
	wctx, cancel := context.WithTimeout(ctx, Timeout+5*time.Second)
	defer cancel()
	deadline := time.Now().Add(Timeout)
	for {
		err := chromedp.Do(wctx, chromedp.Poll[chromedp.Void](expression,
			chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(time.Until(deadline))))
		if err == nil || !contextReplaced(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-wctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// contextReplaced reports whether err is the DevTools protocol's answer for
// a JavaScript context that no longer exists.
func contextReplaced(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Cannot find context with specified id") || strings.Contains(msg, "Execution context was destroyed")
}

// WaitLive waits until the page's websocket is open (its connection
// indicator says live); when it is not, the failure says what the page
// showed instead.
func WaitLive(t testing.TB, ctx context.Context) {
	t.Helper()
	const live = `document.querySelector('[data-testid="connection"]').dataset.state === "live"`
	err := poll(ctx, live)
	if err == nil {
		return
	}
	ectx, ecancel := context.WithTimeout(ctx, 5*time.Second)
	defer ecancel()
	seen, eerr := chromedp.Run(ectx, chromedp.Evaluate[string](`JSON.stringify({
		url: location.href,
		state: document.querySelector('[data-testid="connection"]')?.dataset.state,
		text: document.querySelector('[data-testid="connection"]')?.textContent,
		revision: document.body.dataset.revision,
		readyState: document.readyState,
		navigations: performance.getEntriesByType("navigation").map(e => e.type),
		errors: window.__pageErrors,
		scripts: performance.getEntriesByType("resource").filter(e => e.initiatorType === "script" || e.name.endsWith(".js")).map(e => e.name.split("/").pop()),
	})`))
	if eerr != nil {
		seen = "(the page could not be read: " + eerr.Error() + ")"
	}
	t.Fatalf("the page's websocket did not open: %v; the page: %s", err, seen)
}

// Eval evaluates a JavaScript expression and returns its value.
func Eval[T any](t testing.TB, ctx context.Context, expression string) T {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	v, err := chromedp.Run(wctx, chromedp.Evaluate[T](expression))
	if err != nil {
		t.Fatalf("failed to evaluate %s: %v", expression, err)
	}
	return v
}

// OutputDir is $GLASSPLANE_TEST_OUTPUT, created if needed, or else a new
// directory under the system's temporary directory that outlives the test.
func OutputDir(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv(OutputEnv); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("failed to create %s: %v", dir, err)
		}
		return dir
	}
	dir, err := os.MkdirTemp("", "glassplane-test-output-")
	if err != nil {
		t.Fatalf("failed to create an output directory: %v", err)
	}
	return dir
}

// Screenshot saves the whole page as PNG to path and returns path.
func Screenshot(t testing.TB, ctx context.Context, path string) string {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	png, err := chromedp.Run(wctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("failed to take a screenshot: %v", err)
	}
	if !strings.HasSuffix(path, ".png") {
		path += ".png"
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatalf("failed to create %s: %v", filepath.Dir(path), err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatalf("failed to write %s: %v", path, err)
	}
	t.Logf("screenshot: %s", path)
	return path
}

// JSString quotes s as a JavaScript string literal.
func JSString(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}
