package web

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/glassplane/glassplane/components"
)

// loginCookie holds proof of the login token in the browser.
const loginCookie = "glassplane_login"

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
func (d *Dashboard) requireLogin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		if d.cfg.LoginToken == "" || d.loggedIn(c.Request()) {
			return next(c)
		}
		r := c.Request()
		if r.Method == http.MethodGet && r.URL.Path != "/ws" && !strings.HasPrefix(r.URL.Path, "/static/") {
			return c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(r.URL.RequestURI()))
		}
		return echo.NewHTTPError(http.StatusUnauthorized, "log in to the dashboard first")
	}
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

// loginSubmit checks the token and sets the login cookie.
func (d *Dashboard) loginSubmit(c *echo.Context) error {
	next := safeNext(c.FormValue("next"))
	token := c.FormValue("token")
	if d.cfg.LoginToken == "" {
		return c.Redirect(http.StatusSeeOther, next)
	}
	if subtle.ConstantTimeCompare([]byte(loginProof(token)), []byte(loginProof(d.cfg.LoginToken))) != 1 {
		d.log.Info("dashboard login refused", "remote", c.Request().RemoteAddr)
		vm := components.Login{CSRFToken: csrfToken(c), Next: next, Error: "That token is not the dashboard's login token."}
		return render(c, http.StatusUnauthorized, components.LoginPage(d.layout("Log in", components.PageLogin, 0, 0), vm))
	}
	c.SetCookie(&http.Cookie{
		Name: loginCookie, Value: loginProof(d.cfg.LoginToken), Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.Request().TLS != nil,
	})
	return c.Redirect(http.StatusSeeOther, next)
}

// safeNext keeps only the dashboard's own paths as a redirect target.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	return next
}
