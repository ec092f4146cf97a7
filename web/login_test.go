package web

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/labstack/echo/v5"
)

func TestIsLoopback(t *testing.T) {
	tests := []struct {
		listen string
		want   bool
	}{
		{"127.0.0.1:8080", true},
		{"[::1]:8080", true},
		{"localhost:8080", true},
		{"0.0.0.0:8080", false},
		{":8080", false},
		{"192.168.1.5:80", false},
	}
	for _, tt := range tests {
		t.Run(tt.listen, func(t *testing.T) {
			if got := IsLoopback(tt.listen); got != tt.want {
				t.Errorf("IsLoopback(%q) = %v, want %v", tt.listen, got, tt.want)
			}
		})
	}
}

func TestLoginToken(t *testing.T) {
	e := newEnv(t)
	e.dash.cfg.LoginToken = "s3cret-token"
	app := echo.New()
	e.dash.Register(app)
	srv := httptest.NewServer(app)
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(t *testing.T, path string, header ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	t.Run("pages redirect to the login form", func(t *testing.T) {
		for _, path := range []string{"/", "/etcd", "/requests", "/apply", "/objects/pods/default/x"} {
			resp := get(t, path)
			if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login?next=") {
				t.Errorf("GET %s = %d %s", path, resp.StatusCode, resp.Header.Get("Location"))
			}
		}
	})
	t.Run("the websocket answers 401", func(t *testing.T) {
		if resp := get(t, "/ws"); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET /ws = %d", resp.StatusCode)
		}
	})
	t.Run("assets stay public", func(t *testing.T) {
		if resp := get(t, "/static/css/app.css"); resp.StatusCode != http.StatusOK {
			t.Errorf("GET app.css = %d", resp.StatusCode)
		}
	})
	t.Run("a bearer token is accepted", func(t *testing.T) {
		if resp := get(t, "/etcd", "Authorization", "Bearer s3cret-token"); resp.StatusCode != http.StatusOK {
			t.Errorf("GET /etcd with the token = %d", resp.StatusCode)
		}
		if resp := get(t, "/etcd", "Authorization", "Bearer wrong"); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("GET /etcd with a wrong token = %d", resp.StatusCode)
		}
	})
	post := func(t *testing.T, token, next string) *http.Response {
		t.Helper()
		resp, err := client.Get(srv.URL + "/login")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := regexp.MustCompile(`name="_csrf" value="([^"]+)"`).FindSubmatch(body)
		if m == nil {
			t.Fatalf("no CSRF token in the login form: %s", body)
		}
		resp, err = client.PostForm(srv.URL+"/login", url.Values{"_csrf": {string(m[1])}, "token": {token}, "next": {next}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	t.Run("a wrong token is refused", func(t *testing.T) {
		if resp := post(t, "nope", "/etcd"); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("POST /login = %d", resp.StatusCode)
		}
	})
	t.Run("the right token logs in and returns to a local page only", func(t *testing.T) {
		resp := post(t, "s3cret-token", "//evil.example/")
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
			t.Fatalf("POST /login = %d %s", resp.StatusCode, resp.Header.Get("Location"))
		}
		if resp := get(t, "/etcd"); resp.StatusCode != http.StatusOK {
			t.Errorf("GET /etcd after login = %d", resp.StatusCode)
		}
	})
}
