package endpointslicemirroring

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	netutils "k8s.io/utils/net"
)

// desiredSlice is the content of one mirrored slice: the endpoints of one
// address type that share one set of ports.
type desiredSlice struct {
	key         string
	addressType discoveryv1.AddressType
	ports       []discoveryv1.EndpointPort
	endpoints   []discoveryv1.Endpoint
	// index finds an endpoint in endpoints by its identity.
	index map[endpointID]int
}

// endpointID is what makes two mirrored endpoints the same one, as
// upstream's endpoint hash: address, hostname and target.
type endpointID struct {
	address, hostname, namespace, name string
}

// idOf is ep's identity.
func idOf(ep discoveryv1.Endpoint) endpointID {
	id := endpointID{address: strings.Join(ep.Addresses, ",")}
	if ep.Hostname != nil {
		id.hostname = *ep.Hostname
	}
	if ep.TargetRef != nil {
		id.namespace, id.name = ep.TargetRef.Namespace, ep.TargetRef.Name
	}
	return id
}

// insert adds ep, replacing an earlier endpoint with the same identity.
func (d *desiredSlice) insert(ep discoveryv1.Endpoint) {
	id := idOf(ep)
	if i, ok := d.index[id]; ok {
		d.endpoints[i] = ep
		return
	}
	d.index[id] = len(d.endpoints)
	d.endpoints = append(d.endpoints, ep)
}

// mirrorResult is what mirror makes of an Endpoints' subsets.
type mirrorResult struct {
	// slices are the desired slices by key; one with no endpoints means
	// that slices of its key are to go.
	slices []*desiredSlice
	// invalid counts addresses that are not IPs; skipped counts every
	// address left out, invalid ones and those over the limit.
	invalid, skipped int
}

// mirror computes the slices that mirror subsets as upstream's reconciler
// does: the subsets are repacked, then each one's addresses, ready before
// not ready, up to limit of them, go to the slice of their address family
// and the subset's ports.
func mirror(subsets []v1.EndpointSubset, limit int) mirrorResult {
	var r mirrorResult
	byKey := map[string]*desiredSlice{}
	group := func(ports []discoveryv1.EndpointPort, t discoveryv1.AddressType) *desiredSlice {
		k := sliceKey(t, ports)
		d, ok := byKey[k]
		if !ok {
			d = &desiredSlice{key: k, addressType: t, ports: ports, endpoints: []discoveryv1.Endpoint{}, index: map[endpointID]int{}}
			byKey[k] = d
			r.slices = append(r.slices, d)
		}
		return d
	}
	for _, subset := range repack(subsets) {
		ports := slicePorts(subset.Ports)
		groups := map[discoveryv1.AddressType]*desiredSlice{
			discoveryv1.AddressTypeIPv4: group(ports, discoveryv1.AddressTypeIPv4),
			discoveryv1.AddressTypeIPv6: group(ports, discoveryv1.AddressTypeIPv6),
		}
		added := 0
		add := func(addrs []v1.EndpointAddress, ready bool) {
			for _, a := range addrs {
				if added >= limit {
					return
				}
				ep, t, ok := addressToEndpoint(a, ready)
				if !ok {
					r.invalid++
					continue
				}
				groups[t].insert(ep)
				added++
			}
		}
		add(subset.Addresses, true)
		add(subset.NotReadyAddresses, false)
		r.skipped += len(subset.Addresses) + len(subset.NotReadyAddresses) - added
	}
	slices.SortFunc(r.slices, func(a, b *desiredSlice) int { return strings.Compare(a.key, b.key) })
	return r
}

// addressToEndpoint converts an Endpoints address to a slice endpoint and
// its address type, or reports that the address is not an IP.
func addressToEndpoint(a v1.EndpointAddress, ready bool) (discoveryv1.Endpoint, discoveryv1.AddressType, bool) {
	ip := netutils.ParseIPSloppy(a.IP)
	if ip == nil {
		return discoveryv1.Endpoint{}, "", false
	}
	t := discoveryv1.AddressTypeIPv4
	if ip.To4() == nil {
		t = discoveryv1.AddressTypeIPv6
	}
	ep := discoveryv1.Endpoint{
		// Restringified, in case the Endpoints spells the IP irregularly.
		Addresses:  []string{ip.String()},
		Conditions: discoveryv1.EndpointConditions{Ready: &ready},
	}
	if a.TargetRef != nil {
		ep.TargetRef = a.TargetRef.DeepCopy()
	}
	if a.NodeName != nil {
		node := *a.NodeName
		ep.NodeName = &node
	}
	if a.Hostname != "" {
		host := a.Hostname
		ep.Hostname = &host
	}
	return ep, t, true
}

// slicePorts converts an Endpoints subset's ports to a slice's.
func slicePorts(ports []v1.EndpointPort) []discoveryv1.EndpointPort {
	out := make([]discoveryv1.EndpointPort, 0, len(ports))
	for _, p := range ports {
		p := *p.DeepCopy()
		out = append(out, discoveryv1.EndpointPort{Name: &p.Name, Port: &p.Port, Protocol: &p.Protocol, AppProtocol: p.AppProtocol})
	}
	return out
}

// sliceKey identifies a slice by address type and set of ports, in any
// order.
func sliceKey(t discoveryv1.AddressType, ports []discoveryv1.EndpointPort) string {
	parts := make([]string, 0, len(ports))
	for _, p := range ports {
		var name, appProtocol string
		var proto v1.Protocol
		var port int32
		if p.Name != nil {
			name = *p.Name
		}
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		if p.Port != nil {
			port = *p.Port
		}
		if p.AppProtocol != nil {
			appProtocol = *p.AppProtocol
		}
		parts = append(parts, portString(name, proto, port, appProtocol))
	}
	slices.Sort(parts)
	return string(t) + "|" + strings.Join(parts, ",")
}

func portString(name string, proto v1.Protocol, port int32, appProtocol string) string {
	return name + "/" + string(proto) + "/" + strconv.Itoa(int(port)) + "/" + appProtocol
}

func endpointPortString(p v1.EndpointPort) string {
	var appProtocol string
	if p.AppProtocol != nil {
		appProtocol = *p.AppProtocol
	}
	return portString(p.Name, p.Protocol, p.Port, appProtocol)
}

// repack canonicalizes subsets as Kubernetes' RepackSubsets does: an
// address (by IP and target uid) is listed once for every port it serves,
// not ready for a port if any subset lists it not ready for that port,
// and the ports served by the same addresses, equally ready, share one
// subset. Addresses of subsets without ports keep a subset without ports.
func repack(subsets []v1.EndpointSubset) []v1.EndpointSubset {
	type addrKey struct {
		ip  string
		uid types.UID
	}
	type portAddrs struct {
		port  v1.EndpointPort
		ready map[addrKey]bool
	}
	addrs := map[addrKey]v1.EndpointAddress{}
	byPort := map[string]*portAddrs{}
	var portOrder []string
	mapAddr := func(port v1.EndpointPort, a v1.EndpointAddress, ready bool) {
		k := addrKey{ip: a.IP}
		if a.TargetRef != nil {
			k.uid = a.TargetRef.UID
		}
		if _, ok := addrs[k]; !ok {
			addrs[k] = a
		}
		pk := endpointPortString(port)
		pa, ok := byPort[pk]
		if !ok {
			pa = &portAddrs{port: port, ready: map[addrKey]bool{}}
			byPort[pk] = pa
			portOrder = append(portOrder, pk)
		}
		if was, ok := pa.ready[k]; !ok || was {
			pa.ready[k] = ready
		}
	}
	// noPorts stands in for the port of a subset without ports.
	noPorts := v1.EndpointPort{Port: -1}
	for _, s := range subsets {
		ports := s.Ports
		if len(ports) == 0 {
			ports = []v1.EndpointPort{noPorts}
		}
		for _, p := range ports {
			for _, a := range s.Addresses {
				mapAddr(p, a, true)
			}
			for _, a := range s.NotReadyAddresses {
				mapAddr(p, a, false)
			}
		}
	}
	bySet := map[string]*v1.EndpointSubset{}
	var out []*v1.EndpointSubset
	for _, pk := range portOrder {
		pa := byPort[pk]
		keys := make([]addrKey, 0, len(pa.ready))
		for k := range pa.ready {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b addrKey) int {
			return cmp.Or(strings.Compare(a.ip, b.ip), strings.Compare(string(a.uid), string(b.uid)))
		})
		var sig strings.Builder
		for _, k := range keys {
			sig.WriteString(k.ip + "/" + string(k.uid) + "/" + strconv.FormatBool(pa.ready[k]) + ",")
		}
		s, ok := bySet[sig.String()]
		if !ok {
			s = &v1.EndpointSubset{}
			for _, k := range keys {
				if pa.ready[k] {
					s.Addresses = append(s.Addresses, addrs[k])
				} else {
					s.NotReadyAddresses = append(s.NotReadyAddresses, addrs[k])
				}
			}
			bySet[sig.String()] = s
			out = append(out, s)
		}
		if pa.port.Port > 0 {
			s.Ports = append(s.Ports, pa.port)
		}
	}
	result := make([]v1.EndpointSubset, 0, len(out))
	for _, s := range out {
		slices.SortFunc(s.Ports, func(a, b v1.EndpointPort) int {
			return strings.Compare(endpointPortString(a), endpointPortString(b))
		})
		result = append(result, *s)
	}
	return result
}
