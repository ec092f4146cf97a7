package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// errInProcessClosed is a request after the API stopped serving.
var errInProcessClosed = errors.New("the API server has stopped serving in-process requests")

// inProcess runs the API's handler for clients in the same process (see
// Server.InProcessTransport): no socket, TLS record or HTTP/2 frame between
// them, and no goroutine waiting on the network poller to be scheduled.
type inProcess struct {
	handler http.Handler
	// serving is closed when Run starts serving; ctx, set before, ends
	// with Run, and the handlers' contexts with it.
	serving chan struct{}
	ctx     context.Context
	// done is set once Run stopped taking requests; active counts the
	// handlers running.
	mu     sync.Mutex
	active sync.WaitGroup
	done   bool
}

func newInProcess(h http.Handler) *inProcess {
	return &inProcess{handler: h, serving: make(chan struct{})}
}

// start begins serving; ctx ends in-flight requests (watches) when done.
func (p *inProcess) start(ctx context.Context) {
	p.ctx = ctx
	close(p.serving)
}

// stop refuses new requests and waits up to timeout for the running
// handlers, whose contexts end with the one start was given.
func (p *inProcess) stop(timeout time.Duration) {
	p.mu.Lock()
	p.done = true
	p.mu.Unlock()
	finished := make(chan struct{})
	go func() { p.active.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(timeout):
	}
}

// enter registers a request, unless the API stopped.
func (p *inProcess) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return false
	}
	p.active.Add(1)
	return true
}

// InProcessTransport returns the round tripper through which a client in
// this process (`glassplane up` gives it to its dashboard; the components
// dial DialAPI) calls the API as the holder of cert: it runs the API's
// handler chain (authentication, authorization, admission, storage) on the
// request directly, which sees cert as its TLS client certificate, verified
// here against the client CAs as the TLS handshake verifies it. Requests
// wait until Run serves, and fail once it stopped.
func (s *Server) InProcessTransport(cert tls.Certificate) (http.RoundTripper, error) {
	if s.inProcess == nil {
		return nil, errors.New("the server has no API to call in process")
	}
	if len(cert.Certificate) == 0 {
		return nil, errors.New("no client certificate for the in-process API client")
	}
	chain := make([]*x509.Certificate, 0, len(cert.Certificate))
	for _, der := range cert.Certificate {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("failed to parse the in-process client's certificate: %w", err)
		}
		chain = append(chain, c)
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	verified, err := chain[0].Verify(x509.VerifyOptions{Roots: s.clientCAs, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return nil, fmt.Errorf("the in-process client's certificate %q is not one the API accepts: %w", chain[0].Subject.CommonName, err)
	}
	state := &tls.ConnectionState{
		Version:           tls.VersionTLS13,
		HandshakeComplete: true,
		ServerName:        s.apiLn.Addr().String(),
		PeerCertificates:  chain,
		VerifiedChains:    verified,
	}
	return &inProcessTransport{p: s.inProcess, tls: state}, nil
}

// AnonymousInProcessTransport returns the round tripper through which a
// client in this process calls the API with no client certificate: the
// request is authenticated by what it carries (a bearer token), as a TLS
// client that presents none is. The dashboard reviews login tokens
// through it.
func (s *Server) AnonymousInProcessTransport() (http.RoundTripper, error) {
	if s.inProcess == nil {
		return nil, errors.New("the server has no API to call in process")
	}
	state := &tls.ConnectionState{
		Version:           tls.VersionTLS13,
		HandshakeComplete: true,
		ServerName:        s.apiLn.Addr().String(),
	}
	return &inProcessTransport{p: s.inProcess, tls: state}, nil
}

// inProcessTransport is one identity's http.RoundTripper into inProcess.
type inProcessTransport struct {
	p   *inProcess
	tls *tls.ConnectionState
}

// inProcessPeer is the client address in-process requests carry (audit
// events' sourceIPs): the loopback address, port 0.
const inProcessPeer = "127.0.0.1:0"

// RoundTrip implements http.RoundTripper: the handler runs in a goroutine
// of its own, and the response returns once it wrote its header; the body
// streams from the handler's writes (a watch's events as it flushes them).
// Closing the body, or the request's context ending, ends the handler's
// context.
func (t *inProcessTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	closeBody := func() {
		if req.Body != nil {
			req.Body.Close()
		}
	}
	select {
	case <-t.p.serving:
	case <-req.Context().Done():
		closeBody()
		return nil, req.Context().Err()
	}
	if !t.p.enter() {
		closeBody()
		return nil, errInProcessClosed
	}
	ctx, cancel := context.WithCancel(req.Context())
	stopWithServer := context.AfterFunc(t.p.ctx, cancel)
	r := req.Clone(ctx)
	r.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	r.RequestURI = r.URL.RequestURI()
	r.Host = req.URL.Host
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.1", 1, 1
	r.RemoteAddr = inProcessPeer
	r.TLS = t.tls
	r.Close = false
	if r.Body == nil {
		r.Body = http.NoBody
	}
	pr, pw := io.Pipe()
	w := &inProcessWriter{header: http.Header{}, req: req, buf: bufio.NewWriterSize(pw, 4<<10), ready: make(chan struct{})}
	handlerDone := make(chan struct{})
	go func() {
		defer t.p.active.Done()
		defer stopWithServer()
		defer close(handlerDone)
		defer closeBody()
		defer cancel()
		err := io.EOF
		defer func() {
			if v := recover(); v != nil {
				// As net/http's server, a panic ends this request only.
				err = fmt.Errorf("the API handler panicked: %v", v)
				w.WriteHeader(http.StatusInternalServerError)
			}
			pw.CloseWithError(err)
		}()
		t.p.handler.ServeHTTP(w, r)
		w.WriteHeader(http.StatusOK) // no-op once written
		if ferr := w.buf.Flush(); ferr != nil {
			err = ferr
		}
	}()
	select {
	case <-w.ready:
	case <-handlerDone:
	}
	w.resp.Body = &inProcessBody{pr: pr, cancel: cancel}
	return w.resp, nil
}

// inProcessWriter is the handler's http.ResponseWriter: it writes through
// a buffer into the pipe the response body reads, and Flush sends what is
// buffered.
type inProcessWriter struct {
	header http.Header
	req    *http.Request
	buf    *bufio.Writer
	// resp is the response, set and ready closed by the first WriteHeader.
	resp  *http.Response
	ready chan struct{}
}

// Header implements http.ResponseWriter.
func (w *inProcessWriter) Header() http.Header { return w.header }

// WriteHeader implements http.ResponseWriter; informational codes are not
// passed on, as net/http's client does not return them either.
func (w *inProcessWriter) WriteHeader(code int) {
	if w.resp != nil || (code >= 100 && code < 200) {
		return
	}
	h := w.header.Clone()
	length := int64(-1)
	if v := h.Get("Content-Length"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			length = n
		}
	}
	if w.req.Method == http.MethodHead || code == http.StatusNoContent || code == http.StatusNotModified {
		length = 0
	}
	w.resp = &http.Response{
		Status:        strconv.Itoa(code) + " " + http.StatusText(code),
		StatusCode:    code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		ContentLength: length,
		Request:       w.req,
	}
	close(w.ready)
}

// Write implements http.ResponseWriter.
func (w *inProcessWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.buf.Write(b)
}

// Flush implements http.Flusher.
func (w *inProcessWriter) Flush() {
	w.WriteHeader(http.StatusOK)
	_ = w.buf.Flush()
}

// inProcessBody is the response body: closing it ends the handler's
// context and fails its further writes.
type inProcessBody struct {
	pr     *io.PipeReader
	cancel context.CancelFunc
}

func (b *inProcessBody) Read(p []byte) (int, error) { return b.pr.Read(p) }

func (b *inProcessBody) Close() error {
	b.cancel()
	return b.pr.CloseWithError(errBodyClosed)
}

// errBodyClosed is the handler's write after its client closed the body.
var errBodyClosed = errors.New("the in-process client closed the response body")
