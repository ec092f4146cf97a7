package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/labstack/echo/v5/middleware"
	"golang.org/x/sync/errgroup"
)

// DefaultShutdownTimeout bounds how long in-flight requests (watches end at
// once) may take when the server stops.
const DefaultShutdownTimeout = 5 * time.Second

// Config says where and how the two applications listen.
type Config struct {
	// APIListen is the API's host:port (HTTPS); empty serves no API (the
	// dashboard alone, `glassplane dashboard`).
	APIListen string
	// WebListen is the dashboard's host:port (HTTP); empty disables it.
	WebListen string
	// Certificate is the API's serving certificate.
	Certificate tls.Certificate
	// ClientCAs verifies client certificates presented to the API.
	ClientCAs *x509.CertPool
	Logger    *slog.Logger
}

// Server is the pair of Echo applications with their bound listeners.
type Server struct {
	api, web     *echo.Echo
	apiLn, webLn net.Listener
	// apiPipe is the API's in-process listener (see DialAPI); apiPipeTLS
	// is it behind the API's TLS.
	apiPipe    *pipeListener
	apiPipeTLS net.Listener
	// inProcess runs the API's handler for the dashboard in this process
	// (InProcessTransport), whose certificate clientCAs verifies.
	inProcess *inProcess
	clientCAs *x509.CertPool
	log       *slog.Logger
}

// New binds both listeners (so a busy port fails here, and port 0 gets a
// real one) and returns the applications ready for routes to be registered.
func New(cfg Config) (*Server, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	tlsCfg := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cfg.Certificate},
		ClientCAs:    cfg.ClientCAs,
		ClientAuth:   tls.VerifyClientCertIfGiven,
		NextProtos:   []string{"h2", "http/1.1"},
	}
	s := &Server{log: log, clientCAs: cfg.ClientCAs}
	var apiLn net.Listener
	if cfg.APIListen != "" {
		var err error
		if apiLn, err = net.Listen("tcp", cfg.APIListen); err != nil {
			return nil, fmt.Errorf("failed to listen on %q for the API: %w", cfg.APIListen, err)
		}
		pipe := newPipeListener(apiLn.Addr())
		s.api, s.apiLn, s.apiPipe, s.apiPipeTLS = newEcho(log), tls.NewListener(apiLn, tlsCfg), pipe, tls.NewListener(pipe, tlsCfg)
		s.inProcess = newInProcess(s.api)
	}
	if cfg.WebListen != "" {
		webLn, err := net.Listen("tcp", cfg.WebListen)
		if err != nil {
			if apiLn != nil {
				apiLn.Close()
			}
			return nil, fmt.Errorf("failed to listen on %q for the dashboard: %w", cfg.WebListen, err)
		}
		s.web = newEcho(log)
		s.webLn = webLn
		s.web.Use(middleware.GzipWithConfig(middleware.GzipConfig{Skipper: isUpgrade}))
		s.web.Use(middleware.SecureWithConfig(middleware.SecureConfig{
			XSSProtection:         "0",
			ContentTypeNosniff:    "nosniff",
			XFrameOptions:         "DENY",
			ReferrerPolicy:        "same-origin",
			ContentSecurityPolicy: "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'",
		}))
	}
	return s, nil
}

func newEcho(log *slog.Logger) *echo.Echo {
	e := echo.New()
	e.Logger = log
	e.Use(middleware.Recover())
	return e
}

// isUpgrade skips compression for websocket handshakes, which gzip breaks.
func isUpgrade(c *echo.Context) bool {
	return strings.EqualFold(c.Request().Header.Get("Upgrade"), "websocket")
}

// API returns the API application, for controlplane/apiserver to register
// on (nil without Config.APIListen).
func (s *Server) API() *echo.Echo { return s.api }

// Web returns the dashboard application (nil when disabled).
func (s *Server) Web() *echo.Echo { return s.web }

// APIURL is the API's https URL with the bound port.
func (s *Server) APIURL() string { return "https://" + s.apiLn.Addr().String() }

// WebURL is the dashboard's http URL with the bound port ("" when disabled).
func (s *Server) WebURL() string {
	if s.webLn == nil {
		return ""
	}
	return "http://" + s.webLn.Addr().String()
}

// DialAPI connects to the API in process, through a socket pair: use it as the
// dialer of clients in the same process (rest.Config.Dial), which keep the
// API's URL, so TLS verifies the serving certificate as for any client and
// the client certificate authenticates the caller. It blocks until Run
// serves, or ctx ends.
func (s *Server) DialAPI(ctx context.Context, network, addr string) (net.Conn, error) {
	return s.apiPipe.DialContext(ctx, network, addr)
}

// Run serves both applications until ctx ends, then shuts them down.
func (s *Server) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	if s.api != nil {
		s.inProcess.start(ctx)
		g.Go(func() error {
			defer s.inProcess.stop(DefaultShutdownTimeout)
			return serve(ctx, s.api, s.log, s.apiLn, s.apiPipeTLS)
		})
	}
	if s.web != nil {
		g.Go(func() error { return serve(ctx, s.web, s.log, s.webLn) })
	}
	return g.Wait()
}

// serve serves h on every listener in lns until ctx ends.
func serve(ctx context.Context, h http.Handler, log *slog.Logger, lns ...net.Listener) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    1 << 20,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	errc := make(chan error, len(lns))
	for _, ln := range lns {
		go func() {
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("failed to serve on %s: %w", ln.Addr(), err)
			}
		}()
	}
	select {
	case err := <-errc:
		srv.Close()
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), DefaultShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("failed to shut down %s: %w", lns[0].Addr(), err)
	}
	return nil
}
