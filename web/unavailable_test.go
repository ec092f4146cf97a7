package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v5"

	"github.com/glassplane/glassplane/web/source/storesource"
)

// TestPagesSayWhatTheClusterDoesNotOffer: a dashboard without an etcd
// explorer or audit events (upstream Kubernetes without --etcd-endpoints
// or --audit-webhook-listen) says so once on the page that needs them, and
// its other pages still work.
func TestPagesSayWhatTheClusterDoesNotOffer(t *testing.T) {
	e := newEnv(t)
	dash, err := New(Config{Store: storesource.Store{S: e.store}})
	if err != nil {
		t.Fatal(err)
	}
	app := echo.New()
	dash.Register(app)
	srv := httptest.NewServer(app)
	t.Cleanup(srv.Close)
	for _, tt := range []struct{ path, want string }{
		{"/etcd", `data-testid="etcd-unavailable">This cluster&#39;s etcd cannot be read from the dashboard`},
		{"/requests", `data-testid="requests-unavailable">This cluster sends the dashboard no audit events`},
		{"/events", `data-page="events"`},
		{"/nodes", `data-page="nodes"`},
	} {
		resp, err := http.Get(srv.URL + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), tt.want) {
			t.Errorf("GET %s = %d, want it to contain %s:\n%s", tt.path, resp.StatusCode, tt.want, body)
		}
	}
}
