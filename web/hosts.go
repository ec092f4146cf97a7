package web

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v5"
)

// loopbackNames are the host names a dashboard on loopback answers to, as
// `kubectl proxy --accept-hosts` accepts by default.
var loopbackNames = []string{"localhost", "127.0.0.1", "::1"}

// hostPolicy decides which Host headers the dashboard answers: the
// addresses it listens on, so that a page of another site whose name
// resolves to this machine (DNS rebinding) is refused.
type hostPolicy struct {
	// names are accepted host names and IP literals, lower case, without
	// brackets or port.
	names []string
	// anyInterface accepts the IP literal of any interface of this machine
	// (a dashboard listening on 0.0.0.0 or ::).
	anyInterface bool
}

// newHostPolicy builds the policy for a listen address (host:port; empty
// means loopback) plus the extra host names accept.
func newHostPolicy(listen string, accept []string) hostPolicy {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		host = listen
	}
	var p hostPolicy
	ip := net.ParseIP(host)
	switch {
	case listen != "" && host == "", ip != nil && ip.IsUnspecified():
		// The URL glassplane up prints names the wildcard address itself.
		p.anyInterface = true
		p.names = append(slices.Clone(loopbackNames), "0.0.0.0", "::")
	case listen == "", IsLoopback(listen):
		p.names = slices.Clone(loopbackNames)
	case ip != nil:
		p.names = []string{ip.String()}
	default:
		// A host name: it and the addresses it resolves to.
		p.names = []string{strings.ToLower(host)}
		if addrs, err := net.LookupHost(host); err == nil {
			p.names = append(p.names, addrs...)
		}
	}
	for _, h := range accept {
		if h = strings.ToLower(strings.Trim(strings.TrimSpace(h), "[]")); h != "" {
			p.names = append(p.names, h)
		}
	}
	return p
}

// allows reports whether a request's Host header (host or host:port) names
// this dashboard. The port is not compared: a rebinding page reaches the
// dashboard's own port, so only the name tells it apart.
func (p hostPolicy) allows(hostHeader string) bool {
	host := hostHeader
	if h, _, err := net.SplitHostPort(hostHeader); err == nil {
		host = h
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if host == "" {
		return false
	}
	if slices.Contains(p.names, host) {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil || !p.anyInterface {
		return false
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// checkHost refuses (403) requests whose Host is not one the dashboard
// listens on; see hostPolicy.
func (d *Dashboard) checkHost(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		r := c.Request()
		if d.hosts.allows(r.Host) {
			return next(c)
		}
		d.log.Debug("refused a dashboard request for another host", "host", r.Host, "remote", r.RemoteAddr)
		return c.String(http.StatusForbidden, fmt.Sprintf("This Glassplane dashboard does not answer to the host %q: open it by the address it listens on, "+
			"or start glassplane up with --web-accept-hosts naming this host.\n", r.Host))
	}
}

// checkOrigin refuses (403) state-changing requests a browser sent from
// another origin (Sec-Fetch-Site, or Origin against Host), as
// net/http.CrossOriginProtection decides. The forms' CSRF tokens are
// checked as well; the websocket checks its Origin when it is accepted.
func (d *Dashboard) checkOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	cop := http.NewCrossOriginProtection()
	return func(c *echo.Context) error {
		if err := cop.Check(c.Request()); err != nil {
			return c.String(http.StatusForbidden, "This Glassplane dashboard refuses changes sent from another site's page.\n")
		}
		return next(c)
	}
}
