package proxy

import (
	"fmt"
	"net"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// servicePort is one port of one Service, with the endpoints its
// EndpointSlices list for that port: what the proxy programs.
type servicePort struct {
	Namespace, Name string
	// PortName is the Service port's name ("" for a single unnamed port).
	PortName  string
	Protocol  corev1.Protocol
	ClusterIP string
	Port      int32
	// NodePort is 0 when the Service has none.
	NodePort int32
	// AffinitySeconds is sessionAffinity ClientIP's timeout; 0 means no
	// affinity.
	AffinitySeconds int32
	// InternalLocal and ExternalLocal are internalTrafficPolicy and
	// externalTrafficPolicy Local.
	InternalLocal, ExternalLocal bool
	Endpoints                    []endpoint
}

// endpoint is one address and port of an EndpointSlice with its
// conditions, as kube-proxy reads them.
type endpoint struct {
	IP       string
	Port     int32
	NodeName string
	// Ready, Serving and Terminating are the EndpointSlice conditions
	// (ready defaults to true, serving to ready, terminating to false).
	Ready, Serving, Terminating bool
}

func (e endpoint) String() string { return net.JoinHostPort(e.IP, fmt.Sprint(e.Port)) }

// key names the port as kube-proxy's ServicePortName does:
// namespace/name:portname.
func (sp *servicePort) key() string {
	return sp.Namespace + "/" + sp.Name + ":" + sp.PortName
}

// chainBase is what per-service chain names end with, as kube-proxy's:
// namespace/name/protocol/portname.
func (sp *servicePort) chainBase() string {
	return sp.Namespace + "/" + sp.Name + "/" + strings.ToLower(string(sp.Protocol)) + "/" + sp.PortName
}

// servicePorts turns Services and their EndpointSlices into the ports the
// proxy programs: IPv4 ClusterIP Services (headless and ExternalName ones
// have nothing to program), each port with the endpoints of the slices
// labelled with the Service's name whose port has the same name and
// protocol. Sorted by key so the ruleset is the same for the same input.
func servicePorts(services []*corev1.Service, slices []*discoveryv1.EndpointSlice) []*servicePort {
	bySvc := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range slices {
		name := s.Labels[discoveryv1.LabelServiceName]
		if name == "" || s.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		bySvc[s.Namespace+"/"+name] = append(bySvc[s.Namespace+"/"+name], s)
	}
	var out []*servicePort
	for _, svc := range services {
		ip := net.ParseIP(svc.Spec.ClusterIP)
		if svc.Spec.Type == corev1.ServiceTypeExternalName || ip == nil || ip.To4() == nil {
			continue
		}
		for _, p := range svc.Spec.Ports {
			proto := p.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			sp := &servicePort{
				Namespace: svc.Namespace, Name: svc.Name, PortName: p.Name, Protocol: proto,
				ClusterIP: ip.String(), Port: p.Port,
				InternalLocal: svc.Spec.InternalTrafficPolicy != nil && *svc.Spec.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal,
				ExternalLocal: svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal,
			}
			if svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
				sp.NodePort = p.NodePort
			}
			if svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
				sp.AffinitySeconds = corev1.DefaultClientIPServiceAffinitySeconds
				if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
					sp.AffinitySeconds = *c.ClientIP.TimeoutSeconds
				}
			}
			sp.Endpoints = sliceEndpoints(bySvc[svc.Namespace+"/"+svc.Name], p.Name, proto)
			out = append(out, sp)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].key() != out[j].key() {
			return out[i].key() < out[j].key()
		}
		return out[i].Protocol < out[j].Protocol
	})
	return out
}

// sliceEndpoints lists the endpoints of slices for the port named
// portName, each address and port once.
func sliceEndpoints(slices []*discoveryv1.EndpointSlice, portName string, proto corev1.Protocol) []endpoint {
	seen := map[string]bool{}
	var out []endpoint
	for _, s := range slices {
		var port int32
		for _, p := range s.Ports {
			pp := corev1.ProtocolTCP
			if p.Protocol != nil {
				pp = *p.Protocol
			}
			name := ""
			if p.Name != nil {
				name = *p.Name
			}
			if name == portName && pp == proto && p.Port != nil {
				port = *p.Port
			}
		}
		if port == 0 {
			continue
		}
		for _, e := range s.Endpoints {
			c := e.Conditions
			ready := c.Ready == nil || *c.Ready
			serving := ready
			if c.Serving != nil {
				serving = *c.Serving
			}
			terminating := c.Terminating != nil && *c.Terminating
			node := ""
			if e.NodeName != nil {
				node = *e.NodeName
			}
			for _, a := range e.Addresses {
				ip := net.ParseIP(a)
				if ip == nil || ip.To4() == nil {
					continue
				}
				ep := endpoint{IP: ip.String(), Port: port, NodeName: node, Ready: ready, Serving: serving, Terminating: terminating}
				if seen[ep.String()] {
					continue
				}
				seen[ep.String()] = true
				out = append(out, ep)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// usable picks the endpoints traffic may go to, as kube-proxy's
// CategorizeEndpoints: the ready ones, or when there is none the serving
// ones that are terminating (so connections drain to pods still able to
// answer). With local, only endpoints on nodeName count. It also says
// whether the result is the terminating fallback.
func usable(eps []endpoint, local bool, nodeName string) ([]endpoint, bool) {
	var ready, terminating []endpoint
	for _, e := range eps {
		if local && e.NodeName != nodeName {
			continue
		}
		switch {
		case e.Ready:
			ready = append(ready, e)
		case e.Serving && e.Terminating:
			terminating = append(terminating, e)
		}
	}
	if len(ready) > 0 {
		return ready, false
	}
	return terminating, len(terminating) > 0
}
