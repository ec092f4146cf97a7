package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// clusterDNSAddr is where the cluster DNS listens, read from the
// kube-system/kube-dns EndpointSlice; it checks the slice against the
// address `up` logged.
func clusterDNSAddr(t *testing.T, c *Cluster) string {
	t.Helper()
	var addr string
	Eventually(t, time.Minute, "the kube-dns EndpointSlice", func() error {
		s, err := c.Client.DiscoveryV1().EndpointSlices("kube-system").Get(context.Background(), "kube-dns", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if s.Labels["kubernetes.io/service-name"] != "kube-dns" || s.Labels["endpointslice.kubernetes.io/managed-by"] != "dns.glassplane.io" {
			return fmt.Errorf("labels %v", s.Labels)
		}
		if len(s.Endpoints) != 1 || len(s.Endpoints[0].Addresses) != 1 || len(s.Ports) != 2 {
			return fmt.Errorf("endpoints %v, ports %v", s.Endpoints, s.Ports)
		}
		for _, p := range s.Ports {
			if *p.Port != *s.Ports[0].Port {
				return fmt.Errorf("UDP and TCP on different ports: %v", s.Ports)
			}
		}
		addr = net.JoinHostPort(s.Endpoints[0].Addresses[0], fmt.Sprint(*s.Ports[0].Port))
		if !strings.Contains(c.Log(), `msg="cluster DNS listening" address=`+addr+" ") {
			return fmt.Errorf("the kube-dns EndpointSlice points at %s, not where up says the DNS listens: %q", addr, lines(c.Log(), "cluster DNS listening"))
		}
		return nil
	})
	return addr
}

// dnsQuery asks server about name over network ("udp" or "tcp") and
// returns the answer; a failed exchange fails the test.
func dnsQuery(t *testing.T, network, server, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	client := &dns.Client{Net: network, Timeout: 30 * time.Second}
	r, _, err := client.Exchange(m, server)
	if err != nil {
		t.Fatalf("%s %s over %s at %s: %v", dns.TypeToString[qtype], name, network, server, err)
	}
	return r
}

// answers renders the answer section as the records' data, one a line.
func answers(r *dns.Msg) []string {
	var out []string
	for _, rr := range r.Answer {
		h := rr.Header()
		out = append(out, strings.TrimPrefix(rr.String(), h.String()))
	}
	return out
}

// eventuallyAnswers waits until name's qtype answer from server is want
// (in any order), since the plugin learns new objects by its watch.
func eventuallyAnswers(t *testing.T, server, name string, qtype uint16, want ...string) {
	t.Helper()
	Eventually(t, time.Minute, dns.TypeToString[qtype]+" "+name, func() error {
		r := dnsQuery(t, "udp", server, name, qtype)
		if r.Rcode != dns.RcodeSuccess {
			return fmt.Errorf("rcode %s", dns.RcodeToString[r.Rcode])
		}
		got := answers(r)
		if len(got) != len(want) {
			return fmt.Errorf("answers %q, want %q", got, want)
		}
		for _, w := range want {
			found := false
			for _, g := range got {
				found = found || g == w
			}
			if !found {
				return fmt.Errorf("answers %q, want %q", got, want)
			}
		}
		return nil
	})
}

// hostSearches is the host's search line, which ClusterFirst pods search
// after the cluster's domains (the kubelet's rule).
func hostSearches(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("/etc/resolv.conf")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 0 && fields[0] == "search" {
			out = nil
			for _, d := range fields[1:] {
				if d != "." {
					out = append(out, strings.TrimSuffix(d, "."))
				}
			}
		}
	}
	return out
}

// TestClusterDNS: the cluster DNS answers the Kubernetes DNS
// specification from the API (a Service's A, SRV and PTR records, a
// headless Service's ready pods and their <hostname>.<subdomain> names,
// pod A records, NXDOMAIN for unknown names, over UDP and TCP), kube-dns
// points at it, and pods on the containerd node get the kubelet's
// resolv.conf and resolve names with it.
func TestClusterDNS(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	c := SharedCluster(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cluster log:\n%s", tail(c.Log(), 60))
		}
	})
	ctx := context.Background()
	server := clusterDNSAddr(t, c)

	kubeDNS, err := c.Client.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if kubeDNS.Spec.ClusterIP != "10.96.0.10" || kubeDNS.Labels["k8s-app"] != "kube-dns" || kubeDNS.Spec.Selector != nil ||
		len(kubeDNS.Spec.Ports) != 2 || kubeDNS.Spec.Ports[0].Name != "dns" || kubeDNS.Spec.Ports[0].Protocol != corev1.ProtocolUDP ||
		kubeDNS.Spec.Ports[1].Name != "dns-tcp" || kubeDNS.Spec.Ports[1].Protocol != corev1.ProtocolTCP {
		t.Fatalf("kube-dns Service: %+v %+v", kubeDNS.ObjectMeta.Labels, kubeDNS.Spec)
	}

	const ns = "dns-e2e"
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	web := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	if web, err = c.Client.CoreV1().Services(ns).Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	db := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  map[string]string{"app": "db"},
			Ports:     []corev1.ServicePort{{Name: "pg", Port: 5432, Protocol: corev1.ProtocolTCP}},
		},
	}
	if _, err := c.Client.CoreV1().Services(ns).Create(ctx, db, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	run := func(name string, labels map[string]string, mutate func(*corev1.Pod), cmd ...string) {
		t.Helper()
		pod := onContainerdNode(name, corev1.RestartPolicyNever, corev1.Container{Name: "main", Image: demoImage, Command: cmd})
		if cmd == nil {
			pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
		}
		pod.Namespace, pod.Labels = ns, labels
		if mutate != nil {
			mutate(pod)
		}
		// The namespace's default ServiceAccount may not exist yet.
		Eventually(t, time.Minute, "pod "+name+" created", func() error {
			_, err := c.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
			return err
		})
	}
	run("web-1", map[string]string{"app": "web"}, nil)
	run("db-0", map[string]string{"app": "db"}, func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "db-0", "db" })
	db0 := waitPodPhase(t, c, ns, "db-0", corev1.PodRunning, 3*time.Minute)
	waitPodPhase(t, c, ns, "web-1", corev1.PodRunning, 3*time.Minute)
	svcName := "web." + ns + ".svc.cluster.local."

	t.Run("Service A", func(t *testing.T) {
		eventuallyAnswers(t, server, "web."+ns+".svc.cluster.local", dns.TypeA, web.Spec.ClusterIP)
		r := dnsQuery(t, "tcp", server, "web."+ns+".svc.cluster.local", dns.TypeA)
		if got := answers(r); len(got) != 1 || got[0] != web.Spec.ClusterIP {
			t.Errorf("over TCP: %q", got)
		}
		eventuallyAnswers(t, server, "kube-dns.kube-system.svc.cluster.local", dns.TypeA, "10.96.0.10")
	})
	t.Run("SRV of a named port", func(t *testing.T) {
		eventuallyAnswers(t, server, "_http._tcp.web."+ns+".svc.cluster.local", dns.TypeSRV, "0 100 80 "+svcName)
	})
	t.Run("PTR", func(t *testing.T) {
		rev, err := dns.ReverseAddr(web.Spec.ClusterIP)
		if err != nil {
			t.Fatal(err)
		}
		eventuallyAnswers(t, server, rev, dns.TypePTR, svcName)
	})
	t.Run("headless Service", func(t *testing.T) {
		ip := db0.Status.PodIP
		if ip == "" {
			t.Fatal("db-0 has no pod IP")
		}
		eventuallyAnswers(t, server, "db."+ns+".svc.cluster.local", dns.TypeA, ip)
		eventuallyAnswers(t, server, "db-0.db."+ns+".svc.cluster.local", dns.TypeA, ip)
		eventuallyAnswers(t, server, "_pg._tcp.db."+ns+".svc.cluster.local", dns.TypeSRV, "0 100 5432 db-0.db."+ns+".svc.cluster.local.")
	})
	t.Run("pod A", func(t *testing.T) {
		eventuallyAnswers(t, server, "10-88-0-99."+ns+".pod.cluster.local", dns.TypeA, "10.88.0.99")
	})
	t.Run("unknown names NXDOMAIN", func(t *testing.T) {
		for _, network := range []string{"udp", "tcp"} {
			for _, name := range []string{"nope." + ns + ".svc.cluster.local", "web.nope.svc.cluster.local"} {
				if r := dnsQuery(t, network, server, name, dns.TypeA); r.Rcode != dns.RcodeNameError || !r.Authoritative {
					t.Errorf("%s over %s: rcode %s, authoritative %v", name, network, dns.RcodeToString[r.Rcode], r.Authoritative)
				}
			}
		}
	})

	resolvConf := func(t *testing.T, name string, mutate func(*corev1.Pod)) string {
		t.Helper()
		run(name, nil, mutate, "cat", "/etc/resolv.conf")
		waitPodPhase(t, c, ns, name, corev1.PodSucceeded, 3*time.Minute)
		return c.MustKubectl(t, "", "logs", "-n", ns, name)
	}
	clusterFirst := "search " + strings.Join(append([]string{ns + ".svc.cluster.local", "svc.cluster.local", "cluster.local"}, hostSearches(t)...), " ") +
		"\nnameserver 10.96.0.10\noptions ndots:5\n"
	t.Run("resolv.conf ClusterFirst", func(t *testing.T) {
		if got := resolvConf(t, "resolv-cluster-first", nil); got != clusterFirst {
			t.Errorf("resolv.conf:\n%s\nwant:\n%s", got, clusterFirst)
		}
	})
	t.Run("resolv.conf None", func(t *testing.T) {
		got := resolvConf(t, "resolv-none", func(p *corev1.Pod) {
			p.Spec.DNSPolicy = corev1.DNSNone
			p.Spec.DNSConfig = &corev1.PodDNSConfig{
				Nameservers: []string{"192.0.2.53"},
				Searches:    []string{"my.dns.search.suffix"},
				Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}, {Name: "edns0"}},
			}
		})
		want := "search my.dns.search.suffix\nnameserver 192.0.2.53\noptions edns0 ndots:2\n"
		if got != want {
			t.Errorf("resolv.conf:\n%s\nwant:\n%s", got, want)
		}
	})
	t.Run("nslookup from a pod", func(t *testing.T) {
		// On the host's network the pod reaches the server where it
		// listens, and ClusterFirstWithHostNet gives it the cluster's
		// resolv.conf.
		run("lookup-hostnet", nil, func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
		}, "sh", "-c", "cat /etc/resolv.conf; nslookup web."+ns+".svc.cluster.local "+server)
		waitPodPhase(t, c, ns, "lookup-hostnet", corev1.PodSucceeded, 3*time.Minute)
		out := c.MustKubectl(t, "", "logs", "-n", ns, "lookup-hostnet")
		if !strings.HasPrefix(out, clusterFirst) {
			t.Errorf("ClusterFirstWithHostNet resolv.conf:\n%s\nwant:\n%s", out, clusterFirst)
		}
		if !regexp.MustCompile(`Name:\s+web\.` + ns + `\.svc\.cluster\.local\s+Address:\s+` + regexp.QuoteMeta(web.Spec.ClusterIP)).MatchString(out) {
			t.Errorf("nslookup did not answer the ClusterIP %s:\n%s", web.Spec.ClusterIP, out)
		}
	})
	t.Run("nslookup through kube-dns", func(t *testing.T) {
		// A pod on the pod network asks 10.96.0.10 (its resolv.conf) for
		// the short name; the node's service proxy carries the query to
		// the server. Busybox's nslookup also tries the other search
		// domains and exits 1 for their NXDOMAIN, so only its output
		// counts. The proxy programs kube-dns's rules on its own time (and
		// another cluster's proxy on this host may have rewritten them), so
		// a lookup that finds no server is tried again in a new pod.
		asked := regexp.MustCompile(`Server:\s+10\.96\.0\.10`)
		answer := regexp.MustCompile(`Name:\s+web\.` + ns + `\.svc\.cluster\.local\s+Address:\s+` + regexp.QuoteMeta(web.Spec.ClusterIP))
		var out string
		for attempt := 1; ; attempt++ {
			name := fmt.Sprintf("lookup-short-%d", attempt)
			run(name, nil, nil, "nslookup", "web")
			waitPodDone(t, c, ns, name, 3*time.Minute)
			out = c.MustKubectl(t, "", "logs", "-n", ns, name)
			if asked.MatchString(out) && answer.MatchString(out) {
				t.Logf("answered at attempt %d", attempt)
				return
			}
			if attempt == 20 {
				break
			}
			time.Sleep(3 * time.Second)
		}
		t.Errorf("nslookup web through 10.96.0.10 did not answer the ClusterIP %s:\n%s", web.Spec.ClusterIP, out)
	})
	t.Run("a pod reaches the Service by its names", func(t *testing.T) {
		// The lookup and the connection a client makes: wget resolves web
		// and its full name through 10.96.0.10 and connects to the
		// ClusterIP, which the proxy carries to web-1. (The demo image's
		// busybox wget crashes on -T, so timeout bounds each fetch.)
		full := "web." + ns + ".svc.cluster.local"
		cmd := fmt.Sprintf("timeout 5 wget -q -O- http://web/ && echo && timeout 5 wget -q -O- http://%s/", full)
		var out string
		for attempt := 1; ; attempt++ {
			name := fmt.Sprintf("fetch-by-name-%d", attempt)
			run(name, nil, nil, "sh", "-c", cmd)
			waitPodDone(t, c, ns, name, 3*time.Minute)
			out = c.MustKubectl(t, "", "logs", "-n", ns, name)
			if strings.Count(out, "Hello from web-1") == 2 {
				t.Logf("answered at attempt %d", attempt)
				return
			}
			if attempt == 10 {
				break
			}
			time.Sleep(3 * time.Second)
		}
		t.Errorf("wget http://web/ and http://%s/ from a pod did not both reach web-1:\n%s", full, out)
	})
}

// waitPodDone waits until the pod succeeded or failed.
func waitPodDone(t *testing.T, c *Cluster, ns, name string, timeout time.Duration) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	Eventually(t, timeout, fmt.Sprintf("pod %s/%s done", ns, name), func() error {
		p, err := c.Client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pod = p
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			return fmt.Errorf("phase %q", p.Status.Phase)
		}
		return nil
	})
	return pod
}

// TestClusterDNSUpstreamDown: with resolvers that never answer (no
// network), a name outside the cluster gets SERVFAIL rather than no answer,
// and cluster names still resolve.
func TestClusterDNSUpstreamDown(t *testing.T) {
	// A resolver that reads queries and never answers, on a loopback
	// address of its own (port 53, as resolv.conf has no port).
	sinkIP := fmt.Sprintf("127.53.%d.%d", os.Getpid()%250+1, time.Now().Nanosecond()%250+1)
	udp, err := net.ListenPacket("udp", sinkIP+":53")
	if err != nil {
		t.Fatalf("failed to listen on %s:53 for a silent resolver (needs root): %v", sinkIP, err)
	}
	defer udp.Close()
	tcp, err := net.Listen("tcp", sinkIP+":53")
	if err != nil {
		t.Fatalf("failed to listen on %s:53 for a silent resolver: %v", sinkIP, err)
	}
	defer tcp.Close()
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, _, err := udp.ReadFrom(buf); err != nil {
				return
			}
		}
	}()
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver "+sinkIP+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := NewCluster(t, "--node-runtime", "none", "--cluster-dns-resolv-conf", resolv)
	server := clusterDNSAddr(t, c)

	start := time.Now()
	r := dnsQuery(t, "udp", server, "example.com", dns.TypeA)
	took := time.Since(start)
	if r.Rcode != dns.RcodeServerFailure {
		t.Errorf("example.com with silent upstreams: rcode %s, want SERVFAIL", dns.RcodeToString[r.Rcode])
	}
	t.Logf("SERVFAIL for example.com after %v", took)
	eventuallyAnswers(t, server, "kubernetes.default.svc.cluster.local", dns.TypeA, "10.96.0.1")
}

// TestClusterDNSRestart: a second `up` on the same data directory keeps
// kube-dns at 10.96.0.10, points its EndpointSlice at the new server's
// port, and that server answers.
func TestClusterDNSRestart(t *testing.T) {
	dir := t.TempDir()
	c, err := StartCluster(dir, "--node-runtime", "none")
	if err != nil {
		t.Fatal(err)
	}
	first := clusterDNSAddr(t, c)
	svc, err := c.Client.CoreV1().Services("kube-system").Get(context.Background(), "kube-dns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.Stop()
	c2, err := StartCluster(dir, "--node-runtime", "none")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c2.Stop)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("second start's log:\n%s", tail(c2.Log(), 40))
		}
	})
	// The kubeconfig StartCluster read may still be the first start's.
	Eventually(t, time.Minute, "the second start's kubeconfig", func() error {
		if err := c2.connect(); err != nil {
			return err
		}
		if c2.Config.Host != c2.APIURL {
			return fmt.Errorf("kubeconfig names %s, not %s", c2.Config.Host, c2.APIURL)
		}
		return nil
	})
	second := clusterDNSAddr(t, c2)
	again, err := c2.Client.CoreV1().Services("kube-system").Get(context.Background(), "kube-dns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.UID != svc.UID || again.Spec.ClusterIP != "10.96.0.10" {
		t.Errorf("kube-dns after the restart: uid %s (was %s), clusterIP %s", again.UID, svc.UID, again.Spec.ClusterIP)
	}
	t.Logf("DNS at %s, then at %s", first, second)
	eventuallyAnswers(t, second, "kube-dns.kube-system.svc.cluster.local", dns.TypeA, "10.96.0.10")
}
