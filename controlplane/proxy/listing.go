package proxy

import (
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strings"

	"sigs.k8s.io/knftables"
)

// Rules lists, as nft prints them, what the kernel holds for the Service
// namespace/name: the service-ips, service-nodeports and no-endpoint map
// elements of its ports, then its chains (service-, local-, external-,
// endpoint-). With an empty name it is the whole table. It reads the
// kernel, not the proxy's memory, so it shows what packets meet.
func (p *Proxy) Rules(ctx context.Context, namespace, name string) (string, error) {
	if name == "" {
		return nftText(ctx, "list", "table", "ip", p.cfg.Table)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Service %s/%s in table ip %s\n", namespace, name, p.cfg.Table)
	prefix := namespace + "/" + name + ":"
	for _, m := range []string{serviceIPsMap, serviceNodePortsMap, noEndpointServicesMap, noEndpointNodePortsMap} {
		elems, err := p.nft.ListElements(ctx, "map", m)
		if err != nil {
			if knftables.IsNotFound(err) {
				continue
			}
			return "", fmt.Errorf("failed to list map %s: %w", m, err)
		}
		for _, e := range elems {
			if e.Comment == nil || !strings.HasPrefix(*e.Comment, prefix) {
				continue
			}
			fmt.Fprintf(&b, "map %s: %s : %s comment %q\n", m, strings.Join(e.Key, " . "), strings.Join(e.Value, " . "), *e.Comment)
		}
	}
	// The chain names come from what the proxy wrote (listing every chain
	// of a large table takes nft seconds); their rules from the kernel.
	var chains []string
	p.mu.Lock()
	if p.written != nil {
		for c := range p.written.chains {
			chains = append(chains, c)
		}
	}
	p.mu.Unlock()
	sort.Strings(chains)
	for _, c := range serviceChains(chains, namespace, name) {
		out, err := nftText(ctx, "list", "chain", "ip", p.cfg.Table, c)
		if err != nil {
			return "", err
		}
		// nft wraps the chain in its table; one table line heads the text.
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		if len(lines) > 2 && strings.HasPrefix(lines[0], "table ") {
			lines = lines[1 : len(lines)-1]
		}
		for _, l := range lines {
			b.WriteString(strings.TrimPrefix(l, "\t") + "\n")
		}
	}
	return b.String(), nil
}

// serviceChains picks the chains of the Service namespace/name from
// chains: named <prefix>-<hash>-<namespace>/<name>/<protocol>/<port>...
func serviceChains(chains []string, namespace, name string) []string {
	var out []string
	for _, c := range chains {
		for _, prefix := range []string{"service-", "local-", "external-", "endpoint-"} {
			rest, ok := strings.CutPrefix(c, prefix)
			if !ok || len(rest) < 10 {
				continue
			}
			if strings.HasPrefix(rest[9:], namespace+"/"+name+"/") {
				out = append(out, c)
			}
		}
	}
	return out
}

// nftText runs nft and returns what it printed.
func nftText(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "nft", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("failed to run nft %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
