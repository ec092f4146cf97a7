package webtest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
