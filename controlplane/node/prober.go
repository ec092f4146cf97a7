package node

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/glassplane/glassplane/controlplane/kubeversion"
	"github.com/glassplane/glassplane/controlplane/node/runtime"
)

// probeType names a probe the way kubelet's events do.
type probeType string

const (
	probeStartup   probeType = "Startup"
	probeLiveness  probeType = "Liveness"
	probeReadiness probeType = "Readiness"
)

// Kubernetes' probe defaults (SetDefaults_Probe), applied when the API
// server did not.
const (
	defaultProbePeriod           = 10 * time.Second
	defaultProbeTimeout          = 1 * time.Second
	defaultProbeSuccessThreshold = 1
	defaultProbeFailureThreshold = 3
	// probeUserAgent is what kubelet's HTTP probes send.
	probeUserAgent = "kube-probe/" + kubeversion.Major + "." + kubeversion.Minor
	// maxProbeOutput bounds the probe output kept for an event message.
	maxProbeOutput = 10 * 1024
)

// probeSpec is one probe with Kubernetes' defaults filled in.
type probeSpec struct {
	kind             probeType
	probe            *corev1.Probe
	initialDelay     time.Duration
	period, timeout  time.Duration
	success, failure int
}

func newProbeSpec(kind probeType, p *corev1.Probe) *probeSpec {
	if p == nil {
		return nil
	}
	s := &probeSpec{
		kind:         kind,
		probe:        p,
		initialDelay: time.Duration(p.InitialDelaySeconds) * time.Second,
		period:       time.Duration(p.PeriodSeconds) * time.Second,
		timeout:      time.Duration(p.TimeoutSeconds) * time.Second,
		success:      int(p.SuccessThreshold),
		failure:      int(p.FailureThreshold),
	}
	if s.period <= 0 {
		s.period = defaultProbePeriod
	}
	if s.timeout <= 0 {
		s.timeout = defaultProbeTimeout
	}
	if s.success <= 0 {
		s.success = defaultProbeSuccessThreshold
	}
	if s.failure <= 0 {
		s.failure = defaultProbeFailureThreshold
	}
	return s
}

// probeCounter applies a probe's success and failure thresholds to its
// results, as kubelet's probe worker does: the reported result changes only
// after threshold consecutive results the other way.
type probeCounter struct {
	success, failure int
	// reported is the result the container is judged by; while unknown
	// (a startup probe's start) neither result is reported yet.
	reported bool
	unknown  bool
	last     bool
	run      int
}

// record adds one probe result and returns the reported result and
// whether it changed.
func (c *probeCounter) record(ok bool) (reported, changed bool) {
	if c.run > 0 && ok == c.last {
		c.run++
	} else {
		c.last, c.run = ok, 1
	}
	threshold := c.failure
	if ok {
		threshold = c.success
	}
	if c.run < threshold || ok == c.reported && !c.unknown {
		return c.reported, false
	}
	c.reported, c.unknown = ok, false
	return c.reported, true
}

// hasProbes says whether the container has any probe.
func hasProbes(c corev1.Container) bool {
	return c.StartupProbe != nil || c.LivenessProbe != nil || c.ReadinessProbe != nil
}

// containerProbes runs the probes of one container instance in its own
// goroutine and keeps their results.
type containerProbes struct {
	id     string
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex // guards started, ready and failed
	started bool
	ready   bool
	// failed is the probe (Liveness or Startup) whose failures call for
	// the container to be killed, "" while none did.
	failed probeType
}

// state returns whether the container started and is ready, and which
// probe failed it.
func (p *containerProbes) state() (started, ready bool, failed probeType) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.started, p.ready, p.failed
}

// stop ends the probes and waits for the goroutine.
func (p *containerProbes) stop() {
	p.cancel()
	<-p.done
}

// probeTarget is what a probe needs to reach its container.
type probeTarget struct {
	pod         *corev1.Pod
	container   corev1.Container
	containerID string
	podIP       string
	startedAt   time.Time
}

// startProbes starts probing one running container instance; wake is
// called whenever a result the pod status shows changes.
func (a *Agent) startProbes(ctx context.Context, t probeTarget, wake func()) *containerProbes {
	ctx, cancel := context.WithCancel(ctx)
	c := t.container
	p := &containerProbes{
		id:      t.containerID,
		cancel:  cancel,
		done:    make(chan struct{}),
		started: c.StartupProbe == nil,
	}
	p.ready = p.started && c.ReadinessProbe == nil
	go func() {
		defer close(p.done)
		a.runProbes(ctx, t, p, wake)
	}()
	return p
}

// runProbes is kubelet's probe workers for one container: the startup
// probe until it succeeds, then liveness and readiness, each every period
// once initialDelaySeconds have passed since the container started.
// Liveness and startup stop at their failure threshold: the pod worker
// then kills the container.
func (a *Agent) runProbes(ctx context.Context, t probeTarget, p *containerProbes, wake func()) {
	specs := []*probeSpec{
		newProbeSpec(probeStartup, t.container.StartupProbe),
		newProbeSpec(probeLiveness, t.container.LivenessProbe),
		newProbeSpec(probeReadiness, t.container.ReadinessProbe),
	}
	type schedule struct {
		spec    *probeSpec
		counter probeCounter
		next    time.Time
	}
	var probes []*schedule
	for _, s := range specs {
		if s == nil {
			continue
		}
		sc := &schedule{spec: s, next: t.startedAt.Add(s.initialDelay)}
		// Liveness starts passing, readiness failing, startup unknown.
		sc.counter = probeCounter{success: s.success, failure: s.failure, reported: s.kind == probeLiveness, unknown: s.kind == probeStartup}
		probes = append(probes, sc)
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		next := time.Time{}
		p.mu.Lock()
		started := p.started
		p.mu.Unlock()
		for _, sc := range probes {
			if sc.spec.kind == probeStartup && started || sc.spec.kind != probeStartup && !started {
				continue
			}
			if next.IsZero() || sc.next.Before(next) {
				next = sc.next
			}
		}
		if next.IsZero() {
			return
		}
		timer.Reset(time.Until(next))
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		for _, sc := range probes {
			if sc.spec.kind == probeStartup && started || sc.spec.kind != probeStartup && !started || time.Now().Before(sc.next) {
				continue
			}
			ok := a.probeOnce(ctx, t, sc.spec)
			if ctx.Err() != nil {
				return
			}
			sc.next = time.Now().Add(sc.spec.period)
			result, changed := sc.counter.record(ok)
			if !changed {
				continue
			}
			p.mu.Lock()
			switch sc.spec.kind {
			case probeStartup:
				if result {
					p.started = true
					p.ready = t.container.ReadinessProbe == nil
				} else {
					p.failed = probeStartup
				}
			case probeLiveness:
				if !result {
					p.failed = probeLiveness
				}
			case probeReadiness:
				p.ready = result
			}
			failed := p.failed
			p.mu.Unlock()
			wake()
			if failed != "" {
				return
			}
			if sc.spec.kind == probeStartup {
				// The other probes start right after the startup probe succeeds.
				now := time.Now()
				for _, o := range probes {
					if o.spec.kind != probeStartup && o.next.Before(now) {
						o.next = now
					}
				}
				break
			}
		}
	}
}

// probeOnce runs one probe and records kubelet's Unhealthy event when it
// fails. The simulated runtime runs no processes: its probes pass.
func (a *Agent) probeOnce(ctx context.Context, t probeTarget, s *probeSpec) bool {
	if a.cfg.Simulated {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	output, err := a.runHandler(ctx, t, s.probe.ProbeHandler, s.timeout)
	if err == nil {
		return true
	}
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) {
		return false
	}
	msg := err.Error()
	if output != "" {
		msg = output
	}
	a.recorder.Eventf(containerRef(t.pod, t.container.Name), corev1.EventTypeWarning, "Unhealthy", "%s probe failed: %s", s.kind, msg)
	return false
}

// runHandler runs a probe's (or a lifecycle hook's) action: exec in the
// container through the runtime, or HTTP GET or TCP connect to the pod's
// IP from the node. It returns the exec's output and an error when the
// action failed.
func (a *Agent) runHandler(ctx context.Context, t probeTarget, h corev1.ProbeHandler, timeout time.Duration) (string, error) {
	switch {
	case h.Exec != nil:
		return a.execHandler(ctx, t, h.Exec.Command, timeout)
	case h.HTTPGet != nil:
		return "", httpGetHandler(ctx, t, h.HTTPGet)
	case h.TCPSocket != nil:
		return "", tcpSocketHandler(ctx, t, h.TCPSocket)
	case h.GRPC != nil:
		return "", grpcHandler(ctx, t, h.GRPC, timeout)
	default:
		return "", errors.New("missing probe handler")
	}
}

// execHandler runs cmd in the container; a non-zero exit is a failure
// whose output is the command's.
func (a *Agent) execHandler(ctx context.Context, t probeTarget, cmd []string, timeout time.Duration) (string, error) {
	execer, ok := a.cfg.Runtime.(execRuntime)
	if !ok {
		return "", nil
	}
	var out limitedBuffer
	code, err := execer.Exec(ctx, t.containerID, runtime.ExecOptions{Cmd: cmd, Stdout: &out, Stderr: &out})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return "", fmt.Errorf("command %q timed out", strings.Join(cmd, " "))
		}
		return "", err
	}
	if code != 0 {
		return out.String(), fmt.Errorf("command %q exited with %d", strings.Join(cmd, " "), code)
	}
	return "", nil
}

// httpGetHandler is kubelet's HTTP probe: a status from 200 to 399 passes
// (redirects are not followed).
func httpGetHandler(ctx context.Context, t probeTarget, g *corev1.HTTPGetAction) error {
	port, err := resolvePort(g.Port, t.container)
	if err != nil {
		return err
	}
	host := g.Host
	if host == "" {
		host = t.podIP
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := g.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port))}
	u, err = u.Parse(path)
	if err != nil {
		return fmt.Errorf("failed to parse probe path %q: %w", g.Path, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", probeUserAgent)
	req.Header.Set("Accept", "*/*")
	for _, h := range g.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	client := &http.Client{
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // kubelet's HTTPS probes do not verify
			DisableKeepAlives: true,
			Proxy:             nil,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxProbeOutput))
	if res.StatusCode < http.StatusOK || res.StatusCode >= http.StatusBadRequest {
		return fmt.Errorf("HTTP probe failed with statuscode: %d", res.StatusCode)
	}
	return nil
}

// tcpSocketHandler is kubelet's TCP probe: the connection opens.
func tcpSocketHandler(ctx context.Context, t probeTarget, s *corev1.TCPSocketAction) error {
	port, err := resolvePort(s.Port, t.container)
	if err != nil {
		return err
	}
	host := s.Host
	if host == "" {
		host = t.podIP
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return conn.Close()
}

// grpcHandler is the kubelet's gRPC probe: a call of the standard health
// service (grpc.health.v1.Health/Check) for the probe's service name on the
// pod's IP, in plaintext or, with mode TLS, over TLS without verifying the
// server's certificate; SERVING passes. The errors are the kubelet's.
func grpcHandler(ctx context.Context, t probeTarget, g *corev1.GRPCAction, timeout time.Duration) error {
	addr := net.JoinHostPort(t.podIP, strconv.Itoa(int(g.Port)))
	service := ptr.Deref(g.Service, "")
	creds := insecure.NewCredentials()
	if g.Mode != nil && *g.Mode == corev1.GRPCProbeModeTLS {
		creds = credentials.NewTLS(&tls.Config{InsecureSkipVerify: true})
	}
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(creds), grpc.WithUserAgent(probeUserAgent))
	if err != nil {
		return fmt.Errorf("error: failed to connect service at %q: %+v", addr, err)
	}
	defer conn.Close()
	resp, err := grpc_health_v1.NewHealthClient(conn).Check(metadata.NewOutgoingContext(ctx, metadata.MD{}), &grpc_health_v1.HealthCheckRequest{Service: service}, grpc.WaitForReady(true))
	if err != nil {
		switch st, _ := status.FromError(err); st.Code() {
		case codes.Unimplemented:
			return fmt.Errorf("error: this server does not implement the grpc health protocol (grpc.health.v1.Health): %s", st.Message())
		case codes.DeadlineExceeded:
			return fmt.Errorf("timeout: failed to connect service %q within %v: %+v", addr, timeout, err)
		default:
			return fmt.Errorf("error: health rpc probe failed: %+v", err)
		}
	}
	if resp.GetStatus() != grpc_health_v1.HealthCheckResponse_SERVING {
		return fmt.Errorf("service unhealthy (responded with %q)", resp.GetStatus().String())
	}
	return nil
}

// resolvePort turns a probe's port (a number or a container port's name)
// into a number.
func resolvePort(p intstr.IntOrString, c corev1.Container) (int, error) {
	if p.Type == intstr.Int {
		if p.IntVal <= 0 || p.IntVal > 65535 {
			return 0, fmt.Errorf("invalid port number: %d", p.IntVal)
		}
		return int(p.IntVal), nil
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("couldn't find port: %v in %v", p.StrVal, c.Name)
}

// limitedBuffer keeps the first maxProbeOutput bytes written to it; it is
// safe for the concurrent writes of stdout and stderr.
type limitedBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := maxProbeOutput - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
