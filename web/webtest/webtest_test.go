package webtest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestWaitLiveOpens drives chromium against a page whose script marks the
// connection live, and one that marks it after an uncaught exception, to
// check that WaitLive sees the indicator and that the browser starts with
// its error listener.
func TestWaitLiveOpens(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		body := `<!doctype html><body data-revision="7"><span id="conn" data-testid="connection" data-state="connecting"></span>
<script>setTimeout(() => { document.getElementById("conn").dataset.state = "live"; }, 50);</script>`
		if strings.Contains(r.URL.Path, "throws") {
			body += `<script>throw new Error("boom");</script>`
		}
		w.Write([]byte(body))
	}))
	defer srv.Close()
	tab := Browser(t)
	Navigate(t, tab, srv.URL+"/")
	WaitLive(t, tab)
	Navigate(t, tab, srv.URL+"/throws")
	WaitLive(t, tab)
	if got := Eval[string](t, tab, `document.body.dataset.revision`); got != "7" {
		t.Fatalf("revision = %q", got)
	}
}

// TestBrowserDoesNotRaiseItsPriority loads a page and checks that no thread
// of chromium's process tree runs above normal priority (a nice value below
// zero), which chromium started by root would give its browser and GPU
// processes.
func TestBrowserDoesNotRaiseItsPriority(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<!doctype html><body><p>hello</p>`))
	}))
	defer srv.Close()
	tab := Browser(t)
	Navigate(t, tab, srv.URL+"/")
	if got := Eval[string](t, tab, `document.querySelector("p").textContent`); got != "hello" {
		t.Fatalf("the page says %q", got)
	}
	root := chromedp.FromContext(tab).Browser.Process()
	if root == nil {
		t.Fatal("no browser process")
	}
	threads := 0
	for _, pid := range processTree(t, root.Pid) {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		for _, stat := range tasks {
			b, err := os.ReadFile(stat)
			if err != nil {
				continue // the thread ended
			}
			// The fields after the command's closing parenthesis: state is
			// field 3, nice field 19.
			fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
			nice, err := strconv.Atoi(fields[16])
			if err != nil {
				t.Fatalf("%s: %v", stat, err)
			}
			threads++
			if nice < 0 {
				t.Errorf("%s runs at nice %d", stat, nice)
			}
		}
	}
	if threads < 10 {
		t.Fatalf("found %d threads of chromium; want its whole process tree", threads)
	}
}

// processTree returns pid and its descendants.
func processTree(t *testing.T, pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", out[i]))
		for _, f := range tasks {
			b, _ := os.ReadFile(f)
			for _, c := range strings.Fields(string(b)) {
				n, err := strconv.Atoi(c)
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				out = append(out, n)
			}
		}
	}
	return out
}
