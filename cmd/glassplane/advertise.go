package main

import (
	"fmt"
	"net/netip"
	"net/url"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// advertiseAddress returns where the kubernetes Service's endpoints point:
// the address set by --advertise-address, else the API's bound host, else
// (when it listens on every address, or on a name) the host's
// default-route address as kube-apiserver picks it; with the API's bound
// port.
func advertiseAddress(flag, apiURL string) (netip.AddrPort, error) {
	u, err := url.Parse(apiURL)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("failed to parse the API URL %q: %w", apiURL, err)
	}
	bound, err := netip.ParseAddrPort(u.Host)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("failed to parse the API address %q: %w", u.Host, err)
	}
	if flag != "" {
		addr, err := netip.ParseAddr(flag)
		if err != nil || !addr.Is4() {
			return netip.AddrPort{}, fmt.Errorf("invalid --advertise-address %q: want an IPv4 address", flag)
		}
		return netip.AddrPortFrom(addr, bound.Port()), nil
	}
	addr := bound.Addr().Unmap()
	if addr.Is4() && !addr.IsUnspecified() {
		return netip.AddrPortFrom(addr, bound.Port()), nil
	}
	ip, err := utilnet.ChooseHostInterface()
	if err != nil {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), bound.Port()), nil
	}
	chosen, ok := netip.AddrFromSlice(ip.To4())
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("failed to advertise the host's address %s: not IPv4; set --advertise-address", ip)
	}
	return netip.AddrPortFrom(chosen, bound.Port()), nil
}
