package node

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// rulesProxy is a ServiceProxy that answers Rules from a function.
type rulesProxy struct {
	rules func(namespace, name string) (string, error)
}

func (p rulesProxy) Run(ctx context.Context) error { <-ctx.Done(); return nil }

func (p rulesProxy) Rules(_ context.Context, namespace, name string) (string, error) {
	return p.rules(namespace, name)
}

func TestServeProxyRules(t *testing.T) {
	echo := rulesProxy{rules: func(ns, name string) (string, error) { return "rules of " + ns + "/" + name, nil }}
	tests := []struct {
		name     string
		proxy    ServiceProxy
		query    string
		wantCode int
		wantBody string
	}{
		{"a Service's rules", echo, "?namespace=web-ns&name=web", http.StatusOK, "rules of web-ns/web"},
		{"namespace defaults to default", echo, "?name=web", http.StatusOK, "rules of default/web"},
		{"the whole table without a name", echo, "", http.StatusOK, "rules of default/"},
		{"an invalid name is a 400", echo, "?namespace=ns&name=Bad_Name", http.StatusBadRequest, "invalid Service"},
		{"an invalid namespace is a 400", echo, "?namespace=a%20b&name=web", http.StatusBadRequest, "invalid Service"},
		{"no proxy on this node is a 404", nil, "?name=web", http.StatusNotFound, "not found"},
		{"a failing listing is a 503", rulesProxy{rules: func(string, string) (string, error) { return "", errors.New("nft gone") }}, "?name=web", http.StatusServiceUnavailable, "nft gone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &Agent{cfg: Config{Proxy: tt.proxy}}
			rec := httptest.NewRecorder()
			a.serveProxyRules(rec, httptest.NewRequest(http.MethodGet, "/glassplane/proxy-rules"+tt.query, nil))
			if rec.Code != tt.wantCode || !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Errorf("got %d %q, want %d with %q", rec.Code, rec.Body.String(), tt.wantCode, tt.wantBody)
			}
			if tt.wantCode == http.StatusOK && rec.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
				t.Errorf("Content-Type %q", rec.Header().Get("Content-Type"))
			}
		})
	}
}
