package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/glassplane/glassplane/components"
)

// errorPage wraps the dashboard's HTTP error handler: a browser's page
// request (Accept: text/html) that fails gets a page in the dashboard's
// style, with the status and, for a client error, the handler's message;
// everything else (the websocket, the JSON endpoints, scripts and styles)
// gets next's answer. A server error's wording stays in the log.
func (d *Dashboard) errorPage(next echo.HTTPErrorHandler) echo.HTTPErrorHandler {
	return func(c *echo.Context, err error) {
		if r, _ := echo.UnwrapResponse(c.Response()); r != nil && r.Committed {
			return
		}
		req := c.Request()
		if !wantsPage(req) {
			next(c, err)
			return
		}
		vm := components.HTTPError{Status: http.StatusInternalServerError, Path: req.URL.Path}
		var sc echo.HTTPStatusCoder
		if errors.As(err, &sc) && sc.StatusCode() != 0 {
			vm.Status = sc.StatusCode()
		}
		vm.Title = http.StatusText(vm.Status)
		var he *echo.HTTPError
		switch {
		case vm.Status == http.StatusNotFound:
			vm.Message, vm.MessageKey = "The dashboard has no page at this address.", "error.not-found"
		case vm.Status >= 500:
			d.log.Error("dashboard page failed", "path", req.URL.Path, "status", vm.Status, "err", err)
			vm.Message, vm.MessageKey = "The dashboard could not serve this page; its log says why.", "error.server"
		case errors.As(err, &he) && he.Message != "":
			vm.Message = he.Message
		default:
			vm.Message, vm.MessageKey = "The dashboard could not serve this request.", "error.request"
		}
		if rerr := render(c, vm.Status, components.ErrorPage(d.layout(vm.Title, components.PageError, 0, 0), vm)); rerr != nil {
			d.log.Warn("failed to send an error page", "path", req.URL.Path, "err", rerr)
		}
	}
}

// wantsPage reports whether a request is a browser's page request: one
// that accepts HTML and is not the websocket.
func wantsPage(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		return false
	}
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") || r.URL.Path == "/ws" {
		return false
	}
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}
