package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	clusterdns "github.com/glassplane/glassplane/controlplane/dns"
	"github.com/glassplane/glassplane/controlplane/proxy"
)

// BenchmarkClusterDNS measures the cluster DNS from the host, at its listen
// address: queries per second and latency percentiles with 8 clients over
// UDP, for a Service name (answered by the cache after the first query)
// and for names never asked before (each one a lookup in the kubernetes
// plugin's index, NXDOMAIN). It also measures what a DNS server adds to a
// process when idle: a second server started in the test's process with
// the cluster's DNS kubeconfig, Go heap in use and goroutines before and
// after (runtime.MemStats after a GC); and the same for a service proxy
// (benchProxyIdle).
func BenchmarkClusterDNS(b *testing.B) {
	c := NewCluster(b, "--node-runtime", "none")
	server := benchDNSAddr(b, c)

	const clients, perClient = 8, 2500
	run := func(name string, qname func(client, i int) string) {
		lat := make([][]time.Duration, clients)
		var wg sync.WaitGroup
		start := time.Now()
		var failures sync.Map
		for cl := range clients {
			wg.Go(func() {
				dc := &dns.Client{Net: "udp", Timeout: 10 * time.Second}
				for i := range perClient {
					m := new(dns.Msg)
					m.SetQuestion(qname(cl, i), dns.TypeA)
					t0 := time.Now()
					r, _, err := dc.Exchange(m, server)
					lat[cl] = append(lat[cl], time.Since(t0))
					if err != nil || r == nil {
						failures.Store(fmt.Sprint(err), true)
					}
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		failures.Range(func(k, _ any) bool { b.Errorf("%s: a query failed: %v", name, k); return false })
		all := slices.Concat(lat...)
		slices.Sort(all)
		pct := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))].Microseconds()) / 1000 }
		b.ReportMetric(float64(len(all))/elapsed.Seconds(), name+"-queries/s")
		b.ReportMetric(pct(0.50), name+"-p50-ms")
		b.ReportMetric(pct(0.99), name+"-p99-ms")
	}
	for range b.N {
		run("service", func(int, int) string { return "kubernetes.default.svc.cluster.local." })
		run("unknown", func(cl, i int) string { return fmt.Sprintf("n%d-%d.default.svc.cluster.local.", cl, i) })
	}

	// The idle cost of one more server, in this process, reading the API
	// with the cluster's DNS kubeconfig. It points kube-dns at itself, as
	// any start does; the cluster ends with the benchmark.
	kubeconfig := filepath.Join(c.DataDir, "dns-kubeconfig")
	admin, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		b.Fatal(err)
	}
	before, goroutines := heapInUse()
	srv, err := clusterdns.New(clusterdns.Config{
		Listen: "127.0.0.1:0", ServiceIP: netip.MustParseAddr("10.96.0.10"),
		Kubeconfig: kubeconfig, Logger: slog.New(slog.DiscardHandler),
	}, admin)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	select {
	case <-srv.Ready():
	case err := <-done:
		b.Fatalf("the second DNS server stopped: %v", err)
	}
	// Idle: its informers have listed and watch.
	time.Sleep(2 * time.Second)
	after, goroutinesAfter := heapInUse()
	b.ReportMetric(float64(after-before)/(1<<20), "dns-idle-heap-MiB")
	b.ReportMetric(float64(goroutinesAfter-goroutines), "dns-idle-goroutines")
	cancel()
	if err := <-done; err != nil {
		b.Errorf("the second DNS server: %v", err)
	}
	benchProxyIdle(b, admin)
}

// benchProxyIdle reports what a service proxy adds to a process when
// idle: one started in the test's process, on a table of its own (so it
// does not fight a node's proxy over glassplane-proxy), once its first
// sync wrote the table; the table goes with the benchmark.
func benchProxyIdle(b *testing.B, client kubernetes.Interface) {
	if _, err := exec.LookPath("nft"); err != nil {
		b.Fatalf("nft is not installed (the setup script installs it): %v", err)
	}
	const table = "glassplane-proxy-bench"
	b.Cleanup(func() {
		if _, err := proxy.DeleteTable(context.Background(), table); err != nil {
			b.Errorf("delete table ip %s: %v", table, err)
		}
	})
	before, goroutines := heapInUse()
	p, err := proxy.New(proxy.Config{NodeName: "bench", PodCIDR: "10.88.0.0/24", Table: table, Logger: slog.New(slog.DiscardHandler)}, client)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := exec.Command("nft", "list", "table", "ip", table).CombinedOutput()
		if err == nil && strings.Contains(string(out), "default/kubernetes") {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			b.Fatalf("the benchmark's proxy did not write table ip %s within a minute: %v: %s", table, err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	after, goroutinesAfter := heapInUse()
	b.ReportMetric(float64(after-before)/(1<<20), "proxy-idle-heap-MiB")
	b.ReportMetric(float64(goroutinesAfter-goroutines), "proxy-idle-goroutines")
	cancel()
	if err := <-done; err != nil {
		b.Errorf("the benchmark's proxy: %v", err)
	}
}

// heapInUse is the Go heap in use after a GC, and the goroutines.
func heapInUse() (uint64, int) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse, runtime.NumGoroutine()
}

// benchDNSAddr is clusterDNSAddr for a benchmark.
func benchDNSAddr(b *testing.B, c *Cluster) string {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		s, err := c.Client.DiscoveryV1().EndpointSlices("kube-system").Get(context.Background(), "kube-dns", metav1.GetOptions{})
		if err == nil && len(s.Endpoints) == 1 && len(s.Ports) > 0 {
			return netip.AddrPortFrom(netip.MustParseAddr(s.Endpoints[0].Addresses[0]), uint16(*s.Ports[0].Port)).String()
		}
		if time.Now().After(deadline) {
			b.Fatalf("no kube-dns EndpointSlice: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
