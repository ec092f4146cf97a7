package apiserver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestHealthFormats checks the answers of the health endpoints against
// kube-apiserver's healthz handler: the verbose lines, withheld reasons,
// exclusions, one check by name, and 404 for a name not installed.
func TestHealthFormats(t *testing.T) {
	down := errors.New("context deadline exceeded")
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil)), health: healthEndpoints{
		readyz: []healthCheck{
			{"ping", func(context.Context) error { return nil }},
			{"etcd", func(context.Context) error { return down }},
			{"poststarthook/rbac/bootstrap-roles", func(context.Context) error { return nil }},
		},
		livez: []healthCheck{{"ping", func(context.Context) error { return nil }}},
	}}
	tests := []struct {
		path     string
		wantCode int
		wantBody string
	}{
		{"/readyz", 500, "[+]ping ok\n[-]etcd failed: reason withheld\n[+]poststarthook/rbac/bootstrap-roles ok\nreadyz check failed\n"},
		{"/readyz?verbose", 500, "[+]ping ok\n[-]etcd failed: reason withheld\n[+]poststarthook/rbac/bootstrap-roles ok\nreadyz check failed\n"},
		{"/readyz?exclude=etcd", 200, "ok"},
		{"/readyz?exclude=etcd&verbose", 200, "[+]ping ok\n[+]etcd excluded: ok\n[+]poststarthook/rbac/bootstrap-roles ok\nreadyz check passed\n"},
		{"/readyz?exclude=etcd&exclude=nope&exclude=also&verbose=1", 200,
			"[+]ping ok\n[+]etcd excluded: ok\n[+]poststarthook/rbac/bootstrap-roles ok\nwarn: some health checks cannot be excluded: no matches for \"also\",\"nope\"\nreadyz check passed\n"},
		{"/readyz/etcd", 500, "internal server error: context deadline exceeded\n"},
		{"/readyz/ping", 200, "ok"},
		{"/readyz/poststarthook/rbac/bootstrap-roles", 200, "ok"},
		{"/livez?verbose", 200, "[+]ping ok\nlivez check passed\n"},
		{"/livez", 200, "ok"},
		{"/livez/etcd", 404, ""},
		{"/readyz/nope", 404, ""},
		{"/readyz/", 404, ""},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, tc.path, nil)
			w := httptest.NewRecorder()
			endpoint := "readyz"
			if tc.path[:6] == "/livez" {
				endpoint = "livez"
			}
			s.serveHealth(w, r, endpoint)
			if w.Code != tc.wantCode {
				t.Fatalf("code %d, want %d: %s", w.Code, tc.wantCode, w.Body)
			}
			if tc.wantCode == 404 {
				if ct := w.Header().Get("Content-Type"); ct != "application/json" {
					t.Errorf("404 content type %q, want a Status", ct)
				}
				return
			}
			if w.Body.String() != tc.wantBody {
				t.Errorf("body %q, want %q", w.Body, tc.wantBody)
			}
			if ct := w.Header().Get("Content-Type"); ct != "text/plain; charset=utf-8" {
				t.Errorf("content type %q", ct)
			}
		})
	}
}

// TestEtcdProbeRateLimit checks that the etcd probe reads etcd at most once
// per half timeout, answering the last read's result in between.
func TestEtcdProbeRateLimit(t *testing.T) {
	reads := 0
	failing := true
	p := newEtcdProbe(func(context.Context) error {
		reads++
		if failing {
			return errors.New("no quorum")
		}
		return nil
	}, 100*time.Millisecond)
	ctx := context.Background()
	if err := p.check(ctx); err == nil || err.Error() != "error getting data from etcd: no quorum" {
		t.Fatalf("first check: %v", err)
	}
	failing = false
	if err := p.check(ctx); err == nil || reads != 1 {
		t.Fatalf("a check right after read etcd again (%d reads) or forgot the failure: %v", reads, err)
	}
	time.Sleep(60 * time.Millisecond)
	if err := p.check(ctx); err != nil || reads != 2 {
		t.Fatalf("a check after half the timeout: %v, %d reads", err, reads)
	}
}

// TestEtcdProbeTimeout checks that a read etcd does not answer is bounded
// by the probe's timeout.
func TestEtcdProbeTimeout(t *testing.T) {
	p := newEtcdProbe(func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	}, 50*time.Millisecond)
	start := time.Now()
	if err := p.check(context.Background()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("the check took %s", d)
	}
}
