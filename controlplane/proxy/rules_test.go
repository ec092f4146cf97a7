package proxy

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/knftables"
)

const testNode = "node-a"

// svc is a ClusterIP Service with one TCP port 80 (named "http").
func svc(name, ip string, mutate ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: corev1.ServiceSpec{
			Type:      corev1.ServiceTypeClusterIP,
			ClusterIP: ip,
			Ports:     []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, NodePort: 30080}},
		},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

type ep struct {
	ip, node                    string
	ready, serving, terminating bool
}

func readyOn(ip, node string) ep { return ep{ip: ip, node: node, ready: true, serving: true} }

// slice is the EndpointSlice of Service name with eps on port 8080.
func slice(name string, eps ...ep) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name + "-abc", Namespace: "ns", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for _, e := range eps {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{e.ip},
			NodeName:   ptr.To(e.node),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(e.ready), Serving: ptr.To(e.serving), Terminating: ptr.To(e.terminating)},
		})
	}
	return s
}

// program syncs the fake table from services and slices and returns its
// dump.
func program(t *testing.T, fake *knftables.Fake, services []*corev1.Service, slices []*discoveryv1.EndpointSlice) string {
	t.Helper()
	return programWith(t, newProxy(Config{NodeName: testNode, PodCIDR: "10.88.0.0/24"}, nil, fake), fake, services, slices)
}

// programWith syncs with p, which writes only the difference after its
// first sync.
func programWith(t *testing.T, p *Proxy, fake *knftables.Fake, services []*corev1.Service, slices []*discoveryv1.EndpointSlice) string {
	t.Helper()
	rs := buildRuleset(servicePorts(services, slices), testNode, "10.88.0.0/24")
	if err := p.apply(context.Background(), rs, false); err != nil {
		t.Fatalf("apply: %v", err)
	}
	// Element comments sit between key and value; they name the port. The
	// owner mark is random per proxy.
	return ownerMark.ReplaceAllString(elementComment.ReplaceAllString(fake.Dump(), ""), "proxy-owner { OWNER }")
}

var (
	elementComment = regexp.MustCompile(` comment "[^"]*"`)
	ownerMark      = regexp.MustCompile(`proxy-owner \{ [0-9]+ \}`)
)

func chainOf(prefix string, s *corev1.Service) string {
	return hashName(prefix, fmt.Sprintf("%s/%s/tcp/http", s.Namespace, s.Name))
}

func endpointChain(s *corev1.Service, ip string) string {
	return hashName("endpoint", fmt.Sprintf("%s/%s/tcp/http__%s/8080", s.Namespace, s.Name, ip))
}

// rulesOf is the rules of chain in a dump, in order.
func rulesOf(dump, chain string) []string {
	var out []string
	prefix := "add rule ip " + DefaultTable + " " + chain + " "
	for _, l := range strings.Split(dump, "\n") {
		if r, ok := strings.CutPrefix(l, prefix); ok {
			out = append(out, r)
		}
	}
	return out
}

func hasLine(dump, substr string) bool {
	for _, l := range strings.Split(dump, "\n") {
		if strings.Contains(l, substr) {
			return true
		}
	}
	return false
}

func TestRuleset(t *testing.T) {
	web := svc("web", "10.96.0.10")
	tests := []struct {
		name     string
		services []*corev1.Service
		slices   []*discoveryv1.EndpointSlice
		check    func(t *testing.T, dump string)
	}{
		{
			name:     "ClusterIP balances over ready endpoints",
			services: []*corev1.Service{web},
			slices:   []*discoveryv1.EndpointSlice{slice("web", readyOn("10.88.0.5", testNode), readyOn("10.88.0.6", "node-b"), ep{ip: "10.88.0.7", node: testNode})},
			check: func(t *testing.T, dump string) {
				if !hasLine(dump, "element ip "+DefaultTable+" service-ips { 10.96.0.10 . tcp . 80 : goto "+chainOf("service", web)) {
					t.Errorf("no service-ips element for the ClusterIP:\n%s", dump)
				}
				rules := rulesOf(dump, chainOf("service", web))
				want := []string{
					"ip daddr 10.96.0.10 tcp dport 80 ip saddr != 10.88.0.0/24 jump mark-for-masquerade",
					fmt.Sprintf("numgen random mod 2 vmap { 0 : goto %s , 1 : goto %s }", endpointChain(web, "10.88.0.5"), endpointChain(web, "10.88.0.6")),
				}
				if strings.Join(rules, "\n") != strings.Join(want, "\n") {
					t.Errorf("service chain rules:\n%s\nwant:\n%s", strings.Join(rules, "\n"), strings.Join(want, "\n"))
				}
				if hasLine(dump, "10.88.0.7") {
					t.Errorf("the unready endpoint is programmed:\n%s", dump)
				}
				if got := rulesOf(dump, endpointChain(web, "10.88.0.5")); len(got) != 2 || got[1] != "meta l4proto tcp dnat to 10.88.0.5:8080" {
					t.Errorf("endpoint chain rules %q", got)
				}
			},
		},
		{
			name:     "hairpin traffic is masqueraded",
			services: []*corev1.Service{web},
			slices:   []*discoveryv1.EndpointSlice{slice("web", readyOn("10.88.0.5", testNode))},
			check: func(t *testing.T, dump string) {
				if got := rulesOf(dump, endpointChain(web, "10.88.0.5")); len(got) == 0 || got[0] != "ip saddr 10.88.0.5 jump mark-for-masquerade" {
					t.Errorf("endpoint chain does not masquerade the endpoint's own traffic: %q", got)
				}
				if got := rulesOf(dump, masqueradingChain); len(got) != 3 || got[2] != "masquerade fully-random" {
					t.Errorf("masquerading chain %q", got)
				}
			},
		},
		{
			name:     "NodePort goes through the external chain and is masqueraded",
			services: []*corev1.Service{svc("web", "10.96.0.10", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort })},
			slices:   []*discoveryv1.EndpointSlice{slice("web", readyOn("10.88.0.5", testNode))},
			check: func(t *testing.T, dump string) {
				if !hasLine(dump, "element ip "+DefaultTable+" service-nodeports { tcp . 30080 : goto "+chainOf("external", web)) {
					t.Errorf("no service-nodeports element:\n%s", dump)
				}
				want := []string{"jump mark-for-masquerade", "goto " + chainOf("service", web)}
				if got := rulesOf(dump, chainOf("external", web)); strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("external chain %q, want %q", got, want)
				}
				if !hasLine(dump, "fib daddr type local meta l4proto . th dport vmap @service-nodeports") {
					t.Errorf("services chain does not look NodePorts up on local addresses")
				}
			},
		},
		{
			name: "sessionAffinity ClientIP keeps a set per endpoint with the timeout",
			services: []*corev1.Service{svc("web", "10.96.0.10", func(s *corev1.Service) {
				s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
				s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](60)}}
			})},
			slices: []*discoveryv1.EndpointSlice{slice("web", readyOn("10.88.0.5", testNode), readyOn("10.88.0.6", testNode))},
			check: func(t *testing.T, dump string) {
				set := hashName("affinity", "ns/web/tcp/http__10.88.0.5/8080")
				if !hasLine(dump, "add set ip "+DefaultTable+" "+set+" { type ipv4_addr ; flags dynamic ; timeout 60s ; }") {
					t.Errorf("no affinity set with a 60s timeout:\n%s", dump)
				}
				rules := rulesOf(dump, chainOf("service", web))
				if len(rules) != 4 || rules[1] != "ip saddr @"+set+" goto "+endpointChain(web, "10.88.0.5") {
					t.Errorf("service chain does not check affinity before balancing: %q", rules)
				}
				if got := rulesOf(dump, endpointChain(web, "10.88.0.5")); len(got) != 3 || got[1] != "update @"+set+" { ip saddr }" {
					t.Errorf("endpoint chain does not record the client: %q", got)
				}
			},
		},
		{
			name: "internalTrafficPolicy Local uses this node's endpoints only",
			services: []*corev1.Service{svc("web", "10.96.0.10", func(s *corev1.Service) {
				s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyLocal)
			})},
			slices: []*discoveryv1.EndpointSlice{slice("web", readyOn("10.88.0.5", testNode), readyOn("10.88.0.6", "node-b"))},
			check: func(t *testing.T, dump string) {
				if !hasLine(dump, "service-ips { 10.96.0.10 . tcp . 80 : goto "+chainOf("local", web)) {
					t.Errorf("ClusterIP does not go to the local chain:\n%s", dump)
				}
				rules := rulesOf(dump, chainOf("local", web))
				if len(rules) != 2 || rules[1] != "numgen random mod 1 vmap { 0 : goto "+endpointChain(web, "10.88.0.5")+" }" {
					t.Errorf("local chain %q", rules)
				}
			},
		},
		{
			name: "internalTrafficPolicy Local without a local endpoint drops",
			services: []*corev1.Service{svc("web", "10.96.0.10", func(s *corev1.Service) {
				s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyLocal)
			})},
			slices: []*discoveryv1.EndpointSlice{slice("web", readyOn("10.88.0.6", "node-b"))},
			check: func(t *testing.T, dump string) {
				if !hasLine(dump, "no-endpoint-services { 10.96.0.10 . tcp . 80 : drop") {
					t.Errorf("no drop for the ClusterIP:\n%s", dump)
				}
			},
		},
		{
			name: "externalTrafficPolicy Local sends NodePort traffic to local endpoints",
			services: []*corev1.Service{svc("web", "10.96.0.10", func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeNodePort
				s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			})},
			slices: []*discoveryv1.EndpointSlice{slice("web", readyOn("10.88.0.5", testNode), readyOn("10.88.0.6", "node-b"))},
			check: func(t *testing.T, dump string) {
				want := []string{
					"ip saddr 10.88.0.0/24 goto " + chainOf("service", web),
					"fib saddr type local jump mark-for-masquerade",
					"fib saddr type local goto " + chainOf("service", web),
					"goto " + chainOf("local", web),
				}
				if got := rulesOf(dump, chainOf("external", web)); strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("external chain %q, want %q", got, want)
				}
				if got := rulesOf(dump, chainOf("local", web)); len(got) != 1 || !strings.Contains(got[0], "mod 1") {
					t.Errorf("local chain %q", got)
				}
				if got := rulesOf(dump, chainOf("service", web)); len(got) != 2 || !strings.Contains(got[1], "mod 2") {
					t.Errorf("ClusterIP traffic is not balanced over both endpoints: %q", got)
				}
			},
		},
		{
			name:     "terminating endpoints are used only when none is ready",
			services: []*corev1.Service{web},
			slices: []*discoveryv1.EndpointSlice{slice("web",
				ep{ip: "10.88.0.5", node: testNode, serving: true, terminating: true},
				ep{ip: "10.88.0.6", node: testNode, terminating: true})},
			check: func(t *testing.T, dump string) {
				rules := rulesOf(dump, chainOf("service", web))
				if len(rules) != 2 || rules[1] != "numgen random mod 1 vmap { 0 : goto "+endpointChain(web, "10.88.0.5")+" }" {
					t.Errorf("service chain %q, want the serving terminating endpoint only", rules)
				}
			},
		},
		{
			name:     "a terminating endpoint is not used beside a ready one",
			services: []*corev1.Service{web},
			slices: []*discoveryv1.EndpointSlice{slice("web",
				ep{ip: "10.88.0.5", node: testNode, serving: true, terminating: true},
				readyOn("10.88.0.6", testNode))},
			check: func(t *testing.T, dump string) {
				if hasLine(dump, "10.88.0.5") {
					t.Errorf("terminating endpoint programmed beside a ready one:\n%s", dump)
				}
			},
		},
		{
			name:     "no endpoints rejects",
			services: []*corev1.Service{svc("web", "10.96.0.10", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort })},
			check: func(t *testing.T, dump string) {
				if !hasLine(dump, "no-endpoint-services { 10.96.0.10 . tcp . 80 : goto reject-chain") {
					t.Errorf("ClusterIP without endpoints is not rejected:\n%s", dump)
				}
				if !hasLine(dump, "no-endpoint-nodeports { tcp . 30080 : goto reject-chain") {
					t.Errorf("NodePort without endpoints is not rejected:\n%s", dump)
				}
				if hasLine(dump, "service-ips { 10.96.0.10") {
					t.Errorf("ClusterIP without endpoints is in service-ips")
				}
			},
		},
		{
			name: "headless and ExternalName Services are not programmed",
			services: []*corev1.Service{
				svc("headless", corev1.ClusterIPNone),
				{ObjectMeta: metav1.ObjectMeta{Name: "ext", Namespace: "ns"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}},
			},
			slices: []*discoveryv1.EndpointSlice{slice("headless", readyOn("10.88.0.5", testNode))},
			check: func(t *testing.T, dump string) {
				if hasLine(dump, "headless") || hasLine(dump, "ext/") {
					t.Errorf("headless or ExternalName Service programmed:\n%s", dump)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, program(t, knftables.NewFake(knftables.IPv4Family, DefaultTable), tt.services, tt.slices))
		})
	}
}

// TestStaleServiceRemoved: a sync after a Service went leaves nothing of
// it; a restarted proxy (its first sync rewrites the table whole) also
// removes a chain, rule and set added by hand.
func TestStaleServiceRemoved(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, DefaultTable)
	p := newProxy(Config{NodeName: testNode, PodCIDR: "10.88.0.0/24"}, nil, fake)
	affine := func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP }
	dump := programWith(t, p, fake, []*corev1.Service{svc("web", "10.96.0.10", affine), svc("api", "10.96.0.11")},
		[]*discoveryv1.EndpointSlice{slice("web", readyOn("10.88.0.5", testNode)), slice("api", readyOn("10.88.0.6", testNode))})
	if !hasLine(dump, "ns/web/") {
		t.Fatalf("web not programmed:\n%s", dump)
	}
	tx := fake.NewTransaction()
	tx.Add(&knftables.Chain{Name: "by-hand"})
	tx.Add(&knftables.Rule{Chain: "by-hand", Rule: "drop"})
	tx.Add(&knftables.Rule{Chain: servicesChain, Rule: "ip daddr 10.96.0.99 drop"})
	tx.Add(&knftables.Set{Name: "hand-set", Type: "ipv4_addr"})
	if err := fake.Run(context.Background(), tx); err != nil {
		t.Fatal(err)
	}
	api := []*corev1.Service{svc("api", "10.96.0.11")}
	apiSlices := []*discoveryv1.EndpointSlice{slice("api", readyOn("10.88.0.6", testNode))}
	dump = programWith(t, p, fake, api, apiSlices)
	for _, gone := range []string{"ns/web/", "10.96.0.10", "10.88.0.5"} {
		if hasLine(dump, gone) {
			t.Errorf("%q still in the table:\n%s", gone, dump)
		}
	}
	if !hasLine(dump, "ns/api/") {
		t.Errorf("api no longer programmed:\n%s", dump)
	}
	dump = program(t, fake, api, apiSlices)
	for _, gone := range []string{"by-hand", "10.96.0.99", "hand-set"} {
		if hasLine(dump, gone) {
			t.Errorf("%q still in the table after a restart:\n%s", gone, dump)
		}
	}
}

// TestTableTakenOver: when another proxy (another cluster's on this host)
// rewrote the table, the next sync writes it whole instead of a
// difference from what is no longer there.
func TestTableTakenOver(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, DefaultTable)
	a := newProxy(Config{NodeName: testNode, PodCIDR: "10.88.0.0/24"}, nil, fake)
	b := newProxy(Config{NodeName: testNode, PodCIDR: "10.88.0.0/24"}, nil, fake)
	webA := []*corev1.Service{svc("web", "10.96.0.10")}
	slicesA := []*discoveryv1.EndpointSlice{slice("web", readyOn("10.88.0.5", testNode))}
	programWith(t, a, fake, webA, slicesA)
	programWith(t, b, fake, []*corev1.Service{svc("other", "10.96.0.20")}, nil)
	slicesA = []*discoveryv1.EndpointSlice{slice("web", readyOn("10.88.0.5", testNode), readyOn("10.88.0.6", testNode))}
	dump := programWith(t, a, fake, webA, slicesA)
	if hasLine(dump, "10.96.0.20") || !hasLine(dump, "mod 2") {
		t.Errorf("a's sync after b's did not rewrite the table:\n%s", dump)
	}
}

// TestPartialSyncEqualsFullSync: after each of a series of changes, the
// table a proxy wrote difference by difference is the table a fresh
// proxy writes whole.
func TestPartialSyncEqualsFullSync(t *testing.T) {
	nodePort := func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }
	affine := func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP }
	local := func(s *corev1.Service) {
		s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyLocal)
	}
	steps := []struct {
		services []*corev1.Service
		slices   []*discoveryv1.EndpointSlice
	}{
		{[]*corev1.Service{svc("web", "10.96.0.10")}, nil},
		{[]*corev1.Service{svc("web", "10.96.0.10", nodePort)}, []*discoveryv1.EndpointSlice{slice("web", readyOn("10.88.0.5", testNode), readyOn("10.88.0.6", testNode))}},
		{[]*corev1.Service{svc("web", "10.96.0.10", nodePort, affine), svc("api", "10.96.0.11", local)}, []*discoveryv1.EndpointSlice{slice("web", readyOn("10.88.0.5", testNode)), slice("api", readyOn("10.88.0.7", "node-b"))}},
		{[]*corev1.Service{svc("web", "10.96.0.10", affine), svc("api", "10.96.0.11", local)}, []*discoveryv1.EndpointSlice{slice("web", readyOn("10.88.0.6", testNode)), slice("api", readyOn("10.88.0.7", testNode))}},
		{[]*corev1.Service{svc("api", "10.96.0.11")}, []*discoveryv1.EndpointSlice{slice("api", ep{ip: "10.88.0.7", node: testNode, serving: true, terminating: true})}},
		{nil, nil},
	}
	fake := knftables.NewFake(knftables.IPv4Family, DefaultTable)
	p := newProxy(Config{NodeName: testNode, PodCIDR: "10.88.0.0/24"}, nil, fake)
	for i, step := range steps {
		partial := programWith(t, p, fake, step.services, step.slices)
		full := program(t, knftables.NewFake(knftables.IPv4Family, DefaultTable), step.services, step.slices)
		// Map elements keep the order they were added in.
		if sortedLines(partial) != sortedLines(full) {
			t.Fatalf("step %d: partial sync wrote\n%s\nfull sync wrote\n%s", i, partial, full)
		}
	}
}

func sortedLines(s string) string {
	lines := strings.Split(s, "\n")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestRecordChanges: an Event only when a port's programmed endpoints
// change, not on every sync.
func TestRecordChanges(t *testing.T) {
	p := newProxy(Config{NodeName: testNode}, nil, knftables.NewFake(knftables.IPv4Family, DefaultTable))
	rec := record.NewFakeRecorder(10)
	p.recorder = rec
	web := svc("web", "10.96.0.10")
	sync := func(eps ...ep) {
		rs := buildRuleset(servicePorts([]*corev1.Service{web}, []*discoveryv1.EndpointSlice{slice("web", eps...)}), testNode, "")
		p.recordChanges(rs.programmed, 0)
	}
	p.services = corelisters.NewServiceLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}))
	sync(readyOn("10.88.0.5", testNode), readyOn("10.88.0.6", testNode))
	sync(readyOn("10.88.0.5", testNode), readyOn("10.88.0.6", testNode))
	sync(readyOn("10.88.0.5", testNode))
	sync(ep{ip: "10.88.0.5", node: testNode, serving: true, terminating: true})
	want := []string{
		"Normal EndpointsProgrammed Programmed 2 ready endpoints for 10.96.0.10:80/TCP on node node-a (nftables, 0s)",
		"Normal EndpointsProgrammed Programmed 1 ready endpoints for 10.96.0.10:80/TCP on node node-a (nftables, 0s)",
		"Normal EndpointsProgrammed Programmed 1 terminating endpoints for 10.96.0.10:80/TCP on node node-a (nftables, 0s)",
	}
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestServiceChains(t *testing.T) {
	chains := []string{
		hashName("service", "ns/web/tcp/http"), hashName("endpoint", "ns/web/tcp/http__10.88.0.5/8080"),
		hashName("service", "ns/web2/tcp/http"), hashName("external", "ns/web/udp/"), "services", "reject-chain",
	}
	got := serviceChains(chains, "ns", "web")
	want := []string{chains[0], chains[1], chains[3]}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("serviceChains = %q, want %q", got, want)
	}
}

// TestSamePortTwoProtocols: a Service serving port 80 over TCP and UDP
// gets both; when it keeps only one protocol, the other's rules go, and
// a partial sync writes what a full one does (conformance: serve
// endpoints on same port and different protocols).
func TestSamePortTwoProtocols(t *testing.T) {
	ports := func(protos ...corev1.Protocol) func(*corev1.Service) {
		return func(s *corev1.Service) {
			s.Spec.Ports = nil
			for _, p := range protos {
				s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: strings.ToLower(string(p)) + "-port", Port: 80, Protocol: p})
			}
		}
	}
	slices := func(protos ...corev1.Protocol) []*discoveryv1.EndpointSlice {
		s := slice("dual", readyOn("10.88.0.5", testNode))
		s.Ports = nil
		for _, p := range protos {
			s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: ptr.To(strings.ToLower(string(p)) + "-port"), Port: ptr.To[int32](80), Protocol: ptr.To(p)})
		}
		return []*discoveryv1.EndpointSlice{s}
	}
	fake := knftables.NewFake(knftables.IPv4Family, DefaultTable)
	p := newProxy(Config{NodeName: testNode, PodCIDR: "10.88.0.0/24"}, nil, fake)
	steps := []struct {
		protos []corev1.Protocol
		want   []string
		gone   []string
	}{
		{[]corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP}, []string{"10.96.0.30 . tcp . 80", "10.96.0.30 . udp . 80"}, nil},
		{[]corev1.Protocol{corev1.ProtocolTCP}, []string{"10.96.0.30 . tcp . 80"}, []string{"10.96.0.30 . udp . 80"}},
		{[]corev1.Protocol{corev1.ProtocolUDP}, []string{"10.96.0.30 . udp . 80"}, []string{"10.96.0.30 . tcp . 80"}},
	}
	for i, step := range steps {
		services := []*corev1.Service{svc("dual", "10.96.0.30", ports(step.protos...))}
		partial := programWith(t, p, fake, services, slices(step.protos...))
		full := program(t, knftables.NewFake(knftables.IPv4Family, DefaultTable), services, slices(step.protos...))
		if sortedLines(partial) != sortedLines(full) {
			t.Fatalf("step %d: partial sync wrote\n%s\nfull sync wrote\n%s", i, partial, full)
		}
		// A port the Service no longer serves is refused, not sent on.
		if !hasLine(partial, "element ip glassplane-proxy cluster-ips { 10.96.0.30 : goto reject-chain }") {
			t.Errorf("step %d: the ClusterIP is not in the cluster-ips map:\n%s", i, partial)
		}
		for _, w := range step.want {
			if !hasLine(partial, w) {
				t.Errorf("step %d: %q not programmed:\n%s", i, w, partial)
			}
		}
		for _, g := range step.gone {
			if hasLine(partial, g) {
				t.Errorf("step %d: %q still programmed:\n%s", i, g, partial)
			}
		}
	}
}
