package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/glassplane/glassplane/web/source"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v5"
	"github.com/labstack/echo/v5/middleware"
	"k8s.io/client-go/rest"

	"github.com/glassplane/glassplane/components"
	"github.com/glassplane/glassplane/static"
)

// errNoAPI is the answer of anything that writes when the dashboard has no
// API connection.
var errNoAPI = errors.New("the dashboard has no connection to the API server")

// csrfField is the form field (and context key) of the apply form's token.
const csrfField = "_csrf"

// Config is what the dashboard reads from and writes through.
type Config struct {
	// Store is the cluster's objects by etcd key, which the pages and the
	// websocket read (web/source/kube reads them through the API).
	Store source.Store
	// Etcd is the key explorer's raw view of the cluster's etcd; nil when
	// the dashboard cannot read it (the explorer says so).
	Etcd source.Etcd
	// Audit holds the audit events the dashboard was given (watched from
	// the auditevents API or received as the API server's audit webhook);
	// nil shows no requests.
	Audit *source.AuditLog
	// RESTConfig is the dashboard's identity at the API server, used by the
	// apply form; nil disables applying.
	RESTConfig *rest.Config
	// AnonymousRESTConfig reaches the same API server with no identity of
	// its own: login tokens are reviewed through it, sent alone. Nil:
	// rest.AnonymousClientConfig of RESTConfig (which keeps its server,
	// CA and dialer); `glassplane up` gives its in-process transport.
	AnonymousRESTConfig *rest.Config
	Logger              *slog.Logger
	// Mode is the node runtime shown in the header: "containerd" or "simulated".
	Mode string
	// LoginToken, when set, is asked for at /login before any page, the
	// websocket or the apply form is served (a browser keeps a digest of it
	// in a cookie; scripts may send it as a bearer token). It must be set
	// whenever the dashboard listens beyond loopback (see IsLoopback).
	// Logging in with it shows the cluster; changing it takes a user's login.
	LoginToken string
	// Listen is the dashboard's listen address (host:port; empty means
	// loopback). Requests whose Host header names anything else are
	// refused, so that another site's page cannot reach the dashboard
	// through a name resolving to this machine (DNS rebinding).
	Listen string
	// AcceptHosts are more host names the dashboard answers to, such as a
	// DNS name in front of it.
	AcceptHosts []string
	// LinkUser and LinkGroups are who a browser logs in as by opening the
	// one-time link (see LoginLink): the cluster admin. Empty disables links.
	LinkUser   string
	LinkGroups []string
	// LinkFile receives the current link (0600) each time a new one is made.
	LinkFile string
	// URL is the dashboard's URL, which links start with.
	URL string
}

// Dashboard serves the pages and runs the websocket hub.
type Dashboard struct {
	cfg      Config
	log      *slog.Logger
	hub      *hub
	applier  *applier
	sessions *sessions
	hosts    hostPolicy
	// link is the one-time admin login link; nil without Config.LinkUser.
	link     *adminLink
	demoRuns demoRuns
	// access decides what logged-in users may read.
	access *access
	// api is the typed client a page reads the API with as its user
	// (clientFor).
	api apiClient
	// kindsKnown is closed once Run has read the API's resources into
	// the kind table the first time (never without Config.RESTConfig).
	kindsKnown chan struct{}
}

// New returns a dashboard over cfg. Run must be running for the websocket to
// stream.
func New(cfg Config) (*Dashboard, error) {
	if cfg.Store == nil {
		return nil, errors.New("web: a store is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RESTConfig != nil {
		cfg.RESTConfig = rest.CopyConfig(cfg.RESTConfig)
		// client-go's default of 5 requests a second would take minutes
		// over a manifest of a thousand documents (two requests each).
		cfg.RESTConfig.UserAgent = UserAgent
		if cfg.RESTConfig.QPS == 0 {
			cfg.RESTConfig.QPS, cfg.RESTConfig.Burst = applyQPS, 2*applyQPS
		}
	}
	d := &Dashboard{cfg: cfg, log: cfg.Logger, sessions: newSessions(), hosts: newHostPolicy(cfg.Listen, cfg.AcceptHosts), kindsKnown: make(chan struct{})}
	d.api = d.clientFor
	if cfg.LinkUser != "" {
		l, err := newAdminLink(cfg.URL, cfg.LinkFile)
		if err != nil {
			return nil, err
		}
		d.link = l
	}
	d.hub = newHub(cfg.Store, cfg.Audit, cfg.Logger)
	d.access = newAccess(noAPIReviewer{})
	if cfg.RESTConfig != nil {
		r, err := newSARReviewer(cfg.RESTConfig)
		if err != nil {
			return nil, err
		}
		d.access = newAccess(r)
		a, err := newAPIApplier(cfg.RESTConfig)
		if err != nil {
			return nil, err
		}
		a.as = d.dynamicFor
		d.applier = a
	}
	return d, nil
}

// Register adds every dashboard route to e: the pages, the websocket at /ws
// and the embedded assets under /static/. Every request must name the
// dashboard in its Host header, and every change must come from the
// dashboard's own pages (see checkHost, checkOrigin). A browser's page
// request that fails gets a page, not JSON (see errorPage). With a login token,
// everything but /login and /static/ requires it; every change requires a
// logged-in user (see requireWriter).
func (d *Dashboard) Register(e *echo.Echo) {
	e.HTTPErrorHandler = d.errorPage(e.HTTPErrorHandler)
	e.Pre(d.checkHost, d.checkOrigin)
	csrf := middleware.CSRFWithConfig(middleware.CSRFConfig{
		TokenLookup:    "form:" + csrfField,
		ContextKey:     csrfField,
		CookieName:     csrfCookie,
		CookiePath:     "/",
		CookieHTTPOnly: true,
		CookieSameSite: http.SameSiteStrictMode,
	})
	small := middleware.BodyLimit(64 << 10)
	writeJSON := d.requireWriter(refuseJSON)
	writeForm := d.requireWriter(d.refuseWithLogin)
	e.GET("/login", d.loginForm, csrf)
	e.POST("/login", d.loginSubmit, small, csrf)
	e.POST("/logout", d.logout, small, csrf)
	e.StaticFS("/static/", static.FS)
	g := e.Group("", d.requireLogin)
	g.GET("/", d.overview, csrf)
	g.POST("/tempo", d.tempoSet, small, csrf, writeJSON)
	g.POST("/tempo/next", d.tempoNext, small, csrf, writeJSON)
	g.GET("/apply", d.applyForm, csrf)
	g.POST("/apply", d.applySubmit, middleware.BodyLimit(2*maxManifestBytes), csrf, d.requireWriter(d.refuseApply))
	g.GET("/objects/:resource/:name", d.object, csrf)
	g.GET("/objects/:resource/:namespace/:name", d.object, csrf)
	g.POST("/objects/:resource/:name/delete", d.objectDelete, small, csrf, writeForm)
	g.POST("/objects/:resource/:namespace/:name/delete", d.objectDelete, small, csrf, writeForm)
	g.GET("/objects/:resource", d.resourceList)
	g.GET("/crds", d.crdsPage)
	g.GET("/crds/:name", d.crdPage)
	g.GET("/etcd", d.etcd)
	g.GET("/requests", d.requests)
	g.GET("/events", d.events)
	g.GET("/nodes", d.nodes)
	g.GET("/scheduler/:namespace/:name", d.scheduler)
	g.GET("/demos", d.demosPage, csrf)
	g.POST("/demos/:name/run", d.demoStart, small, csrf, writeJSON)
	g.GET("/demos/runs/:id", d.demoRunJSON)
	g.GET("/ws", d.serveWS)
}

// Run runs the websocket hub: one storage watch and one audit subscription
// fanned out to every connected page; with an API connection it also
// follows discovery and the CRDs for the kinds it maps (kinds.go). It
// blocks until ctx ends.
func (d *Dashboard) Run(ctx context.Context) error {
	if d.cfg.RESTConfig != nil {
		// The kind ↔ resource table follows discovery and the CRDs
		// (kinds.go); until it first answers (kindsKnown), etcd keys map
		// to resources by the built-ins' names only, and a resource's
		// list page does not know the resource yet. Run returns after it
		// stopped, so that a stopped dashboard no longer writes the table.
		done := make(chan struct{})
		defer func() { <-done }()
		go func() {
			defer close(done)
			if err := runKinds(ctx, d.restConfigFor(nil), d.log, d.kindsKnown); err != nil {
				d.log.Error("dashboard stopped following discovery", "err", err)
			}
		}()
	}
	return d.hub.run(ctx)
}

// auditSeq returns the newest audit sequence number kept; a page reads it
// before its data so that its websocket resumes without a gap.
func (d *Dashboard) auditSeq() int64 {
	if d.cfg.Audit == nil {
		return 0
	}
	return d.cfg.Audit.Last()
}

// layout returns the shared page data for a page read at etcd revision rev
// and audit sequence seq.
func (d *Dashboard) layout(title string, page components.Page, rev, seq int64) components.Layout {
	return components.Layout{Title: title, Page: page, Mode: d.cfg.Mode, Revision: rev, AuditSeq: seq}
}

// render writes a templ component as the response.
func render(c *echo.Context, status int, comp templ.Component) error {
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	c.Response().WriteHeader(status)
	if err := comp.Render(c.Request().Context(), c.Response()); err != nil {
		return fmt.Errorf("failed to render page: %w", err)
	}
	return nil
}
