package dns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	// The CoreDNS plugins the Corefile uses; each registers itself.
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/kubernetes"
)

const (
	// DefaultClusterDomain is the cluster's DNS domain, as the kubelet's
	// --cluster-domain and CoreDNS's default Corefile have it.
	DefaultClusterDomain = "cluster.local"
	// DefaultResolvConf lists the resolvers names outside the cluster are
	// forwarded to.
	DefaultResolvConf = "/etc/resolv.conf"
	// TTL is the TTL of the cluster's records (CoreDNS's default Corefile: ttl 30).
	TTL = 30
	// ServiceIPIndex is the kube-dns Service's address within the service
	// range: 10.96.0.10 in 10.96.0.0/16, as kubeadm picks it.
	ServiceIPIndex = 10
)

// directives are the CoreDNS plugins in the order they handle a query:
// CoreDNS's own order (core/dnsserver/zdirectives.go) cut to those used.
var directives = []string{"bind", "errors", "cache", "kubernetes", "forward"}

// setDirectives sets the plugin chain once per process, before the first
// server starts.
var setDirectives = sync.OnceValue(func() error {
	caddy.Quiet, dnsserver.Quiet = true, true
	return dnsserver.SetDirectives(directives)
})

// Config is what the DNS server serves and where.
type Config struct {
	// Listen is host:port for UDP and TCP alike; port 0 picks a port free
	// for both.
	Listen string
	// ClusterDomain is the zone answered from the API (DefaultClusterDomain).
	ClusterDomain string
	// ServiceIP is the kube-dns Service's ClusterIP (see ServiceIP).
	ServiceIP netip.Addr
	// Kubeconfig is the file CoreDNS's kubernetes plugin reads the API
	// with (its own identity, UserDNS).
	Kubeconfig string
	// ResolvConf lists the upstream resolvers (DefaultResolvConf).
	ResolvConf string
	// Logger receives the server's logs (slog.Default() when nil).
	Logger *slog.Logger
}

// Server is the embedded CoreDNS. Create it with New and start it with Run.
type Server struct {
	cfg    Config
	client kubernetes.Interface
	log    *slog.Logger
	ready  chan struct{}
	// addr is where the server listens; written once before ready closes.
	addr netip.AddrPort
}

// New checks cfg and returns a server that applies the kube-dns Service and
// EndpointSlice with client.
func New(cfg Config, client kubernetes.Interface) (*Server, error) {
	if cfg.ClusterDomain == "" {
		cfg.ClusterDomain = DefaultClusterDomain
	}
	cfg.ClusterDomain = strings.TrimSuffix(cfg.ClusterDomain, ".")
	if cfg.ResolvConf == "" {
		cfg.ResolvConf = DefaultResolvConf
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Kubeconfig == "" {
		return nil, errors.New("dns: a kubeconfig is required")
	}
	if !cfg.ServiceIP.Is4() {
		return nil, fmt.Errorf("dns: the kube-dns Service IP %q is not IPv4", cfg.ServiceIP)
	}
	host, port, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("invalid DNS listen address %q: %w", cfg.Listen, err)
	}
	if ip, err := netip.ParseAddr(host); err != nil || !ip.Is4() || ip.IsUnspecified() {
		return nil, fmt.Errorf("invalid DNS listen address %q: want an IPv4 address the EndpointSlice can point at", cfg.Listen)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return nil, fmt.Errorf("invalid DNS listen port in %q: %w", cfg.Listen, err)
	}
	return &Server{cfg: cfg, client: client, log: cfg.Logger, ready: make(chan struct{})}, nil
}

// ServiceIP is the kube-dns Service's ClusterIP: the ServiceIPIndex-th
// address of the service range cidr.
func ServiceIP(cidr string) (netip.Addr, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil || !p.Addr().Is4() {
		return netip.Addr{}, fmt.Errorf("invalid service range %q: want an IPv4 CIDR", cidr)
	}
	b := p.Masked().Addr().As4()
	n := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]) + ServiceIPIndex
	ip := netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
	if !p.Contains(ip) {
		return netip.Addr{}, fmt.Errorf("service range %q is too small for the DNS Service's address (its %dth)", cidr, ServiceIPIndex)
	}
	return ip, nil
}

// Ready is closed once the server answers and the kube-dns Service and
// EndpointSlice point at it.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Addr is where the server listens, UDP and TCP; valid once Ready is closed.
func (s *Server) Addr() netip.AddrPort { return s.addr }

// Run starts CoreDNS, applies the kube-dns Service and EndpointSlice, and
// serves until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	inst, addr, err := s.start()
	if err != nil {
		return err
	}
	defer func() {
		err := errors.Join(append(inst.ShutdownCallbacks(), inst.Stop())...)
		inst.Wait()
		if err != nil {
			s.log.Warn("failed to stop the DNS server cleanly", "err", err)
		}
	}()
	s.addr = addr
	s.log.Info("cluster DNS listening", "address", addr.String(), "domain", s.cfg.ClusterDomain)
	s.maintainService(ctx, addr)
	return nil
}

// maintainService applies the kube-dns Service and EndpointSlice until ctx
// ends, closing s.ready after the first success. The API can refuse writes
// for a while (etcd without a quorum, a restart): it keeps trying with a
// capped backoff instead of ending the process, then applies again every
// resyncPeriod so a deleted Service or slice comes back.
func (s *Server) maintainService(ctx context.Context, addr netip.AddrPort) {
	delay, ready := retryInitial, false
	for {
		if err := s.applyService(ctx, addr); err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("failed to apply the kube-dns Service; trying again", "err", err, "in", delay)
		} else {
			if !ready {
				close(s.ready)
				ready = true
			}
			delay = resyncPeriod
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		if !ready {
			delay = min(2*delay, retryCap)
		}
	}
}

const (
	retryInitial = 500 * time.Millisecond
	retryCap     = 30 * time.Second
	resyncPeriod = time.Minute
)

// start starts CoreDNS on the configured address; with port 0, on a port
// free for UDP and TCP (tried again when another process took it first).
func (s *Server) start() (*caddy.Instance, netip.AddrPort, error) {
	if err := setDirectives(); err != nil {
		return nil, netip.AddrPort{}, fmt.Errorf("failed to set the CoreDNS plugins: %w", err)
	}
	host, portStr, _ := net.SplitHostPort(s.cfg.Listen)
	ip := netip.MustParseAddr(host)
	port, _ := strconv.ParseUint(portStr, 10, 16)
	attempts := 1
	if port == 0 {
		attempts = 5
	}
	var lastErr error
	for range attempts {
		p := uint16(port)
		if p == 0 {
			free, err := freePort(ip)
			if err != nil {
				return nil, netip.AddrPort{}, err
			}
			p = free
		}
		inst, err := caddy.Start(caddy.CaddyfileInput{
			Filepath:       "Corefile",
			Contents:       []byte(corefile(s.cfg, ip, p)),
			ServerTypeName: "dns",
		})
		// The kubernetes plugin's setup points klog, process-wide, at
		// CoreDNS's logger, which would label every component's klog
		// lines "plugin/kubernetes"; klog goes back to its own output.
		klog.ClearLogger()
		if err == nil {
			return inst, netip.AddrPortFrom(ip, p), nil
		}
		if inst != nil {
			inst.Stop()
		}
		lastErr = err
	}
	return nil, netip.AddrPort{}, fmt.Errorf("failed to start the DNS server on %s: %w", s.cfg.Listen, lastErr)
}

// freePort returns a port on ip that is free for both TCP and UDP.
func freePort(ip netip.Addr) (uint16, error) {
	var lastErr error
	for range 20 {
		tl, err := net.Listen("tcp", netip.AddrPortFrom(ip, 0).String())
		if err != nil {
			return 0, fmt.Errorf("failed to find a free DNS port on %s: %w", ip, err)
		}
		port := uint16(tl.Addr().(*net.TCPAddr).Port)
		ul, err := net.ListenPacket("udp", netip.AddrPortFrom(ip, port).String())
		tl.Close()
		if err == nil {
			ul.Close()
			return port, nil
		}
		lastErr = err
	}
	return 0, fmt.Errorf("failed to find a port free for TCP and UDP on %s: %w", ip, lastErr)
}

// corefile is the Corefile of the server: CoreDNS's default for
// Kubernetes (kubernetes with pods insecure, PTRs falling through, ttl 30;
// forward to the host's resolvers; cache 30), bound to ip:port, with the
// kubernetes plugin reading the API through cfg.Kubeconfig. forward gives
// up after two attempts of one second each, so a name outside the cluster
// gets SERVFAIL in about two seconds when no upstream answers instead of
// the five the client would otherwise wait.
func corefile(cfg Config, ip netip.Addr, port uint16) string {
	return fmt.Sprintf(`.:%d {
    bind %s
    errors
    kubernetes %s in-addr.arpa ip6.arpa {
        kubeconfig %q
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl %d
    }
    forward . %q {
        max_connect_attempts 2
        read_timeout 1s
    }
    cache 30
}
`, port, ip, cfg.ClusterDomain, cfg.Kubeconfig, TTL, cfg.ResolvConf)
}
