package web

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

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

// loginProof is what the cookie carries: a digest of the token, so the
// token itself is never stored in the browser.
func loginProof(token string) string {
	sum := sha256.Sum256([]byte("glassplane-dashboard-login\x00" + token))
	return hex.EncodeToString(sum[:])
}

// requireLogin lets a request through when no login token is configured,
// when it carries the login cookie, or when it sends the token as a bearer
// token; pages redirect to /login and everything else answers 401.
//
// When the dashboard requires a login (a login token is set) or the user
// logged in with an API token, the request's context carries the viewer,
// so the page header names who the dashboard acts as and offers a logout.
func (d *Dashboard) requireLogin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		r := c.Request()
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

// loginForm serves the token form.
func (d *Dashboard) loginForm(c *echo.Context) error {
	vm := components.Login{CSRFToken: csrfToken(c), Next: safeNext(c.QueryParam("next"))}
	return render(c, http.StatusOK, components.LoginPage(d.layout("Log in", components.PageLogin, 0, 0), vm))
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
		return render(c, http.StatusUnauthorized, components.LoginPage(d.layout("Log in", components.PageLogin, 0, 0), vm))
	}
	key, err := d.sessions.add(id)
	if err != nil {
		return err
	}
	d.log.Info("dashboard login", "user", id.User, "remote", c.Request().RemoteAddr)
	c.SetCookie(&http.Cookie{
		Name: sessionCookie, Value: key, Path: "/", MaxAge: int(sessionTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.Request().TLS != nil,
	})
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

// safeNext keeps only the dashboard's own paths as a redirect target.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	return next
}
