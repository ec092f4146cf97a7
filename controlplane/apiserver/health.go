package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/util/sets"
)

// DefaultEtcdHealthTimeout bounds the etcd round trip of the etcd and
// etcd-readiness checks, as kube-apiserver's --etcd-healthcheck-timeout and
// --etcd-readycheck-timeout do.
const DefaultEtcdHealthTimeout = 2 * time.Second

// healthKey is the key the etcd checks read, as kube-apiserver's read
// <prefix>/health: a linearizable read answers only with a quorum.
const healthKey = "/registry/health"

// healthCheck is one named check of /healthz, /livez or /readyz.
type healthCheck struct {
	name  string
	check func(ctx context.Context) error
}

// healthEndpoints are the checks each health endpoint runs, in order, as
// kube-apiserver installs them: every check on /readyz; all but
// etcd-readiness, informer-sync and shutdown on /healthz and /livez.
type healthEndpoints struct {
	readyz, livez, healthz []healthCheck
}

// postStartHook is one step of Bootstrap, named as the kube-apiserver hook
// that does the same; its check fails until the step is done.
type postStartHook struct {
	name string
	done chan struct{}
}

func newPostStartHook(name string) *postStartHook {
	return &postStartHook{name: "poststarthook/" + name, done: make(chan struct{})}
}

func (h *postStartHook) finish() {
	select {
	case <-h.done:
	default:
		close(h.done)
	}
}

func (h *postStartHook) check(context.Context) error {
	select {
	case <-h.done:
		return nil
	default:
		return errors.New("not finished")
	}
}

// etcdProbe is kube-apiserver's etcd health check: a linearizable read with
// a timeout, at most one every half timeout; a check in between answers
// the last read's error.
type etcdProbe struct {
	get     func(ctx context.Context) error
	timeout time.Duration
	limiter *rate.Limiter
	// mu guards last.
	mu   sync.Mutex
	last error
}

func newEtcdProbe(get func(ctx context.Context) error, timeout time.Duration) *etcdProbe {
	return &etcdProbe{
		get: get, timeout: timeout,
		limiter: rate.NewLimiter(rate.Every(timeout/2), 1),
		last:    errors.New("etcd client connection not yet established"),
	}
}

func (p *etcdProbe) check(ctx context.Context) error {
	if !p.limiter.Allow() {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.last
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	err := p.get(ctx)
	if err != nil {
		err = fmt.Errorf("error getting data from etcd: %w", err)
	}
	p.mu.Lock()
	p.last = err
	p.mu.Unlock()
	return err
}

// newHealthEndpoints builds the checks. etcd and etcd-readiness probe the
// store's etcd each with its own rate limit, as kube-apiserver's do.
func (s *Server) newHealthEndpoints() healthEndpoints {
	get := func(ctx context.Context) error {
		_, err := s.store.Client().Get(ctx, healthKey)
		return err
	}
	etcd := newEtcdProbe(get, DefaultEtcdHealthTimeout)
	readiness := newEtcdProbe(get, DefaultEtcdHealthTimeout)
	common := []healthCheck{
		{"ping", func(context.Context) error { return nil }},
		// slog writes synchronously: there is no flush that could block.
		{"log", func(context.Context) error { return nil }},
		{"etcd", etcd.check},
	}
	var hooks []healthCheck
	for _, h := range s.hooks {
		hooks = append(hooks, healthCheck{h.name, h.check})
	}
	var e healthEndpoints
	e.healthz = append(append([]healthCheck{}, common...), hooks...)
	e.livez = append(append([]healthCheck{}, common...), hooks...)
	e.readyz = append(append([]healthCheck{}, common...), healthCheck{"etcd-readiness", readiness.check})
	if s.rbacCache != nil {
		e.readyz = append(e.readyz, healthCheck{"informer-sync", func(context.Context) error {
			select {
			case <-s.rbacCache.Ready():
				return nil
			default:
				return errors.New("the RBAC cache has not synced yet")
			}
		}})
	}
	e.readyz = append(e.readyz, hooks...)
	e.readyz = append(e.readyz, healthCheck{"shutdown", func(context.Context) error {
		select {
		case <-s.shuttingDown:
			return errors.New("process is shutting down")
		default:
			return nil
		}
	}})
	return e
}

// serveHealth answers /healthz, /livez, /readyz and their checks by name,
// in kube-apiserver's text format. endpoint is the path's first segment.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request, endpoint string) {
	var checks []healthCheck
	switch endpoint {
	case "readyz":
		checks = s.health.readyz
	case "livez":
		checks = s.health.livez
	default:
		checks = s.health.healthz
	}
	rest, sub := strings.CutPrefix(strings.TrimPrefix(r.URL.Path, "/"+endpoint), "/")
	switch {
	case !sub && rest == "":
		s.serveHealthChecks(w, r, endpoint, checks)
		return
	case sub:
		for _, c := range checks {
			if c.name == rest {
				if err := c.check(r.Context()); err != nil {
					http.Error(w, fmt.Sprintf("internal server error: %v", err), http.StatusInternalServerError)
					return
				}
				fmt.Fprint(w, "ok")
				return
			}
		}
	}
	writeStatus(w, errNoRoute())
}

// serveHealthChecks runs checks (but those ?exclude names) and answers as
// kube-apiserver's healthz handler: "ok", each check's line with ?verbose,
// and every line with a 500 when a check fails. Reasons are withheld, as
// the endpoint is public; they go to the log.
func (s *Server) serveHealthChecks(w http.ResponseWriter, r *http.Request, endpoint string, checks []healthCheck) {
	excluded := sets.New(r.URL.Query()["exclude"]...)
	var out, reasons bytes.Buffer
	var failed []string
	for _, c := range checks {
		if excluded.Has(c.name) {
			excluded.Delete(c.name)
			fmt.Fprintf(&out, "[+]%s excluded: ok\n", c.name)
			continue
		}
		if err := c.check(r.Context()); err != nil {
			fmt.Fprintf(&out, "[-]%s failed: reason withheld\n", c.name)
			fmt.Fprintf(&reasons, "[-]%s failed: %v\n", c.name, err)
			failed = append(failed, c.name)
			continue
		}
		fmt.Fprintf(&out, "[+]%s ok\n", c.name)
	}
	if excluded.Len() > 0 {
		quoted := make([]string, 0, excluded.Len())
		for _, name := range sets.List(excluded) {
			quoted = append(quoted, fmt.Sprintf("%q", name))
		}
		fmt.Fprintf(&out, "warn: some health checks cannot be excluded: no matches for %s\n", strings.Join(quoted, ","))
	}
	if len(failed) > 0 {
		s.log.Debug("health check failed", "endpoint", endpoint, "checks", strings.Join(failed, ","), "reasons", reasons.String())
		http.Error(w, fmt.Sprintf("%s%s check failed", out.String(), endpoint), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if _, verbose := r.URL.Query()["verbose"]; !verbose {
		fmt.Fprint(w, "ok")
		return
	}
	out.WriteTo(w)
	fmt.Fprintf(w, "%s check passed\n", endpoint)
}

// writeStatus writes err as a metav1.Status outside the request pipeline.
func writeStatus(w http.ResponseWriter, err error) {
	st := toStatus(err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_ = json.NewEncoder(w).Encode(st)
}
