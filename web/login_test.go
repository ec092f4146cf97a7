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

// TestHeaderNamesTheViewerAndLogsOut checks the header of a dashboard that
// requires a login: it names who the dashboard acts as (the user, with the
// groups on hover), its logout form carries the CSRF token, and logging out
// clears the login so pages send the browser back to the login form. A
// dashboard without a login shows neither.
func TestHeaderNamesTheViewerAndLogsOut(t *testing.T) {
	e := newEnv(t)
	app := echo.New()
	e.dash.Register(app)
	srv := httptest.NewServer(app)
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	page := func(t *testing.T, path string) (int, string) {
		t.Helper()
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	viewerRE := regexp.MustCompile(`<span class="viewer" data-testid="viewer" title="([^"]*)">([^<]*)</span>`)
	csrfRE := regexp.MustCompile(`<form method="post" action="/logout" class="logout-form"><input type="hidden" name="_csrf" value="([^"]*)">`)
	cookie := func(name string) string {
		u, _ := url.Parse(srv.URL)
		for _, ck := range jar.Cookies(u) {
			if ck.Name == name {
				return ck.Value
			}
		}
		return ""
	}

	t.Run("no login, no viewer", func(t *testing.T) {
		code, body := page(t, "/etcd")
		if code != http.StatusOK || strings.Contains(body, `data-testid="viewer"`) || strings.Contains(body, `action="/logout"`) {
			t.Errorf("GET /etcd = %d; header shows a viewer or a logout without a login", code)
		}
	})

	e.dash.cfg.LoginToken = "s3cret-token"
	login := func(t *testing.T, token string) {
		t.Helper()
		_, body := page(t, "/login")
		m := regexp.MustCompile(`name="_csrf" value="([^"]+)"`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no CSRF token in the login form: %s", body)
		}
		resp, err := client.PostForm(srv.URL+"/login", url.Values{"_csrf": {m[1]}, "token": {token}, "next": {"/etcd"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("POST /login = %d", resp.StatusCode)
		}
	}
	t.Run("the login page shows no viewer", func(t *testing.T) {
		if _, body := page(t, "/login"); strings.Contains(body, `data-testid="viewer"`) {
			t.Error("the login page names a viewer")
		}
	})
	login(t, "s3cret-token")
	for _, path := range []string{"/etcd", "/demos", "/requests"} {
		t.Run("the dashboard's identity on "+path, func(t *testing.T) {
			code, body := page(t, path)
			m := viewerRE.FindStringSubmatch(body)
			if code != http.StatusOK || m == nil {
				t.Fatalf("GET %s = %d, no viewer in the header", path, code)
			}
			if m[2] != "dashboard ("+dashboardUser+")" {
				t.Errorf("viewer %q, want the dashboard's own identity", m[2])
			}
			c := csrfRE.FindStringSubmatch(body)
			if c == nil || c[1] == "" || c[1] != cookie(csrfCookie) {
				t.Errorf("logout form token %v, want the CSRF cookie %q", c, cookie(csrfCookie))
			}
		})
	}

	t.Run("an API user with groups on hover", func(t *testing.T) {
		key, err := e.dash.sessions.add(identity{User: "alice", Groups: []string{"teachers", "system:authenticated"}}, "")
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(srv.URL)
		jar.SetCookies(u, []*http.Cookie{{Name: sessionCookie, Value: key, Path: "/"}})
		_, body := page(t, "/requests")
		m := viewerRE.FindStringSubmatch(body)
		if m == nil || m[2] != "alice" || m[1] != "acting as alice\ngroups: teachers, system:authenticated" {
			t.Fatalf("viewer = %q", m)
		}
	})

	t.Run("logout needs the CSRF token", func(t *testing.T) {
		resp, err := client.PostForm(srv.URL+"/logout", url.Values{"_csrf": {"forged"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusBadRequest {
			t.Errorf("POST /logout with a forged token = %d", resp.StatusCode)
		}
		if code, _ := page(t, "/requests"); code != http.StatusOK {
			t.Errorf("still logged in? GET /requests = %d", code)
		}
	})

	t.Run("logout clears the login", func(t *testing.T) {
		_, body := page(t, "/requests")
		m := csrfRE.FindStringSubmatch(body)
		if m == nil {
			t.Fatal("no logout form")
		}
		resp, err := client.PostForm(srv.URL+"/logout", url.Values{"_csrf": {m[1]}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
			t.Fatalf("POST /logout = %d %s", resp.StatusCode, resp.Header.Get("Location"))
		}
		if cookie(loginCookie) != "" || cookie(sessionCookie) != "" {
			t.Errorf("cookies left: login %q, session %q", cookie(loginCookie), cookie(sessionCookie))
		}
		if code, _ := page(t, "/etcd"); code != http.StatusSeeOther {
			t.Errorf("GET /etcd after logout = %d, want a redirect to the login form", code)
		}
	})
}
