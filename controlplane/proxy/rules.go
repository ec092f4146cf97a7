package proxy

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/knftables"
)

// Names in the table, kube-proxy's where Glassplane does the same thing.
const (
	servicesChain     = "services"
	masqueradingChain = "masquerading"
	markMasqChain     = "mark-for-masquerade"
	rejectChain       = "reject-chain"
	serviceCheckChain = "service-endpoints-check"
	nodePortCheck     = "nodeport-endpoints-check"
	localnetChain     = "localnet-guard"
	clusterIPsCheck   = "cluster-ips-check"

	serviceIPsMap          = "service-ips"
	serviceNodePortsMap    = "service-nodeports"
	noEndpointServicesMap  = "no-endpoint-services"
	noEndpointNodePortsMap = "no-endpoint-nodeports"
	// clusterIPsMap holds every programmed ClusterIP: a new connection
	// still addressed to one after DNAT asked for a port the Service does
	// not have (kube-proxy's cluster-ips set).
	clusterIPsMap = "cluster-ips"
	// ownerSet holds one random mark, the proxy's that wrote the table
	// whole last.
	ownerSet = "proxy-owner"

	// masqueradeMark is the packet mark bit that asks the masquerading
	// chain to masquerade a connection (kube-proxy's 0x4000).
	masqueradeMark = "0x4000"
)

// baseChain is a chain attached to a netfilter hook.
type baseChain struct {
	name     string
	typ      knftables.BaseChainType
	hook     knftables.BaseChainHook
	priority knftables.BaseChainPriority
	jumps    []string
}

// baseChains are the table's hooks, kube-proxy's minus firewalls: DNAT in
// prerouting (traffic from pods and the network) and output (from the
// host), masquerading in postrouting, and the filter checks that reject
// new connections to Services without endpoints or to ports a ClusterIP's
// Service does not serve, and guard loopback.
var baseChains = []baseChain{
	{"nat-prerouting", knftables.NATType, knftables.PreroutingHook, knftables.DNATPriority, []string{"jump " + servicesChain}},
	{"nat-output", knftables.NATType, knftables.OutputHook, knftables.DNATPriority, []string{"jump " + servicesChain}},
	{"nat-postrouting", knftables.NATType, knftables.PostroutingHook, knftables.SNATPriority, []string{"jump " + masqueradingChain}},
	{"filter-input", knftables.FilterType, knftables.InputHook, "filter - 10", []string{
		"ct state new jump " + nodePortCheck, "ct state new jump " + serviceCheckChain, "jump " + localnetChain}},
	{"filter-forward", knftables.FilterType, knftables.ForwardHook, "filter - 10", []string{
		"ct state new jump " + serviceCheckChain, "ct state new jump " + clusterIPsCheck}},
	{"filter-output", knftables.FilterType, knftables.OutputHook, "filter - 10", []string{
		"ct state new jump " + serviceCheckChain, "ct state new jump " + nodePortCheck, "ct state new jump " + clusterIPsCheck}},
}

// ruleset is the desired content of the table, built by buildRuleset and
// written by (*Proxy).apply.
type ruleset struct {
	chains []*knftables.Chain
	rules  []*knftables.Rule
	maps   []*knftables.Map
	// sets are the affinity sets; their elements are written by packets.
	sets     []*knftables.Set
	elements []*knftables.Element
	// programmed is, per Service port key, what was programmed for it.
	programmed map[string]programmed
}

// programmed is what one Service port was programmed with, for the Event
// the proxy records when it changes.
type programmed struct {
	servicePort *servicePort
	endpoints   []endpoint
	terminating bool
}

func (r *ruleset) chain(name string, rules ...string) {
	r.chains = append(r.chains, &knftables.Chain{Name: name})
	r.rule(name, rules...)
}

func (r *ruleset) rule(chain string, rules ...string) {
	for _, rule := range rules {
		r.rules = append(r.rules, &knftables.Rule{Chain: chain, Rule: rule})
	}
}

// hashName is kube-proxy's chain naming: prefix, the first 8 characters
// of the base32 SHA-256 of the full name (unique), then the name itself
// for readers, cut to stay within nftables' 256-character names.
func hashName(prefix, name string) string {
	sum := sha256.Sum256([]byte(name))
	n := prefix + "-" + strings.ToLower(base32.StdEncoding.EncodeToString(sum[:])[:8]) + "-" + name
	if len(n) > 200 {
		n = n[:200]
	}
	return n
}

func endpointChainName(sp *servicePort, e endpoint) string {
	return hashName("endpoint", sp.chainBase()+"__"+e.IP+"/"+fmt.Sprint(e.Port))
}

func affinitySetName(sp *servicePort, e endpoint) string {
	return hashName("affinity", sp.chainBase()+"__"+e.IP+"/"+fmt.Sprint(e.Port))
}

// buildRuleset is the whole table for ports on nodeName, with podCIDR the
// source of in-cluster traffic (traffic to a ClusterIP from elsewhere is
// masqueraded; none is when podCIDR is empty). It is a pure function of
// its input.
func buildRuleset(ports []*servicePort, nodeName, podCIDR string) *ruleset {
	r := &ruleset{programmed: map[string]programmed{}}
	for _, b := range baseChains {
		r.chains = append(r.chains, &knftables.Chain{Name: b.name, Type: knftables.PtrTo(b.typ), Hook: knftables.PtrTo(b.hook), Priority: knftables.PtrTo(b.priority)})
		r.rule(b.name, b.jumps...)
	}
	r.chain(markMasqChain, "meta mark set meta mark | "+masqueradeMark)
	r.chain(masqueradingChain,
		"meta mark & "+masqueradeMark+" == 0 return",
		"meta mark set meta mark ^ "+masqueradeMark,
		"masquerade fully-random")
	r.chain(rejectChain, "meta l4proto tcp reject with tcp reset", "reject with icmp host-unreachable")
	r.chain(servicesChain,
		"ip daddr . meta l4proto . th dport vmap @"+serviceIPsMap,
		"fib daddr type local meta l4proto . th dport vmap @"+serviceNodePortsMap)
	r.chain(serviceCheckChain, "ip daddr . meta l4proto . th dport vmap @"+noEndpointServicesMap)
	r.chain(nodePortCheck, "fib daddr type local meta l4proto . th dport vmap @"+noEndpointNodePortsMap)
	// route_localnet lets DNAT send pod traffic to 127.0.0.1 endpoints and
	// 127.0.0.1 NodePorts out to pods; this guard (kube-proxy's answer to
	// CVE-2020-8558) keeps anything else from reaching loopback from
	// outside.
	r.chain(localnetChain, `iifname != "lo" ip saddr != 127.0.0.0/8 ip daddr 127.0.0.0/8 ct state != { established, related } ct status & dnat == 0 drop`)
	// Reject traffic to invalid ports of ClusterIPs, as kube-proxy does: the
	// filter hooks come after DNAT, so what is still addressed to a
	// ClusterIP matched none of its Service's ports.
	r.chain(clusterIPsCheck, "ip daddr vmap @"+clusterIPsMap)
	r.maps = []*knftables.Map{
		{Name: serviceIPsMap, Type: "ipv4_addr . inet_proto . inet_service : verdict"},
		{Name: serviceNodePortsMap, Type: "inet_proto . inet_service : verdict"},
		{Name: noEndpointServicesMap, Type: "ipv4_addr . inet_proto . inet_service : verdict"},
		{Name: noEndpointNodePortsMap, Type: "inet_proto . inet_service : verdict"},
		{Name: clusterIPsMap, Type: "ipv4_addr : verdict"},
	}
	clusterIPs := map[string]bool{}
	for _, sp := range ports {
		r.addServicePort(sp, nodeName, podCIDR)
		if !clusterIPs[sp.ClusterIP] {
			clusterIPs[sp.ClusterIP] = true
			r.elements = append(r.elements, &knftables.Element{Map: clusterIPsMap, Key: []string{sp.ClusterIP}, Value: []string{"goto " + rejectChain}})
		}
	}
	return r
}

// addServicePort programs one Service port: kube-proxy's cluster policy
// chain (service-...), a local policy chain (local-...) when a traffic
// policy is Local, an external chain for its NodePort, an endpoint chain
// per endpoint, the map elements that lead there, and rejects when no
// endpoint can answer.
func (r *ruleset) addServicePort(sp *servicePort, nodeName, podCIDR string) {
	proto := strings.ToLower(string(sp.Protocol))
	comment := knftables.PtrTo(sp.key())
	clusterEps, clusterTerminating := usable(sp.Endpoints, false, nodeName)
	localEps, localTerminating := usable(sp.Endpoints, true, nodeName)

	clusterChain := hashName("service", sp.chainBase())
	localChain := hashName("local", sp.chainBase())
	externalChain := hashName("external", sp.chainBase())
	needLocal := sp.InternalLocal || (sp.ExternalLocal && sp.NodePort > 0)
	endpointChains := map[string]bool{}
	writeEndpoints := func(chain string, eps []endpoint, first ...string) {
		r.chains = append(r.chains, &knftables.Chain{Name: chain})
		r.rule(chain, first...)
		if len(eps) == 0 {
			return
		}
		var vmap []string
		for i, e := range eps {
			ec := endpointChainName(sp, e)
			if sp.AffinitySeconds > 0 {
				r.rule(chain, fmt.Sprintf("ip saddr @%s goto %s", affinitySetName(sp, e), ec))
			}
			vmap = append(vmap, fmt.Sprintf("%d : goto %s", i, ec))
			endpointChains[ec] = true
		}
		r.rule(chain, fmt.Sprintf("numgen random mod %d vmap { %s }", len(eps), strings.Join(vmap, " , ")))
	}

	// Internal traffic: the ClusterIP.
	internalEps, internalTerminating, internalChain := clusterEps, clusterTerminating, clusterChain
	if sp.InternalLocal {
		internalEps, internalTerminating, internalChain = localEps, localTerminating, localChain
	}
	r.programmed[sp.key()+"/"+proto] = programmed{servicePort: sp, endpoints: internalEps, terminating: internalTerminating}
	ipKey := []string{sp.ClusterIP, proto, fmt.Sprint(sp.Port)}
	switch {
	case len(internalEps) > 0:
		r.elements = append(r.elements, &knftables.Element{Map: serviceIPsMap, Key: ipKey, Value: []string{"goto " + internalChain}, Comment: comment})
	case sp.InternalLocal && len(clusterEps) > 0:
		// Endpoints exist, none here: kube-proxy drops rather than rejects.
		r.elements = append(r.elements, &knftables.Element{Map: noEndpointServicesMap, Key: ipKey, Value: []string{"drop"}, Comment: comment})
	default:
		r.elements = append(r.elements, &knftables.Element{Map: noEndpointServicesMap, Key: ipKey, Value: []string{"goto " + rejectChain}, Comment: comment})
	}

	// Traffic to the ClusterIP from outside the pod network (the host,
	// another machine routing the service range here) may leave for a pod
	// that would answer it directly: it is masqueraded.
	var masq []string
	if podCIDR != "" {
		masq = []string{fmt.Sprintf("ip daddr %s %s dport %d ip saddr != %s jump %s", sp.ClusterIP, proto, sp.Port, podCIDR, markMasqChain)}
	}
	if sp.InternalLocal {
		writeEndpoints(clusterChain, clusterEps)
		writeEndpoints(localChain, localEps, masq...)
	} else {
		writeEndpoints(clusterChain, clusterEps, masq...)
		if needLocal {
			writeEndpoints(localChain, localEps)
		}
	}

	// External traffic: the NodePort on every address of the node.
	if sp.NodePort > 0 {
		npKey := []string{proto, fmt.Sprint(sp.NodePort)}
		externalEps := clusterEps
		if sp.ExternalLocal {
			externalEps = localEps
		}
		if len(externalEps) == 0 {
			verdict := "goto " + rejectChain
			if sp.ExternalLocal && len(clusterEps) > 0 {
				verdict = "drop"
			}
			r.elements = append(r.elements, &knftables.Element{Map: noEndpointNodePortsMap, Key: npKey, Value: []string{verdict}, Comment: comment})
		} else {
			r.elements = append(r.elements, &knftables.Element{Map: serviceNodePortsMap, Key: npKey, Value: []string{"goto " + externalChain}, Comment: comment})
			r.chains = append(r.chains, &knftables.Chain{Name: externalChain})
			if sp.ExternalLocal {
				// Local policy keeps the client's address; traffic from the
				// node itself and from pods still goes anywhere (kube-proxy's
				// short-circuits).
				if podCIDR != "" {
					r.rule(externalChain, fmt.Sprintf("ip saddr %s goto %s", podCIDR, clusterChain))
				}
				r.rule(externalChain,
					"fib saddr type local jump "+markMasqChain,
					"fib saddr type local goto "+clusterChain,
					"goto "+localChain)
			} else {
				r.rule(externalChain, "jump "+markMasqChain, "goto "+clusterChain)
			}
		}
	}

	// The endpoint chains, each endpoint once (it may be in both policies).
	for _, e := range sp.Endpoints {
		ec := endpointChainName(sp, e)
		if !endpointChains[ec] {
			continue
		}
		r.chains = append(r.chains, &knftables.Chain{Name: ec})
		// Hairpin: a pod reaching itself through the Service must see the
		// reply come from elsewhere.
		r.rule(ec, fmt.Sprintf("ip saddr %s jump %s", e.IP, markMasqChain))
		if sp.AffinitySeconds > 0 {
			set := affinitySetName(sp, e)
			r.sets = append(r.sets, &knftables.Set{Name: set, Type: "ipv4_addr", Flags: []knftables.SetFlag{knftables.DynamicFlag}, Timeout: knftables.PtrTo(time.Duration(sp.AffinitySeconds) * time.Second)})
			r.rule(ec, fmt.Sprintf("update @%s { ip saddr }", set))
		}
		r.rule(ec, fmt.Sprintf("meta l4proto %s dnat to %s", proto, e.String()))
	}
}
