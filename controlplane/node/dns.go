package node

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/glassplane/glassplane/controlplane/node/runtime"
)

// The kubelet's limits on a pod's resolv.conf (Kubernetes' validation
// constants MaxDNSNameservers, MaxDNSSearchPaths, MaxDNSSearchListChars),
// and the longest search domain it keeps.
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
	maxDNSSearchLength    = 253
)

// DefaultResolvConf is the host file the pods of dnsPolicy Default get their
// resolvers from, as the kubelet's --resolv-conf.
const DefaultResolvConf = "/etc/resolv.conf"

// defaultDNSOptions are the options of a ClusterFirst pod.
var defaultDNSOptions = []string{"ndots:5"}

// dnsEvent is a warning the kubelet records on the pod while forming its
// DNS configuration.
type dnsEvent struct{ reason, message string }

// podDNS returns the pod's resolv.conf as the kubelet's
// dns.Configurer.GetPodDNS forms it: by dnsPolicy, from the cluster DNS
// servers and domain and the host's resolv.conf (host), then with the
// pod's dnsConfig merged in and cut to the resolver's limits.
func podDNS(pod *corev1.Pod, clusterDNS []string, clusterDomain string, host runtime.DNSConfig) (runtime.DNSConfig, []dnsEvent) {
	var events []dnsEvent
	cfg := runtime.DNSConfig{
		Nameservers: slices.Clone(host.Nameservers),
		Searches:    slices.Clone(host.Searches),
		Options:     slices.Clone(host.Options),
	}
	switch podDNSType(pod) {
	case corev1.DNSNone:
		cfg = runtime.DNSConfig{}
	case corev1.DNSClusterFirst:
		if len(clusterDNS) > 0 {
			cfg.Nameservers = slices.Clone(clusterDNS)
			cfg.Searches = clusterSearches(cfg.Searches, pod.Namespace, clusterDomain)
			cfg.Options = slices.Clone(defaultDNSOptions)
			break
		}
		events = append(events, dnsEvent{"MissingClusterDNS", fmt.Sprintf(
			"pod: %q. kubelet does not have ClusterDNS IP configured and cannot create Pod using %q policy. Falling back to %q policy.",
			pod.Name+"_"+pod.Namespace+"("+string(pod.UID)+")", corev1.DNSClusterFirst, corev1.DNSDefault)})
	}
	if dc := pod.Spec.DNSConfig; dc != nil {
		cfg.Nameservers = omitDuplicates(append(cfg.Nameservers, dc.Nameservers...))
		cfg.Searches = omitDuplicates(append(cfg.Searches, dc.Searches...))
		cfg.Options = mergeDNSOptions(cfg.Options, dc.Options)
	}
	var cut string
	if cfg.Searches, cut = searchesFitLimits(cfg.Searches); cut != "" {
		events = append(events, dnsEvent{"DNSConfigForming", cut})
	}
	if len(cfg.Nameservers) > maxDNSNameservers {
		cfg.Nameservers = cfg.Nameservers[:maxDNSNameservers]
		events = append(events, dnsEvent{"DNSConfigForming", "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: " + strings.Join(cfg.Nameservers, " ")})
	}
	return cfg, events
}

// podDNSType is the policy that forms the pod's configuration: None,
// ClusterFirst (also ClusterFirstWithHostNet, and ClusterFirst off the
// host network) or Default (also ClusterFirst on the host network). An
// unknown policy, which the API server refuses, is ClusterFirst.
func podDNSType(pod *corev1.Pod) corev1.DNSPolicy {
	switch pod.Spec.DNSPolicy {
	case corev1.DNSNone:
		return corev1.DNSNone
	case corev1.DNSDefault:
		return corev1.DNSDefault
	case corev1.DNSClusterFirst:
		if pod.Spec.HostNetwork {
			return corev1.DNSDefault
		}
	}
	return corev1.DNSClusterFirst
}

// clusterSearches puts <ns>.svc.<domain>, svc.<domain> and <domain>
// before the host's search domains.
func clusterSearches(host []string, namespace, domain string) []string {
	if domain == "" {
		return host
	}
	cluster := []string{namespace + ".svc." + domain, "svc." + domain, domain}
	return omitDuplicates(append(cluster, host...))
}

// omitDuplicates keeps the first of each string, in order.
func omitDuplicates(s []string) []string {
	seen := map[string]bool{}
	out := s[:0]
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// mergeDNSOptions adds the pod's options to existing ones; a pod's option
// replaces one of the same name. The kubelet leaves their order to a Go
// map; here they are sorted, so a pod's file is the same on every start.
func mergeDNSOptions(existing []string, pod []corev1.PodDNSConfigOption) []string {
	byName := map[string]string{}
	for _, op := range existing {
		name, value, _ := strings.Cut(op, ":")
		byName[name] = value
	}
	for _, op := range pod {
		byName[op.Name] = ""
		if op.Value != nil {
			byName[op.Name] = *op.Value
		}
	}
	out := make([]string, 0, len(byName))
	for name, value := range byName {
		if value != "" {
			name += ":" + value
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// searchesFitLimits cuts the search list to 32 domains, drops domains
// longer than 253 characters and then drops domains from the end until the
// line is at most 2048 characters. When it cut anything it also returns
// the kubelet's event message.
func searchesFitLimits(s []string) ([]string, string) {
	exceeded := false
	if len(s) > maxDNSSearchPaths {
		s = s[:maxDNSSearchPaths]
		exceeded = true
	}
	kept := s[:0]
	for _, d := range s {
		if len(d) > maxDNSSearchLength {
			exceeded = true
			continue
		}
		kept = append(kept, d)
	}
	s = kept
	if n := len(strings.Join(s, " ")); n > maxDNSSearchListChars {
		cut, cutLen := 0, 0
		for i := len(s) - 1; i >= 0; i-- {
			cutLen += len(s[i]) + 1
			cut++
			if n-cutLen <= maxDNSSearchListChars {
				break
			}
		}
		s = s[:len(s)-cut]
		exceeded = true
	}
	if !exceeded {
		return s, ""
	}
	return s, "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: " + strings.Join(s, " ")
}

// parseResolvConf reads the nameservers, search domains (the last search
// line; "." dropped, trailing dots trimmed) and options of a resolv.conf,
// as the kubelet's parseResolvConf.
func parseResolvConf(data []byte) runtime.DNSConfig {
	var cfg runtime.DNSConfig
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "nameserver":
			if len(fields) > 1 {
				cfg.Nameservers = append(cfg.Nameservers, fields[1])
			}
		case "search":
			cfg.Searches = []string{}
			for _, d := range fields[1:] {
				if d != "." {
					cfg.Searches = append(cfg.Searches, strings.TrimSuffix(d, "."))
				}
			}
		case "options":
			cfg.Options = mergeResolvOptions(cfg.Options, fields[1:])
		}
	}
	return cfg
}

// mergeResolvOptions appends options; a later one replaces an earlier one
// of the same name.
func mergeResolvOptions(opts []string, more []string) []string {
	for _, op := range more {
		name, _, _ := strings.Cut(op, ":")
		opts = slices.DeleteFunc(opts, func(o string) bool {
			n, _, _ := strings.Cut(o, ":")
			return n == name
		})
		opts = append(opts, op)
	}
	return opts
}

// hostDNS reads the node's resolv.conf; a missing file means no resolvers.
func hostDNS(path string) (runtime.DNSConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return runtime.DNSConfig{}, nil
		}
		return runtime.DNSConfig{}, fmt.Errorf("failed to read the node's resolv.conf %q: %w", path, err)
	}
	return parseResolvConf(data), nil
}

// podDNS is the pod's resolv.conf for the runtime, with the kubelet's
// warnings recorded on the pod. When the host's file cannot be read the
// pod keeps the runtime's default, as a pod without cluster DNS would.
func (a *Agent) podDNS(pod *corev1.Pod) *runtime.DNSConfig {
	host, err := hostDNS(a.cfg.ResolvConf)
	if err != nil {
		a.log.Warn("failed to read the host's DNS configuration", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		return nil
	}
	cfg, events := podDNS(pod, a.cfg.ClusterDNS, a.cfg.ClusterDomain, host)
	for _, e := range events {
		a.recorder.Event(podRef(pod), corev1.EventTypeWarning, e.reason, e.message)
	}
	return &cfg
}
