package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/glassplane/glassplane/controlplane/pki"
)

// inProcessServer is a Server with an API on a free loopback port, serving
// routes, and the CA whose certificates it accepts.
func inProcessServer(t *testing.T, routes func(e *echo.Echo)) (*Server, *pki.CA) {
	t.Helper()
	ca, err := pki.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.Serving("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{APIListen: "127.0.0.1:0", Certificate: serving, ClientCAs: ca.Pool()})
	if err != nil {
		t.Fatal(err)
	}
	routes(s.API())
	return s, ca
}

// run serves s until the returned stop, which returns Run's error.
func run(t *testing.T, s *Server) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	return func() error { cancel(); return <-done }
}

func clientCert(t *testing.T, ca *pki.CA, user string, groups ...string) tls.Certificate {
	t.Helper()
	certPEM, keyPEM, err := ca.Client(user, groups...)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestInProcessTransportCarriesTheVerifiedCertificate(t *testing.T) {
	s, ca := inProcessServer(t, func(e *echo.Echo) {
		e.POST("/whoami", func(c *echo.Context) error {
			r := c.Request()
			body, _ := io.ReadAll(r.Body)
			leaf := r.TLS.VerifiedChains[0][0]
			c.Response().Header().Set("X-Groups", strings.Join(leaf.Subject.Organization, ","))
			return c.String(http.StatusCreated, fmt.Sprintf("%s %s %s %s %s", leaf.Subject.CommonName, r.Method, r.URL.RequestURI(), r.RemoteAddr, body))
		})
	})
	stop := run(t, s)
	defer stop()
	rt, err := s.InProcessTransport(clientCert(t, ca, "system:node:n1", "system:nodes"))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, s.APIURL()+"/whoami?x=1", strings.NewReader("hello"))
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("X-Groups") != "system:nodes" {
		t.Errorf("status %d, groups %q", resp.StatusCode, resp.Header.Get("X-Groups"))
	}
	if want := "system:node:n1 POST /whoami?x=1 127.0.0.1:0 hello"; string(body) != want {
		t.Errorf("body %q, want %q", body, want)
	}
}

// The anonymous transport presents no certificate: the request carries
// only what its client sets, such as a bearer token.
func TestAnonymousInProcessTransportHasNoCertificate(t *testing.T) {
	s, _ := inProcessServer(t, func(e *echo.Echo) {
		e.GET("/whoami", func(c *echo.Context) error {
			r := c.Request()
			if r.TLS == nil || len(r.TLS.PeerCertificates) != 0 || len(r.TLS.VerifiedChains) != 0 {
				return c.String(http.StatusInternalServerError, fmt.Sprintf("TLS state %+v", r.TLS))
			}
			return c.String(http.StatusOK, r.Header.Get("Authorization"))
		})
	})
	stop := run(t, s)
	defer stop()
	rt, err := s.AnonymousInProcessTransport()
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, s.APIURL()+"/whoami", nil)
	req.Header.Set("Authorization", "Bearer abc")
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != "Bearer abc" {
		t.Errorf("status %d, body %q; want 200 and the bearer token alone", resp.StatusCode, body)
	}
}

func TestInProcessTransportRefusesForeignCertificates(t *testing.T) {
	s, _ := inProcessServer(t, func(*echo.Echo) {})
	other, err := pki.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.InProcessTransport(clientCert(t, other, "mallory")); err == nil || !strings.Contains(err.Error(), "mallory") {
		t.Errorf("a certificate of another CA: %v, want an error naming it", err)
	}
	if _, err := s.InProcessTransport(tls.Certificate{}); err == nil {
		t.Error("no certificate: no error")
	}
}

// A watch-like response streams what the handler flushes, before it ends;
// closing the body ends the handler's context.
func TestInProcessTransportStreamsAndCancels(t *testing.T) {
	ended := make(chan error, 1)
	s, ca := inProcessServer(t, func(e *echo.Echo) {
		e.GET("/watch", func(c *echo.Context) error {
			w := c.Response()
			for i := 0; ; i++ {
				if _, err := fmt.Fprintf(w, "event %d\n", i); err != nil {
					ended <- err
					return nil
				}
				http.NewResponseController(w).Flush()
				select {
				case <-c.Request().Context().Done():
					ended <- c.Request().Context().Err()
					return nil
				case <-time.After(time.Millisecond):
				}
			}
		})
	})
	stop := run(t, s)
	defer stop()
	rt, err := s.InProcessTransport(clientCert(t, ca, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, s.APIURL()+"/watch", nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(resp.Body)
	for i := range 3 {
		if !lines.Scan() || lines.Text() != fmt.Sprintf("event %d", i) {
			t.Fatalf("line %d: %q, %v", i, lines.Text(), lines.Err())
		}
	}
	resp.Body.Close()
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) && !errors.Is(err, errBodyClosed) {
			t.Errorf("the handler ended with %v, want its context canceled or its write refused", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler went on after the body closed")
	}
}

// Stopping the server ends in-process watches with it, and later requests
// fail instead of hanging.
func TestInProcessTransportEndsWithTheServer(t *testing.T) {
	started := make(chan struct{})
	s, ca := inProcessServer(t, func(e *echo.Echo) {
		e.GET("/watch", func(c *echo.Context) error {
			c.Response().WriteHeader(http.StatusOK)
			http.NewResponseController(c.Response()).Flush()
			close(started)
			<-c.Request().Context().Done()
			return nil
		})
	})
	rt, err := s.InProcessTransport(clientCert(t, ca, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	// Before Run, a request waits for it (here: until its context ends).
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.APIURL()+"/watch", nil)
	if _, err := rt.RoundTrip(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("before Run: %v, want the request's deadline", err)
	}
	stop := run(t, s)
	req, _ = http.NewRequest(http.MethodGet, s.APIURL()+"/watch", nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-started
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Errorf("the watch's body after the server stopped: %v, want its end", err)
	}
	req, _ = http.NewRequest(http.MethodGet, s.APIURL()+"/watch", nil)
	if _, err := rt.RoundTrip(req); !errors.Is(err, errInProcessClosed) {
		t.Errorf("after the server stopped: %v, want %v", err, errInProcessClosed)
	}
}

// A handler that panics fails its own request, not the process.
func TestInProcessTransportSurvivesAPanic(t *testing.T) {
	s, ca := inProcessServer(t, func(e *echo.Echo) {
		e.GET("/panic", func(c *echo.Context) error { panic("boom") })
	})
	stop := run(t, s)
	defer stop()
	rt, err := s.InProcessTransport(clientCert(t, ca, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, s.APIURL()+"/panic", nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("status %d, want 500", resp.StatusCode)
	}
}
