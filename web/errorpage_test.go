package web

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// TestErrorPage: a browser asking for an unknown URL gets a page in the
// dashboard's style with the path escaped; scripts and the websocket keep
// JSON.
func TestErrorPage(t *testing.T) {
	e := newEnv(t)
	const hostile = `/no/such/<script>alert(1)</script>`
	tests := []struct {
		name, path, accept string
		status             int
		page               bool
	}{
		{"browser, unknown URL", hostile, "text/html,application/xhtml+xml,*/*;q=0.8", http.StatusNotFound, true},
		{"browser, bad query", "/etcd?at=x", "text/html", http.StatusBadRequest, true},
		{"script, unknown URL", "/no/such/page", "application/json", http.StatusNotFound, false},
		{"no Accept", "/no/such/page", "", http.StatusNotFound, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, e.srv.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.accept != "" {
				req.Header.Set("Accept", tt.accept)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status = %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			ct := resp.Header.Get("Content-Type")
			if !tt.page {
				if !strings.HasPrefix(ct, "application/json") {
					t.Errorf("Content-Type = %q, want JSON", ct)
				}
				return
			}
			if !strings.HasPrefix(ct, "text/html") {
				t.Fatalf("Content-Type = %q, want HTML: %s", ct, body)
			}
			if strings.Contains(string(body), "<script>alert") {
				t.Errorf("the path is not escaped: %s", body)
			}
			doc, err := html.Parse(strings.NewReader(string(body)))
			if err != nil {
				t.Fatal(err)
			}
			pages := byTestID(doc, "error-page")
			if len(pages) != 1 || len(byTestID(doc, "nav")) != 1 {
				t.Fatalf("no error page in the dashboard's layout: %s", body)
			}
			if got := text(byTestID(doc, "error-path")[0]); tt.path == hostile && got != hostile {
				t.Errorf("path shown = %q, want %q", got, hostile)
			}
		})
	}
}
