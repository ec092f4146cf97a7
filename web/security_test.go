package web

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v5"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

func TestSafeNext(t *testing.T) {
	tests := []struct {
		next, want string
	}{
		{"/etcd?key=/registry/pods", "/etcd?key=/registry/pods"},
		{"/objects/pods/default/web", "/objects/pods/default/web"},
		{"/", "/"},
		{"", "/"},
		{"etcd", "/"},
		{"//evil.example/", "/"},
		{"/\\evil.example", "/"},
		{"/\t/evil.example", "/"},
		{"/\n/evil.example", "/"},
		{"/\r/evil.example", "/"},
		{"/ /evil.example", "/"},
		{"/\x00/evil.example", "/"},
		{"/\u00a0/evil.example", "/"},
		{"\t//evil.example", "/"},
		{"/a\\b", "/"},
		{"https://evil.example/", "/"},
		{"javascript:alert(1)", "/"},
		{"/%2F/evil.example", "/"},
	}
	for _, tt := range tests {
		t.Run(tt.next, func(t *testing.T) {
			if got := safeNext(tt.next); got != tt.want {
				t.Errorf("safeNext(%q) = %q, want %q", tt.next, got, tt.want)
			}
		})
	}
}

func TestHostPolicy(t *testing.T) {
	tests := []struct {
		listen string
		accept []string
		host   string
		want   bool
	}{
		{"127.0.0.1:8080", nil, "127.0.0.1:8080", true},
		{"127.0.0.1:8080", nil, "localhost:8080", true},
		{"127.0.0.1:8080", nil, "[::1]:8080", true},
		{"127.0.0.1:8080", nil, "LOCALHOST", true},
		{"", nil, "127.0.0.1:1234", true},
		{"127.0.0.1:8080", nil, "evil.example:8080", false},
		{"127.0.0.1:8080", nil, "localhost.evil.example:8080", false},
		{"127.0.0.1:8080", nil, "", false},
		{"127.0.0.1:8080", []string{"dash.example.org"}, "dash.example.org", true},
		{"192.0.2.7:8080", nil, "192.0.2.7:8080", true},
		{"192.0.2.7:8080", nil, "localhost:8080", false},
		{"192.0.2.7:8080", nil, "evil.example:8080", false},
		{"0.0.0.0:8080", nil, "127.0.0.1:8080", true},
		{"0.0.0.0:8080", nil, "localhost:8080", true},
		{":8080", nil, "evil.example:8080", false},
		{"0.0.0.0:8080", nil, "192.0.2.200:8080", false},
		{"0.0.0.0:8080", nil, "0.0.0.0:8080", true},
		{"[::]:8080", []string{"Dash.Example.org"}, "dash.example.org:443", true},
	}
	for _, tt := range tests {
		t.Run(tt.listen+" "+tt.host, func(t *testing.T) {
			if got := newHostPolicy(tt.listen, tt.accept).allows(tt.host); got != tt.want {
				t.Errorf("allows(%q) = %v, want %v", tt.host, got, tt.want)
			}
		})
	}
}

// securityEnv is a dashboard over a fake API server that answers
// SelfSubjectReviews from its token table (and allows every
// SubjectAccessReview), with one-time links enabled.
type securityEnv struct {
	*env
	dash     *Dashboard
	url      string
	linkFile string

	mu      sync.Mutex        // guards tokens, apiDown
	tokens  map[string]string // token → user
	apiDown bool
}

func newSecurityEnv(t *testing.T) *securityEnv {
	t.Helper()
	s := &securityEnv{env: newEnv(t), tokens: map[string]string{}}
	api := httptest.NewServer(http.HandlerFunc(s.serveAPI))
	t.Cleanup(api.Close)
	s.linkFile = filepath.Join(t.TempDir(), "dashboard-login")
	app := echo.New()
	srv := httptest.NewUnstartedServer(app)
	srv.Start()
	t.Cleanup(srv.Close)
	cfg := storeSources(s.store, s.ring.log)
	cfg.Mode, cfg.RESTConfig = "simulated", &rest.Config{Host: api.URL}
	cfg.LinkUser, cfg.LinkGroups = "kubernetes-admin", []string{"system:masters", "system:authenticated"}
	cfg.LinkFile, cfg.URL = s.linkFile, srv.URL
	dash, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dash.Register(app)
	s.dash, s.url = dash, srv.URL
	return s
}

func (s *securityEnv) serveAPI(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	down := s.apiDown
	user, ok := s.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	status := func(code int, reason metav1.StatusReason) {
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: int32(code), Reason: reason})
	}
	switch {
	case down:
		status(http.StatusInternalServerError, metav1.StatusReasonInternalError)
	case r.URL.Path == "/apis/authentication.k8s.io/v1/selfsubjectreviews" && ok:
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(authenticationv1.SelfSubjectReview{
			TypeMeta: metav1.TypeMeta{Kind: "SelfSubjectReview", APIVersion: "authentication.k8s.io/v1"},
			Status:   authenticationv1.SelfSubjectReviewStatus{UserInfo: authenticationv1.UserInfo{Username: user, Groups: []string{"system:authenticated"}}},
		})
	case r.URL.Path == "/apis/authentication.k8s.io/v1/selfsubjectreviews":
		status(http.StatusUnauthorized, metav1.StatusReasonUnauthorized)
	case strings.HasSuffix(r.URL.Path, "subjectaccessreviews"):
		var sar authorizationv1.SubjectAccessReview
		json.NewDecoder(r.Body).Decode(&sar)
		sar.Status.Allowed = true
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(sar)
	default:
		status(http.StatusNotFound, metav1.StatusReasonNotFound)
	}
}

func (s *securityEnv) setToken(token, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if user == "" {
		delete(s.tokens, token)
	} else {
		s.tokens[token] = user
	}
}

func (s *securityEnv) setAPIDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apiDown = down
}

// browser is a client with its own cookies that does not follow redirects.
type browser struct {
	t      *testing.T
	base   string
	jar    *cookiejar.Jar
	client *http.Client
}

func newBrowser(t *testing.T, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, jar: jar, client: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends a request with header pairs and returns the response and body.
func (b *browser) do(method, path string, form url.Values, header ...string) (*http.Response, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, string(raw)
}

var csrfRE = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// csrf fetches a page's form token (and the cookie it goes with).
func (b *browser) csrf() string {
	b.t.Helper()
	_, body := b.do(http.MethodGet, "/login", nil)
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		b.t.Fatalf("no CSRF token in the login form: %s", body)
	}
	return m[1]
}

func (b *browser) cookie(name string) string {
	u, _ := url.Parse(b.base)
	for _, ck := range b.jar.Cookies(u) {
		if ck.Name == name {
			return ck.Value
		}
	}
	return ""
}

// login posts an API token to the login form.
func (b *browser) login(token string) *http.Response {
	b.t.Helper()
	resp, _ := b.do(http.MethodPost, "/login", url.Values{"_csrf": {b.csrf()}, "token": {token}, "next": {"/etcd"}})
	return resp
}

func TestHostAndOriginChecks(t *testing.T) {
	s := newSecurityEnv(t)
	b := newBrowser(t, s.url)
	for _, path := range []string{"/", "/apply", "/login", "/ws", "/static/css/app.css"} {
		t.Run("rebinding "+path, func(t *testing.T) {
			resp, body := b.do(http.MethodGet, path, nil, "Host", "evil.example:8080")
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "does not answer to the host") {
				t.Errorf("GET %s for evil.example = %d %q", path, resp.StatusCode, body)
			}
		})
	}
	t.Run("localhost is served", func(t *testing.T) {
		u, _ := url.Parse(s.url)
		if resp, _ := b.do(http.MethodGet, "/apply", nil, "Host", "localhost:"+u.Port()); resp.StatusCode != http.StatusOK {
			t.Errorf("GET /apply for localhost = %d", resp.StatusCode)
		}
	})
	token := b.csrf()
	for _, h := range [][]string{{"Sec-Fetch-Site", "cross-site"}, {"Origin", "http://evil.example"}} {
		t.Run("cross-origin "+h[0], func(t *testing.T) {
			resp, body := b.do(http.MethodPost, "/login", url.Values{"_csrf": {token}, "token": {"x"}}, h...)
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "another site") {
				t.Errorf("cross-origin POST /login = %d %q", resp.StatusCode, body)
			}
		})
	}
	t.Run("same-origin passes", func(t *testing.T) {
		resp, _ := b.do(http.MethodPost, "/login", url.Values{"_csrf": {token}, "token": {"x"}}, "Sec-Fetch-Site", "same-origin", "Origin", s.url)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("same-origin POST /login with a bad token = %d, want the login's own 401", resp.StatusCode)
		}
	})
}

func TestWritesNeedALogin(t *testing.T) {
	s := newSecurityEnv(t)
	b := newBrowser(t, s.url)
	token := b.csrf()
	writes := []struct {
		path string
		form url.Values
	}{
		{"/apply", url.Values{"manifest": {"kind: ClusterRole"}, "action": {"apply"}}},
		{"/apply", url.Values{"manifest": {"kind: ClusterRole"}, "action": {"dryrun"}}},
		{"/tempo", url.Values{"mode": {"step"}}},
		{"/tempo/next", url.Values{}},
		{"/demos/pod-lifecycle/run", url.Values{}},
		{"/objects/pods/default/web/delete", url.Values{}},
		{"/objects/nodes/n1/delete", url.Values{}},
	}
	for _, w := range writes {
		t.Run(w.path+" "+w.form.Get("action"), func(t *testing.T) {
			w.form.Set("_csrf", token)
			resp, body := b.do(http.MethodPost, w.path, w.form)
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "Log in to make changes") {
				t.Errorf("POST %s without a login = %d %q", w.path, resp.StatusCode, body)
			}
		})
	}
	t.Run("the login token alone is not a login to change", func(t *testing.T) {
		s.dash.cfg.LoginToken = "s3cret"
		defer func() { s.dash.cfg.LoginToken = "" }()
		resp, body := b.do(http.MethodPost, "/tempo", url.Values{"_csrf": {token}, "mode": {"step"}}, "Authorization", "Bearer s3cret")
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "Log in to make changes") {
			t.Errorf("POST /tempo with the login token = %d %q", resp.StatusCode, body)
		}
	})
	t.Run("the tempo control is disabled", func(t *testing.T) {
		_, body := b.do(http.MethodGet, "/", nil)
		if !strings.Contains(body, `data-can-change="false"`) {
			t.Error("the overview offers the tempo control without a login")
		}
	})
}

func TestLoginLinkWorksOnce(t *testing.T) {
	s := newSecurityEnv(t)
	link := s.dash.LoginLink()
	if !strings.HasPrefix(link, s.url+"/login?once=") {
		t.Fatalf("link %q", link)
	}
	st, err := os.Stat(s.linkFile)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("link file: %v %v", st, err)
	}
	if b, _ := os.ReadFile(s.linkFile); string(b) != link+"\n" {
		t.Fatalf("link file holds %q, want %q", b, link)
	}
	path := strings.TrimPrefix(link, s.url)

	b := newBrowser(t, s.url)
	resp, _ := b.do(http.MethodGet, path+"&next="+url.QueryEscape("/etcd"), nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/etcd" || b.cookie(sessionCookie) == "" {
		t.Fatalf("GET the link = %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if _, body := b.do(http.MethodGet, "/etcd", nil); !strings.Contains(body, ">kubernetes-admin<") {
		t.Error("the header does not name the admin after the link")
	}
	// Logged in, writes pass the gate (and reach the fake API).
	resp, body := b.do(http.MethodPost, "/tempo", url.Values{"_csrf": {b.csrf()}, "mode": {"step"}})
	if resp.StatusCode == http.StatusForbidden && strings.Contains(body, "Log in") {
		t.Errorf("POST /tempo after the link = %d %q", resp.StatusCode, body)
	}

	other := newBrowser(t, s.url)
	resp, body = other.do(http.MethodGet, path, nil)
	if resp.StatusCode != http.StatusUnauthorized || other.cookie(sessionCookie) != "" || !strings.Contains(body, "used already") {
		t.Fatalf("the link a second time = %d, session %q", resp.StatusCode, other.cookie(sessionCookie))
	}
	next := s.dash.LoginLink()
	if next == link {
		t.Fatal("the link was not replaced")
	}
	if b, _ := os.ReadFile(s.linkFile); string(b) != next+"\n" {
		t.Fatalf("link file holds %q, want the new link %q", b, next)
	}
	if resp, _ := other.do(http.MethodGet, "/login?once=wrong", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong code = %d", resp.StatusCode)
	}
	if resp, _ := other.do(http.MethodGet, strings.TrimPrefix(next, s.url), nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the new link = %d", resp.StatusCode)
	}
}

func TestLoginEndsWhenTheAPIRefusesItsToken(t *testing.T) {
	s := newSecurityEnv(t)
	s.setToken("alice-token", "alice")
	b := newBrowser(t, s.url)
	if resp := b.login("alice-token"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login = %d", resp.StatusCode)
	}
	key := b.cookie(sessionCookie)
	if v, ok := s.dash.sessions.get(key); !ok || v.token != "alice-token" || v.id.User != "alice" {
		t.Fatalf("session %+v %v", v, ok)
	}
	tempo := func() (int, string) {
		resp, body := b.do(http.MethodPost, "/tempo", url.Values{"_csrf": {b.csrf()}, "mode": {"step"}}, "Accept", "application/json")
		return resp.StatusCode, body
	}

	t.Run("an API error refuses the write and keeps the session", func(t *testing.T) {
		s.setAPIDown(true)
		defer s.setAPIDown(false)
		code, body := tempo()
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "Nothing was changed") {
			t.Errorf("POST /tempo while the API fails = %d %q", code, body)
		}
		if _, ok := s.dash.sessions.get(key); !ok {
			t.Error("the session ended on a transient error")
		}
	})

	t.Run("a refused token ends the session at the next write", func(t *testing.T) {
		s.setToken("alice-token", "")
		code, body := tempo()
		if code != http.StatusUnauthorized || !strings.Contains(body, "your login ended") && !strings.Contains(body, "Your login ended") {
			t.Errorf("POST /tempo after the token was revoked = %d %q", code, body)
		}
		if _, ok := s.dash.sessions.get(key); ok {
			t.Error("the session lives on")
		}
		if b.cookie(sessionCookie) != "" {
			t.Error("the session cookie was not cleared")
		}
	})

	t.Run("a refused token ends the session within a minute of reading", func(t *testing.T) {
		s.setToken("bob-token", "bob")
		if resp := b.login("bob-token"); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("login = %d", resp.StatusCode)
		}
		key := b.cookie(sessionCookie)
		s.setToken("bob-token", "")
		if resp, _ := b.do(http.MethodGet, "/etcd", nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /etcd within the minute = %d", resp.StatusCode)
		}
		v, _ := s.dash.sessions.get(key)
		v.checked = time.Now().Add(-recheckEvery)
		s.dash.sessions.mu.Lock()
		s.dash.sessions.m[key] = v
		s.dash.sessions.mu.Unlock()
		resp, _ := b.do(http.MethodGet, "/etcd", nil)
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login?ended=1") {
			t.Fatalf("GET /etcd after a minute = %d %s", resp.StatusCode, resp.Header.Get("Location"))
		}
		if _, body := b.do(http.MethodGet, resp.Header.Get("Location"), nil); !strings.Contains(body, "Your login ended") {
			t.Error("the login form does not say the login ended")
		}
	})

	t.Run("a token that names another user ends the session", func(t *testing.T) {
		s.setToken("carol-token", "carol")
		b.login("carol-token")
		s.setToken("carol-token", "mallory")
		if code, _ := tempo(); code != http.StatusUnauthorized {
			t.Errorf("POST /tempo = %d", code)
		}
	})
}
