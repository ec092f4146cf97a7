package web

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/labstack/echo/v5"

	"github.com/glassplane/glassplane/components"
)

// loginCookie holds proof of the login token in the browser.
const loginCookie = "glassplane_login"

// csrfCookie is the CSRF middleware's cookie (see Register): it holds the
// token the dashboard's forms must send back.
const csrfCookie = "glassplane_csrf"

// IsLoopback reports whether a listen address (host:port) only accepts
// connections from this machine. A dashboard listening anywhere else must
// have Config.LoginToken set.
func IsLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		host = listen
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// renderLogin serves the login form; it mentions the dashboard's own login
// token only where there is one to mention, beyond loopback.
func (d *Dashboard) renderLogin(c *echo.Context, status int, vm components.Login) error {
	vm.Remote = d.cfg.Listen != "" && !IsLoopback(d.cfg.Listen)
	return render(c, status, components.LoginPage(d.layout("Log in", components.PageLogin, 0, 0), vm))
}

// loginProof is what the cookie carries: a digest of the token, so the
// token itself is never stored in the browser.
func loginProof(token string) string {
	sum := sha256.Sum256([]byte("glassplane-dashboard-login\x00" + token))
	return hex.EncodeToString(sum[:])
}

// requireLogin lets a request through when no login token is configured,
// when it carries the login cookie, when it sends the token as a bearer
// token, or when it belongs to a logged-in user; pages redirect to /login
// and everything else answers 401.
//
// A session of a user who logged in with an API token is checked again
// with the API server once a minute (see recheck): when the API server no
// longer accepts the token the session ends and pages go to /login.
//
// When the dashboard requires a login (a login token is set) or a user
// logged in, the request's context carries the viewer, so the page header
// names who the dashboard acts as and offers a logout.
func (d *Dashboard) requireLogin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		r := c.Request()
		if key, v, ok := d.sessionOf(r); ok && v.token != "" && time.Since(v.checked) >= recheckEvery {
			if err := d.recheck(r.Context(), key, v); errors.Is(err, errLoginEnded) {
				d.endSession(c, key)
				if r.Method == http.MethodGet && r.URL.Path != "/ws" {
					return c.Redirect(http.StatusSeeOther, "/login?ended=1&next="+url.QueryEscape(r.URL.RequestURI()))
				}
				return echo.NewHTTPError(http.StatusUnauthorized, msgLoginEnded)
			}
		}
		u := d.userOf(r)
		if d.cfg.LoginToken == "" || u != nil || d.loggedIn(r) {
			if d.cfg.LoginToken != "" || u != nil {
				c.SetRequest(r.WithContext(components.WithViewer(r.Context(), d.viewer(r, u))))
			}
			return next(c)
		}
		if r.Method == http.MethodGet && r.URL.Path != "/ws" && !strings.HasPrefix(r.URL.Path, "/static/") {
			return c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(r.URL.RequestURI()))
		}
		return echo.NewHTTPError(http.StatusUnauthorized, "log in to the dashboard first")
	}
}

// viewer describes who the request acts as: the logged-in API user u, or
// the dashboard's own identity. The logout form's CSRF token is the
// CSRF cookie's, which is the token the CSRF middleware checks.
func (d *Dashboard) viewer(r *http.Request, u *identity) components.Viewer {
	v := components.Viewer{User: d.actingAs(r)}
	if u != nil {
		v.Groups = u.Groups
	}
	if ck, err := r.Cookie(csrfCookie); err == nil {
		v.CSRFToken = ck.Value
	}
	return v
}

func (d *Dashboard) loggedIn(r *http.Request) bool {
	want := []byte(loginProof(d.cfg.LoginToken))
	if ck, err := r.Cookie(loginCookie); err == nil && subtle.ConstantTimeCompare([]byte(ck.Value), want) == 1 {
		return true
	}
	if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return subtle.ConstantTimeCompare([]byte(loginProof(bearer)), want) == 1
	}
	return false
}

// loginForm serves the token form, or logs the browser in by the one-time
// link (?once=<code>, see adminLink) and goes on to next.
func (d *Dashboard) loginForm(c *echo.Context) error {
	vm := components.Login{CSRFToken: csrfToken(c), Next: safeNext(c.QueryParam("next"))}
	if once := c.QueryParam("once"); once != "" {
		return d.loginByLink(c, once, vm)
	}
	if c.QueryParam("ended") != "" {
		vm.Error = msgLoginEnded
	}
	return d.renderLogin(c, http.StatusOK, vm)
}

// loginByLink logs the browser in as the cluster admin when code is the
// current one-time link's; the link is then used up and a new one written.
func (d *Dashboard) loginByLink(c *echo.Context, code string, vm components.Login) error {
	if d.link == nil || !d.link.consume(code, d.log) {
		d.log.Info("dashboard login by link refused", "remote", c.Request().RemoteAddr)
		vm.Error = "This login link was used already or is not the current one. " + d.linkHint()
		return d.renderLogin(c, http.StatusUnauthorized, vm)
	}
	id := identity{User: d.cfg.LinkUser, Groups: slices.Clone(d.cfg.LinkGroups)}
	if err := d.startSession(c, id, ""); err != nil {
		return err
	}
	d.log.Info("dashboard login by one-time link", "user", id.User, "remote", c.Request().RemoteAddr)
	return c.Redirect(http.StatusSeeOther, vm.Next)
}

// startSession starts a session for id (logged in with token, empty for a
// one-time link) and sets its cookie.
func (d *Dashboard) startSession(c *echo.Context, id identity, token string) error {
	key, err := d.sessions.add(id, token)
	if err != nil {
		return err
	}
	c.SetCookie(&http.Cookie{
		Name: sessionCookie, Value: key, Path: "/", MaxAge: int(sessionTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.Request().TLS != nil,
	})
	return nil
}

// endSession forgets the session key and its cookie.
func (d *Dashboard) endSession(c *echo.Context, key string) {
	d.sessions.remove(key)
	c.SetCookie(&http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
}

// loginSubmit checks the token and sets the login cookie. The token is
// either the dashboard's login token (the dashboard then acts with its own
// identity) or a bearer token the API server accepts, such as one from
// --token-auth-file or `kubectl create token`: the dashboard asks the API
// server whose it is (SelfSubjectReview) and from then on acts as that
// user, impersonating them, so RBAC decides every write as for them.
func (d *Dashboard) loginSubmit(c *echo.Context) error {
	next := safeNext(c.FormValue("next"))
	token := c.FormValue("token")
	if d.cfg.LoginToken == "" && token == "" {
		return c.Redirect(http.StatusSeeOther, next)
	}
	if d.cfg.LoginToken != "" && subtle.ConstantTimeCompare([]byte(loginProof(token)), []byte(loginProof(d.cfg.LoginToken))) == 1 {
		c.SetCookie(&http.Cookie{
			Name: loginCookie, Value: loginProof(d.cfg.LoginToken), Path: "/",
			HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.Request().TLS != nil,
		})
		return c.Redirect(http.StatusSeeOther, next)
	}
	id, err := d.reviewToken(c.Request().Context(), token)
	if err != nil {
		d.log.Info("dashboard login refused", "remote", c.Request().RemoteAddr, "err", err)
		vm := components.Login{CSRFToken: csrfToken(c), Next: next, Error: "Neither the dashboard's login token nor a token the API server accepts."}
		return d.renderLogin(c, http.StatusUnauthorized, vm)
	}
	if err := d.startSession(c, id, token); err != nil {
		return err
	}
	d.log.Info("dashboard login", "user", id.User, "remote", c.Request().RemoteAddr)
	return c.Redirect(http.StatusSeeOther, next)
}

// logout ends the user's session and forgets the login cookie.
func (d *Dashboard) logout(c *echo.Context) error {
	if ck, err := c.Request().Cookie(sessionCookie); err == nil {
		d.sessions.remove(ck.Value)
	}
	for _, name := range []string{sessionCookie, loginCookie} {
		c.SetCookie(&http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	}
	return c.Redirect(http.StatusSeeOther, "/login")
}

// safeNext keeps only the dashboard's own paths as a redirect target: an
// absolute path with no scheme, host, backslash, whitespace or control
// character (browsers drop tabs and newlines from URLs, so "/\t/evil" would
// lead off-site), and no "//" at its start.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") {
		return "/"
	}
	for _, r := range next {
		if r == '\\' || unicode.IsSpace(r) || unicode.IsControl(r) {
			return "/"
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || strings.HasPrefix(u.Path, "//") {
		return "/"
	}
	return next
}
